"""`trainscope history report -o DIR`: the history's trends as a page of the report's look (reports/html: its
template, plots and summary.md).

One plot per family of series, so that a history of a whole suite (35 series of ci.toml) stays a page: the sizes of one
collective (or the shapes of one kernel) are the lines of one plot, and series that have neither (a training step's
time, a loss) share a plot per metric. x is the history's commits in order (commits(): all plots share it), y each
run's value, the line through the median of each commit's runs, its band the runs' own spread (their samples'
interquartile range, widened to their trials' medians where the trials disagree more: compare's effect.py says why
trials count); a run under contention is a hollow marker (it weighs less in the fit, it is drawn all the same). The
change points are detect.fit's, as `history check` finds them: a dashed line at the first commit of the new level,
labelled with the commit and the change with its 99% interval, the range to bisect shaded when the record had no run
at the commits between. A table of the changes, one of the runs under contention and one of every series follow.

The status line is check's verdict: a regression that starts among the newest `recent` commits is an alert (what
`history check` exits 1 on), older changes are history and stay in the table.
"""
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..common import identity as ids
from ..common.files import staged_directory
from ..common.json_types import Block
from ..common.load import Result
from ..common.policy import Policy
from ..common.sizes import size_label
from ..compare.compare import machine_key
from ..compare.effect import by_trial
from ..html.banner import status_of
from ..html.plots import PlotSink, log_axis, new_figure
from ..html.report import write_page
from ..html.sections import BuiltSection
from . import check as gate
from . import detect
from .series import Point, Series

if TYPE_CHECKING:
    from matplotlib.axes import Axes

LINES = 8       # lines in one plot at most: a family with more is drawn in several plots
TICKS = 30      # commit labels on the x axis at most (the commits of the changes are always labelled)
SHORT = 7       # characters of a commit's id on the axis
REGRESSION_COLOR, IMPROVEMENT_COLOR = "#d93025", "#188038"

_SIZE = re.compile(r" (\d+) B(?= |$)")          # a collective's or link's size in its record name
_SHAPE = re.compile(r" ([^ ()]+) \([^)]*\)")     # a kernel's shape: 'square (m=256 n=256 k=256)'


@dataclass(frozen=True)
class Line:
    label: str
    judged: gate.Judged


@dataclass(frozen=True)
class Family:
    """The series drawn in one plot: one machine, one metric, one record name but for its size or shape."""
    machine: str
    metric: str
    name: str              # the record name without the size ('' where the lines are whole records)
    unit: str
    quality: bool
    lines: tuple[Line, ...]

    @property
    def title(self) -> str:
        what = f"{self.name}: {self.metric}" if self.name else self.metric
        return f"{what} on {self.machine}" if self.machine else what


def family_of(s: Series) -> tuple[str, str]:
    """(the family's name, the series' label in it): the size of a collective or link, a kernel's shape, else the
    whole record name in a family of its metric."""
    if m := _SIZE.search(s.key):
        return s.key[:m.start()] + s.key[m.end():], size_label(int(m.group(1)))
    if s.family == "speed" and (m := _SHAPE.search(s.key)):
        return s.key[:m.start()] + s.key[m.end():], m.group(1)
    return "", s.key


def families(judged: Sequence[gate.Judged]) -> list[Family]:
    grouped: dict[tuple[str, str, str], list[Line]] = defaultdict(list)
    for j in judged:
        name, label = family_of(j.series)
        grouped[(j.series.machine, j.series.metric, name)].append(Line(label, j))
    out = []
    for (machine, metric, name), lines in grouped.items():  # in the series' order: machine, record, metric
        s = lines[0].judged.series
        parts = [lines[i:i + LINES] for i in range(0, len(lines), LINES)]
        for k, part in enumerate(parts):
            shown = name + (f" ({k + 1}/{len(parts)})" if len(parts) > 1 else "")
            out.append(Family(machine, metric, shown, s.unit, s.family == "quality", tuple(part)))
    return out


def contended(p: Point, policy: Policy) -> bool:
    """Whether the run counts as measured under contention (compare's limit: other processes above 25% of the CPUs)."""
    return p.contention is not None and p.contention > policy.max_others_busy


def run_band(p: Point) -> tuple[float, float]:
    """The run's own spread: its samples' interquartile range, widened to its trials' medians; the value alone
    for a figure without samples (a loss)."""
    if len(p.samples) < 3:
        return p.value, p.value
    x = np.asarray(p.samples, dtype=float)
    lo, hi = (float(v) for v in np.percentile(x, [25, 75]))
    trial_medians = np.median(by_trial(x, p.trials), axis=1)
    return min(lo, float(trial_medians.min()), p.value), max(hi, float(trial_medians.max()), p.value)


def _commit_axis(ax: "Axes", commits: Sequence[str], marked: set[int]) -> None:
    """Short commit ids, thinned to TICKS, the changes' commits always among them."""
    n = len(commits)
    step = max(1, math.ceil(n / TICKS))
    ticks = sorted(set(range(0, n, step)) | (marked & set(range(n))))
    ax.set_xticks(ticks)
    ax.set_xticklabels([commits[i][:SHORT] for i in ticks], rotation=60, ha="right", fontsize=7, family="monospace")
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xlabel("commit (in the order the history got them)")


def _change_label(commit: str, changes: Sequence[detect.Change]) -> str:
    if len(changes) == 1:
        return f"{commit[:SHORT]}: {changes[0].percent}"
    ratios = sorted(c.ratio - 1 for c in changes)
    return f"{commit[:SHORT]}: {len(changes)} changes, {ratios[0]:+.1%} to {ratios[-1]:+.1%}"


def plot_family(f: Family, commits: Sequence[str], policy: Policy, plots: PlotSink, index: int) -> Block:
    from matplotlib.lines import Line2D  # matplotlib is plots.py's to import first (its working-folder guard)
    fig, (ax,) = new_figure(width=11.0, height=3.6)
    changes: dict[int, list[detect.Change]] = defaultdict(list)
    for i, line in enumerate(f.lines):
        color = f"C{i % 10}"
        by_commit: dict[int, list[Point]] = defaultdict(list)
        for p in line.judged.series.points:
            by_commit[p.order].append(p)
        xs = sorted(by_commit)
        bands = [[run_band(p) for p in by_commit[x]] for x in xs]
        ax.fill_between(xs, [min(b[0] for b in bs) for bs in bands], [max(b[1] for b in bs) for bs in bands],
                        color=color, alpha=0.18, linewidth=0)
        ax.plot(xs, [float(np.median([p.value for p in by_commit[x]])) for x in xs], color=color, linewidth=1.1,
                label=line.label.replace("$", r"\$"))  # matplotlib would read $...$ as math
        points = line.judged.series.points
        quiet = [p for p in points if not contended(p, policy)]
        loud = [p for p in points if contended(p, policy)]
        ax.plot([p.order for p in quiet], [p.value for p in quiet], "o", color=color, markersize=3.5)
        if loud:
            ax.plot([p.order for p in loud], [p.value for p in loud], "o", markerfacecolor="white", markeredgecolor=color,
                    markeredgewidth=1.2, markersize=6)
        for c in line.judged.fit.changes:
            changes[c.order].append(c)
    if not f.quality:
        log_axis(ax)
    for k, (order, cs) in enumerate(sorted(changes.items())):
        worse = any(c.direction == detect.Direction.REGRESSION for c in cs)
        color = REGRESSION_COLOR if worse else IMPROVEMENT_COLOR
        ax.axvline(order, color=color, linestyle="--", linewidth=1.1)
        before = min(c.before_order for c in cs)
        if order - before > 1:  # commits without a run between: the range to bisect
            ax.axvspan(before, order, color=color, alpha=0.08, linewidth=0)
        ax.text(order, 1.01 + 0.075 * (k % 3), _change_label(cs[0].commit, cs), transform=ax.get_xaxis_transform(),
                color=color, fontsize=7.5, ha="center", va="bottom")
    _commit_axis(ax, commits, set(changes))
    unit = f" ({f.unit})" if f.unit else ""
    ax.set_ylabel(f"{f.metric}{unit}")
    ax.set_title(f.title.replace("$", r"\$"), pad=12 + 10 * min(len(changes), 3), fontsize=9.5, loc="left")
    handles, _ = ax.get_legend_handles_labels()
    drawn = {c.direction for cs in changes.values() for c in cs}
    if any(contended(p, policy) for line in f.lines for p in line.judged.series.points):
        handles.append(Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="grey",
                              label="run under contention"))
    handles += [Line2D([], [], color=color, linestyle="--", label=f"change point ({d.value})")
                for d, color in ((detect.Direction.REGRESSION, REGRESSION_COLOR),
                                 (detect.Direction.IMPROVEMENT, IMPROVEMENT_COLOR)) if d in drawn]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    names = ", ".join(line.label for line in f.lines)
    alt = (f"{f.metric} of {f.name or 'these records'} across {len(commits)} commit(s), a line per "
           f"{'size' if f.name and _SIZE.search(f.lines[0].judged.series.key) else 'record'}: {names}"
           + (f"; {sum(map(len, changes.values()))} change point(s)" if changes else ""))
    return plots.save(fig, f"trend_{index:02d}_{f.metric}", f.title, alt)


def _alerts(plotted: Sequence[Family], ch: gate.Check) -> list[Block]:
    """The regressions `history check` fails on, one alert per plot and first commit (a change of one collective
    shows at all its sizes: one line, not seven)."""
    out: list[Block] = []
    for f in plotted:
        at: dict[tuple[str, str], list[tuple[Line, detect.Change]]] = defaultdict(list)
        for line in f.lines:
            for c in line.judged.regressions:
                at[(c.commit, c.before)].append((line, c))
        for (first, before), found in at.items():
            what = ", ".join(f"{line.label} {c.percent}" if f.name else f"{line.label}: {c.percent}" for line, c in found)
            out.append({"kind": "alert", "text": f"REGRESSION from commit {first[:10]} (after {before[:10]}): {f.title}: "
                        f"{what}"})
    return out


def _changes_table(judged: Sequence[gate.Judged], recent: int) -> Block:
    rows = []
    for j in judged:
        newest = {id(c) for c in j.recent}
        for c in j.fit.changes:
            rows.append((c.order, [j.series.key, j.series.machine, j.series.metric, c.direction.value, c.commit[:10],
                                   c.before[:10], c.bisect if c.skipped else "-", f"{c.ratio:.3f}",
                                   f"{c.low - 1:+.1%} to {c.high - 1:+.1%}", f"{c.runs_before} / {c.runs_after}",
                                   c.contended, "yes" if id(c) in newest else "no"]))
    rows.sort(key=lambda r: -r[0])  # newest first: what a reader of a CI run came for
    return {"kind": "table",
            "caption": "Changes of level (detect.fit; newest first): the first commit at the new level, the last commit "
                       "with a run before it, the commits to bisect where the record had no run between, the new level "
                       "over the old with its 99% interval, the runs each side (of them under contention), and whether it "
                       f"starts among the newest {recent} commits (a regression there fails `history check`)",
            "columns": ["record", "machine", "metric", "change", "first commit", "last before", "bisect", "ratio",
                        "99% interval", "runs before / after", "under contention", f"newest {recent}"],
            "rows": [r for _, r in rows]}


def _contended_table(judged: Sequence[gate.Judged], policy: Policy) -> Block | None:
    runs: dict[tuple[str, str, str], tuple[float, int]] = {}
    for j in judged:
        for p in j.series.points:
            if contended(p, policy):
                key = (p.commit, p.time, j.series.machine)
                share, n = runs.get(key, (p.contention or 0.0, 0))
                runs[key] = (share, n + 1)
    if not runs:
        return None
    return {"kind": "table",
            "caption": f"Runs under contention (hollow markers): other processes used more than "
                       f"{policy.max_others_busy:.0%} of the CPUs while they ran; the fit weighs them less, they veto nothing",
            "columns": ["commit", "run started", "machine", "other processes' share of the CPUs", "series"],
            "rows": [[c[:10], t[:19].replace("T", " "), m, f"{share:.0%}", n]
                     for (c, t, m), (share, n) in sorted(runs.items(), key=lambda kv: kv[0][1])]}


def _series_table(judged: Sequence[gate.Judged]) -> Block:
    rows = []
    for j in judged:
        s, points = j.series, j.series.points
        rows.append([s.key, s.machine, s.metric, len(points), len({p.commit for p in points}),
                     f"{points[-1].value:.4g}" if points else "-", f"{j.fit.sigma:.1%}", len(j.fit.changes)])
    return {"kind": "table",
            "caption": "Every series: its runs and commits, the newest run's value, the run-to-run noise the fit judged "
                       "it against (sigma, about a relative spread), and its changes",
            "columns": ["record", "machine", "metric", "runs", "commits", "newest", "noise", "changes"],
            "rows": rows}


def build_section(found: Sequence[Series], commits: Sequence[str], plots: PlotSink, source: str,
                  recent: int = gate.RECENT, policy: Policy | None = None) -> tuple[BuiltSection, gate.Check]:
    """The trend section of `found` (series of one history whose commits in order are `commits`), and the gate's
    verdict on them that it shows."""
    policy = policy or Policy()
    ch = gate.check(found, recent)
    judged = ch.judged
    machines = sorted({s.machine for s in found})
    quality = sum(s.family == "quality" for s in found)
    n_changes = sum(len(j.fit.changes) for j in judged)
    plotted = families(judged)
    blocks: list[Block] = _alerts(plotted, ch)
    blocks.append({"kind": "text", "text":
                   f"{len(found)} series ({len(found) - quality} of speed, {quality} of quality) on {len(machines)} "
                   f"machine(s) ({', '.join(machines)}), {len(commits)} commit(s) of {source}; {n_changes} change(s) "
                   f"of level found, {len(ch.regressions)} regression(s) among the newest {recent} commits. Each plot: "
                   "a line per series through the median of each commit's runs, its band the runs' own spread "
                   "(samples' interquartile range and trials' medians), a marker per run (hollow: under contention), "
                   "a dashed line at each change point's first commit with the change and its 99% interval (shaded: "
                   "commits without a run, the range to bisect)."})
    if n_changes:
        blocks.append(_changes_table(judged, recent))
    else:
        blocks.append({"kind": "text", "text": "No change of level in any series."})
    # The families with changes first, the newest change first: what the page is read for is at its top.
    plotted.sort(key=lambda f: -max((c.order for ln in f.lines for c in ln.judged.fit.changes), default=-1))
    blocks += [plot_family(f, commits, policy, plots, i) for i, f in enumerate(plotted)]
    table = _contended_table(judged, policy)
    if table:
        blocks.append(table)
    blocks.append(_series_table(judged))
    return {"key": "trend", "title": "Trend", "blocks": blocks}, ch


def section_for_results(results: Sequence[Result], db: str, plots: PlotSink, recent: int = gate.RECENT) -> BuiltSection:
    """`report RESULT... --history DB`'s trend section: the series of the history at `db` of the results' records, on
    their machines (compare's machine key, as `history add` files a run unless told another)."""
    from .store import open_store  # SQLAlchemy: only where a history is read
    wanted = {(machine_key(r), ids.describe(i)) for r in results for rec in r.records
              if (i := ids.identity(rec)) is not None}
    with open_store(db, create=False) as store:
        found = [s for s in store.series() if (s.machine, s.key) in wanted]
        commits = store.commits()
        name = store.name
    if not found:
        machines = ", ".join(sorted({m for m, _ in wanted})) or "none"
        text = (f"{name} has no series of these results' records on their machine(s) ({machines}): nothing to draw "
                "(`history show` lists what it holds).")
        return {"key": "trend", "title": "Trend", "blocks": [{"kind": "text", "text": text}]}
    return build_section(found, commits, plots, name, recent)[0]


@dataclass(frozen=True)
class Written:
    index: Path
    plots: int
    check: gate.Check


def write_history_report(found: Sequence[Series], commits: Sequence[str], outdir: str | Path, source: str,
                         title: str = "trainscope history", recent: int = gate.RECENT) -> Written:
    """index.html, a PNG per plot and summary.md into `outdir` (staged: a failure part-way leaves it as it was)."""
    with staged_directory(outdir) as stage:
        sink = PlotSink(stage)
        section, ch = build_section(found, commits, sink, source, recent)
        status = status_of([], [section], (f"regression among the newest {recent} commits",))
        meta = f"trainscope history of {len(commits)} commit(s) from {source}"
        write_page(stage, title, [section], status, meta=meta)
    return Written(Path(outdir) / "index.html", len(sink.files), ch)
