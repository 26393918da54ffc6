"""`trainscope history check`: exit 1 when the newest commits start a regression.

Every series of the history (a record's metric on one machine; reports/history/series.py) is fitted by detect.py.
A regression whose first commit is among the newest RECENT commits of the history fails the check: that is a change
the commits under test brought. Older ones are history (`history show` and the report draw them): a change is
named in hindsight more surely than at once, so a gate that looked only at the newest commit would miss the
regressions that one run cannot show (small steps on noisy records are named some commits after they came: the
calibration, docs/history-calibration.md, measures how many, in its last column), and a gate that looked at every
commit ever would stay red after a regression the team accepted. RECENT = 10 holds the catches of the calibration's
5% steps at a cv of 15% (the last of them ten commits after the step) while an accepted regression's failure ends
by itself ten commits on; the steps named later than that are the price, shown as the ones check did not catch.
`--recent` changes it.

Exit codes: 0 no regression starts among the newest commits, 1 one does, 2 bad input (no history, no series).
Console: one line per change of the newest commits (record, metric, first commit, size with its interval, the range
to bisect when the record has no run at the commits between), then a count. JUnit: one test case per series (a
failure per regression). Markdown: a table for a pull-request comment.
"""
import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..common.errors import InputError
from ..common.files import check_output_file, write_atomically
from ..common.junit import Case, Outcome, junit_text
from ..common.markdown import markdown_text
from ..common.terminal import printable
from . import detect
from .series import Series

RECENT = 10


@dataclass(frozen=True)
class Judged:
    series: Series
    fit: detect.Fit
    recent: tuple[detect.Change, ...]   # the changes that start among the newest commits, regressions or not

    @property
    def regressions(self) -> list[detect.Change]:
        return [c for c in self.recent if c.direction == detect.Direction.REGRESSION]

    @property
    def name(self) -> str:
        return f"{self.series.key} [{self.series.metric}]" + (f" on {self.series.machine}" if self.series.machine else "")


@dataclass(frozen=True)
class Check:
    judged: tuple[Judged, ...]
    head: int        # the newest commit's order
    head_commit: str
    recent: int

    @property
    def regressions(self) -> list[tuple[Judged, detect.Change]]:
        return [(j, c) for j in self.judged for c in j.regressions]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0


def check(found: Sequence[Series], recent: int = RECENT) -> Check:
    """Judge every series against the newest commit of them all (their orders are the history's)."""
    points = [p for s in found for p in s.points]
    if not points:
        raise InputError("the history has no runs to check")
    newest = max(points, key=lambda p: p.order)
    judged = []
    for s in found:
        f = detect.fit(s)
        judged.append(Judged(s, f, tuple(c for c in f.changes if c.order > newest.order - recent)))
    return Check(tuple(judged), newest.order, newest.commit, recent)


def change_line(j: Judged, c: detect.Change) -> str:
    """One change as the console says it (the trend page's alerts, report.py, say it alike)."""
    where = (f"bisect {c.before[:10]}..{c.commit[:10]} ({c.skipped} commit(s) without a run between)" if c.skipped
             else f"after {c.before[:10]}")
    contended = f"; {c.contended} run(s) under contention weighed less" if c.contended else ""
    return (f"{c.direction.value.upper()}: {printable(j.name, one_line=True)}: from commit {c.commit[:10]} ({where}): "
            f"{c.percent} ({c.runs_before} run(s) before, {c.runs_after} after{contended})")


def format_console(ch: Check) -> str:
    lines = [change_line(j, c) for j in ch.judged for c in j.recent]
    n = len(ch.regressions)
    lines.append(f"history check: {len(ch.judged)} series up to commit {ch.head_commit[:10]}; "
                 f"{n} regression(s) among the newest {ch.recent} commits" + ("" if n else ": pass"))
    return "\n".join(lines) + "\n"


def format_junit(ch: Check) -> str:
    cases = []
    for j in ch.judged:
        regs = j.regressions
        text = "\n".join(change_line(j, c) for c in j.recent)
        if regs:
            cases.append(Case("history", j.name, Outcome.FAILURE, f"regression from commit {regs[0].commit[:10]}: "
                              f"{regs[0].percent}", text, "regression"))
        else:
            cases.append(Case("history", j.name, Outcome.PASSED, "", text or f"no change among the newest {ch.recent} "
                              f"commits (noise {j.fit.sigma:.1%} run to run, {j.fit.commits} commit(s))"))
    return junit_text("trainscope history check", cases)


def format_markdown(ch: Check) -> str:
    rows = [(j, c) for j in ch.judged for c in j.recent]
    verdict = (f"**{len(ch.regressions)} regression(s)**" if ch.regressions else "no regression")
    lines = [f"### trainscope history check: {verdict} among the newest {ch.recent} commits "
             f"(up to `{markdown_text(ch.head_commit[:10])}`, {len(ch.judged)} series)", ""]
    if rows:
        lines += ["| change | record | metric | first commit | bisect | size (99% interval) | runs before / after |",
                  "|---|---|---|---|---|---:|---:|"]
        lines += [f"| {c.direction.value} | {markdown_text(j.series.key)} | {markdown_text(j.series.metric)} | "
                  f"`{markdown_text(c.commit[:10])}` | "
                  + (f"`{markdown_text(c.before[:10])}..{markdown_text(c.commit[:10])}`" if c.skipped else "-")
                  + f" | {markdown_text(c.percent)} | {c.runs_before} / {c.runs_after} |" for j, c in rows]
    return "\n".join(lines) + "\n"


def add_check_parser(history_sub: Any, db_help: str = "the history's database (as for history add)") -> None:
    """`history check` on the history command's subparsers (commands.add_parsers returns them; commands.DB_HELP
    is the --db help the other history commands give)."""
    c = history_sub.add_parser("check", help="exit 1 when the newest commits start a regression (a change point of some "
                               "record's series), with JUnit and a markdown summary")
    c.add_argument("--db", help=db_help)
    c.add_argument("--machine", help="only this machine key")
    c.add_argument("--branch", help="only the runs added with this branch (its commits' order)")
    c.add_argument("--metric", help="only this metric")
    c.add_argument("--match", help="only the records whose name contains this text")
    c.add_argument("--recent", type=int, default=RECENT, help=f"how many of the newest commits a regression must start "
                   f"in to fail the check (default {RECENT}; see docs/history-calibration.md)")
    c.add_argument("--junit", help="write JUnit XML: one test case per series, a failure per regression")
    c.add_argument("--markdown", help="write a markdown summary (a pull-request comment, a CI job summary)")
    c.set_defaults(history_run=run)


def run(args: argparse.Namespace) -> int:
    from .series import series
    for option, path in (("--junit", args.junit), ("--markdown", args.markdown)):
        if path:
            check_output_file(path, option)
    if args.recent < 1:
        raise InputError(f"--recent {args.recent}: a count of commits, 1 or more")
    found = series(args.db, metric=args.metric, match=args.match, machine=args.machine, branch=args.branch)
    if not found:
        filters = (("--metric", args.metric), ("--match", args.match), ("--machine", args.machine), ("--branch", args.branch))
        given = [f"{o} {v}" for o, v in filters if v is not None]
        raise InputError("no series in the history to check" + (f" matches {', '.join(given)}" if given else ""))
    ch = check(found, args.recent)
    sys.stdout.write(format_console(ch))
    if args.junit:
        write_atomically(args.junit, format_junit(ch))
    if args.markdown:
        write_atomically(args.markdown, format_markdown(ch))
    return ch.exit_code
