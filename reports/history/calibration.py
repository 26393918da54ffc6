"""How often `history check` is right: series of 100 commits built from real recorded samples, with a known step or
drift injected, judged by our detector (detect.py) and, on the same series, by a z-score at 5 (Conbench's default)
and by asv's step detection (rivals.py).

A series is one real record of the committed quiet ci run (one of its records with a robust cv of at most 2%, in
turn), one run per commit: each run draws the record's trials with replacement and then the iterations within each
drawn trial (compare's calibration does the same, reports/compare/calibration.py), widened to the noise level's cv,
multiplied by the injected change. Changes: none, a step of 2%, 5%, 10% or 2x at commit STEP_AT, or a drift of 1% per
commit over the 10 commits from STEP_AT, or two steps of 10% at two commits in a row (stairs). Noise levels: `low`,
the samples as recorded; `medium` and `high`, the same widened to a robust cv of 5% and 15%; and `runs`: each commit
draws one of the record's five committed real runs before resampling it, so that the series carries the real offsets
between runs of one build (which resampling one run cannot show; reported beside the goals, which the issue sets on
the three levels). Each cell draws from its own random stream (seeded by the seed, the noise level and the change).

Two ways of judging, for each detector that has them:
- in hindsight: the whole series fitted at once (what `history show`/`report` draw): is the change named at its
  first commit, or within one commit, and is anything else named;
- as CI runs it: after every commit, `history check` on the series so far (exit 1 when a regression starts among the
  newest check.RECENT commits): does it fail on a commit where nothing changed, and how many commits after the
  change does it first fail. The z-score is a per-commit test, so it has only this; asv fits in hindsight only.

Used by scripts/calibrate-history.sh (docs/history-calibration.md) and by the tests.
"""
import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from ..common.errors import InputError
from ..common.files import runs_of_the_same_set
from ..common.identity import identity
from ..common.json_types import Record, ResultDoc
from ..common.load import load_result
from ..compare.calibration import noise_sigma, quiet_records, resample_run
from . import detect, rivals
from .series import Point, Series

COMMITS = 100
STEP_AT = 60
DRIFT = -1.0           # the effect that stands for "1% per commit over DRIFT_COMMITS commits"
DRIFT_PER_COMMIT = 0.01
DRIFT_COMMITS = 10
STAIRS = -2.0          # the effect that stands for "STAIR_STEP at STEP_AT, and another at the commit after"
STAIR_STEP = 0.10
EFFECTS = (0.0, 0.02, 0.05, 0.10, 1.0, DRIFT, STAIRS)
NOISE_LEVELS: dict[str, float | None] = {"low": None, "medium": 0.05, "high": 0.15}
RUNS_LEVEL = "runs"    # the real runs' offsets (module docstring)


def scale_at(effect: float, commit: int) -> float:
    """The injected change's factor at `commit`."""
    if effect == DRIFT:
        return (1 + DRIFT_PER_COMMIT) ** min(max(commit - STEP_AT + 1, 0), DRIFT_COMMITS)
    if effect == STAIRS:
        return (1 + STAIR_STEP) ** min(max(commit - STEP_AT + 1, 0), 2)
    return 1 + effect if commit >= STEP_AT else 1.0


def effect_name(effect: float) -> str:
    if effect == DRIFT:
        return f"drift {DRIFT_PER_COMMIT:.0%}/commit x{DRIFT_COMMITS}"
    if effect == STAIRS:
        return f"{STAIR_STEP:.0%} then {STAIR_STEP:.0%}"
    return "none" if effect == 0 else f"{effect:.0%}" if effect < 1 else f"{effect + 1:g}x"


@dataclass
class Source:
    """A real record to build series from: its runs (samples, trials), and the noise that widens them."""
    name: str
    runs: list[tuple[list[float], int]]
    sigma: float


def make_series(source: Source, effect: float, rng: np.random.Generator) -> Series:
    points = []
    for c in range(COMMITS):
        samples, trials = source.runs[int(rng.integers(0, len(source.runs)))] if len(source.runs) > 1 else source.runs[0]
        x = resample_run(samples, trials, rng, scale_at(effect, c), source.sigma)
        points.append(Point(commit=f"c{c:03d}", order=c, time="", samples=tuple(x), value=float(np.median(x)),
                            contention=0.0, lower_is_better=True, trials=trials))
    return Series(source.name, "time_us", tuple(points))


@dataclass
class Judged:
    """What one detector made of the series of one cell."""
    series: int = 0
    exact: int = 0         # in hindsight: the change named at its first commit (drift: within its commits)
    within_one: int = 0    # ... within one commit of it
    spurious: int = 0      # in hindsight: series with a change named elsewhere
    false_alerts: int = 0  # as CI runs it: commits before the change (all, for none) on which check failed
    quiet_commits: int = 0  # ... out of these
    caught: int = 0        # as CI runs it: series where check failed on the change's commits or after
    delays: list[int] = field(default_factory=list)  # commits from the change's first to check's first failure


class Detector(str, Enum):
    """The detectors judged side by side."""
    OURS = "trainscope"
    ZSCORE = "z-score 5"  # Conbench's default threshold (rivals.py)
    ASV = "asv"

    @property
    def has_hindsight(self) -> bool:
        """Whether it fits a whole series (a z-score judges each commit once, as it comes)."""
        return self != Detector.ZSCORE

    @property
    def per_commit(self) -> bool:
        """Whether it has a commit-by-commit mode, as CI runs it (asv refits the whole series)."""
        return self != Detector.ASV


@dataclass
class Cell:
    noise: str
    effect: float
    judged: dict[Detector, Judged]


def _near(commit: int, effect: float, slack: int) -> bool:
    last = STEP_AT + (DRIFT_COMMITS - 1 if effect == DRIFT else 1 if effect == STAIRS else 0)
    return STEP_AT - slack <= commit <= last + slack


def _hindsight(j: Judged, named: Sequence[int], effect: float) -> None:
    if effect == 0:
        j.spurious += bool(named)
        return
    # Stairs are named exactly when both steps are, each at its commit; a drift, at any of its commits.
    j.exact += {STEP_AT, STEP_AT + 1} <= set(named) if effect == STAIRS else any(_near(c, effect, 0) for c in named)
    j.within_one += any(_near(c, effect, 1) for c in named)
    j.spurious += any(not _near(c, effect, 1) for c in named)


def _ours(j: Judged, s: Series, effect: float, recent: int, online: bool, penalty: float) -> None:
    prep = detect.prepare(s.points)
    assert prep is not None
    _hindsight(j, [c.order for c in detect.fit_prepared(prep, COMMITS, penalty).changes
                   if c.direction == detect.Direction.REGRESSION or effect == 0], effect)
    if effect == 0 and online:  # every commit is one check would have run on
        j.false_alerts += sum(bool(detect.alerts(detect.fit_prepared(prep, k + 1, penalty), k, recent))
                              for k in range(COMMITS))
        j.quiet_commits += COMMITS
    if effect != 0:
        for k in range(STEP_AT, COMMITS):
            if detect.alerts(detect.fit_prepared(prep, k + 1, penalty), k, recent):
                j.caught += 1
                j.delays.append(k - STEP_AT)
                break


def _zscore(j: Judged, s: Series, effect: float) -> None:
    alerts = rivals.zscore_alerts(np.array([p.value for p in s.points]))
    if effect == 0:
        j.false_alerts += len(alerts)
        j.quiet_commits += COMMITS
        j.spurious += bool(alerts)
        return
    after = [a for a in alerts if a >= STEP_AT]
    j.false_alerts += sum(a < STEP_AT for a in alerts)
    j.quiet_commits += STEP_AT
    j.exact += {STEP_AT, STEP_AT + 1} <= set(after) if effect == STAIRS else bool(after) and after[0] == STEP_AT
    j.within_one += bool(after) and after[0] <= STEP_AT + 1
    if after:
        j.caught += 1
        j.delays.append(after[0] - STEP_AT)


def _asv(j: Judged, s: Series, effect: float) -> None:
    values = np.array([p.value for p in s.points])
    errors = np.array([detect.CONFIDENCE_Z * detect.run_se(p) * p.value for p in s.points])
    _hindsight(j, rivals.asv_regressions(values, errors), effect)


def run(doc: ResultDoc, siblings: Sequence[ResultDoc] = (), noise_levels: dict[str, float | None] | None = None,
        effects: Sequence[float] = EFFECTS, series: int = 50, seed: int = 1, online: bool = True,
        detectors: Sequence[Detector] = tuple(Detector), recent: int | None = None,
        penalty: float = detect.PENALTY) -> list[Cell]:
    """One Cell per (noise level, change). `siblings`: the other real runs of the same build, for the `runs` level
    (left out when there are none)."""
    from .check import RECENT
    recent = recent or RECENT
    records = quiet_records(doc)
    if not records:
        raise ValueError("no record with a robust cv of at most 2% to calibrate on")
    levels: dict[str, float | None] = dict(NOISE_LEVELS if noise_levels is None else noise_levels)
    others = [{identity(r): r for r in d["records"] if r.get("samples_us")} for d in siblings]
    cells = []
    for noise in [*levels, *([RUNS_LEVEL] if siblings else [])]:
        sources = [_source(r, levels.get(noise), others if noise == RUNS_LEVEL else []) for r in records]
        for effect in effects:
            # Each cell draws from its own stream, so that a cell added or left out changes no other cell's series
            # (with one stream for all, adding the stairs moved a false alert of the old fit into the `high` cell).
            rng = np.random.default_rng([seed, _index(list(NOISE_LEVELS), noise), _index(list(EFFECTS), effect)])
            judged = {d: Judged() for d in detectors}
            for i in range(series):
                s = make_series(sources[i % len(sources)], effect, rng)
                for d, j in judged.items():
                    j.series += 1
                    if d == Detector.OURS:
                        _ours(j, s, effect, recent, online, penalty)
                    elif d == Detector.ZSCORE:
                        _zscore(j, s, effect)
                    else:
                        _asv(j, s, effect)
            cells.append(Cell(noise, effect, judged))
    return cells


def _index(known: list[Any], x: Any) -> int:
    """x's place among the known, or one past them (a level or change the caller made up)."""
    return known.index(x) if x in known else len(known)


def _source(record: Record, target: float | None, others: Sequence[Mapping[Any, Record]]) -> Source:
    runs = [(record["samples_us"], int(record.get("trials", 1)))]
    runs += [(o[identity(record)]["samples_us"], int(o[identity(record)].get("trials", 1)))
             for o in others if identity(record) in o]
    sigma = 0.0 if target is None else noise_sigma(record["samples_us"], target)
    return Source(str(identity(record)), runs, sigma)


def _rate(n: int, of: int) -> float:
    return n / of if of else 0.0


def goals(cells: list[Cell], min_quiet: int = 5000) -> list[tuple[str, bool]]:
    """The issue's goals for our detector, on the three noise levels (not `runs`): no false alert in at least
    `min_quiet` no-change commits, every 2x named at its commit (in hindsight, and by check at once), >= 95% of 5%
    steps at cv <= 2% within one commit, every drift found."""
    ours = [(c, c.judged[Detector.OURS]) for c in cells if c.noise != RUNS_LEVEL and Detector.OURS in c.judged]
    none = [j for c, j in ours if c.effect == 0]
    quiet = sum(j.quiet_commits for j in none)
    false = sum(j.false_alerts for j in none)
    named = sum(j.spurious for j in none)
    two = [(c, j) for c, j in ours if c.effect == 1.0]
    five = [j for c, j in ours if c.effect == 0.05 and c.noise == "low"]
    drift = [(c, j) for c, j in ours if c.effect == DRIFT]
    five_rate = min((_rate(j.within_one, j.series) for j in five), default=0.0)
    return [
        (f"no false alert in {quiet:,} no-change commits (check after every commit: {false} failures; in hindsight "
         f"{named} of {sum(j.series for j in none)} series with a change named)",
         quiet >= min_quiet and false == 0 and named == 0),
        ("every 2x found at the exact commit (" + ", ".join(
            f"{c.noise} {_rate(j.exact, j.series):.0%} in hindsight, check at once {_rate(j.delays.count(0), j.series):.0%}"
            for c, j in two) + ")",
         bool(two) and all(j.exact == j.series and j.delays.count(0) == j.series for _, j in two)),
        (f">= 95% of 5% steps at cv <= 2% found within one commit (got {five_rate:.0%})", bool(five) and five_rate >= 0.95),
        ("drifts of 1% per commit over 10 commits found (" + ", ".join(
            f"{c.noise} {_rate(j.exact, j.series):.0%}" for c, j in drift) + ")",
         bool(drift) and all(j.exact == j.series for _, j in drift)),
    ]


def _delay(j: Judged) -> str:
    if not j.delays:
        return "-"
    d = sorted(j.delays)
    return f"{d[len(d) // 2]} / {d[-1]}"


def table(cells: list[Cell]) -> str:
    """A markdown table: per noise level, change and detector, how the series were judged."""
    lines = ["| noise | change | detector | named at the commit | within one | something else named | "
             "check failed on a quiet commit | check caught it | commits until caught (median / max) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for c in cells:
        for d, j in c.judged.items():
            hind = d.has_hindsight or c.effect == 0
            online = d.per_commit
            lines.append(" | ".join([
                f"| {c.noise}", effect_name(c.effect), d.value,
                "-" if c.effect == 0 else f"{_rate(j.exact, j.series):.0%}",
                "-" if c.effect == 0 else f"{_rate(j.within_one, j.series):.0%}",
                f"{_rate(j.spurious, j.series):.0%}" if hind else "-",
                f"{j.false_alerts} of {j.quiet_commits:,}" if online and j.quiet_commits else "-",
                "-" if c.effect == 0 or not online else f"{_rate(j.caught, j.series):.0%}",
                "-" if c.effect == 0 or not online else _delay(j)]) + " |")
    return "\n".join(lines)


def summary(cells: list[Cell]) -> str:
    """A markdown table: the goals' figures per detector, side by side, on the three noise levels."""
    def cells_of(effect: float, noise: str | None = None) -> list[Cell]:
        return [c for c in cells if c.effect == effect and c.noise != RUNS_LEVEL and noise in (None, c.noise)]

    def share(effect: float, what: str, noise: str | None = None) -> str:
        js = [c.judged[d] for c in cells_of(effect, noise)]
        n = sum(j.series for j in js)
        return f"{_rate(sum(getattr(j, what) for j in js), n):.0%}" if n else "-"

    lines = ["| detector | false alerts, commit by commit | no-change series with a change named in hindsight | "
             "2x at the exact commit | 5% at cv <= 2% within one commit | drifts found | "
             f"{effect_name(STAIRS)}: both at their commits |", "|---|---:|---:|---:|---:|---:|---:|"]
    detectors = list(dict.fromkeys(d for c in cells for d in c.judged))
    for d in detectors:
        none = [c.judged[d] for c in cells_of(0.0)]
        online = d.per_commit
        lines.append(" | ".join([
            f"| {d.value}", f"{sum(j.false_alerts for j in none)} of {sum(j.quiet_commits for j in none):,}" if online else "-",
            f"{sum(j.spurious for j in none)} of {sum(j.series for j in none)}" if d.has_hindsight else "-",
            share(1.0, "exact"), share(0.05, "within_one", "low"), share(DRIFT, "exact" if d.has_hindsight else "caught"),
            share(STAIRS, "exact")])
            + " |")
    return "\n".join(lines)


def document(cells: list[Cell], source: str, doc: ResultDoc, series: int, siblings: int,
             penalty: float = detect.PENALTY) -> str:
    run_ = doc["run"]
    host = run_["hosts"][0]
    records = quiet_records(doc)
    from .check import RECENT
    lines = ["# history check, calibrated", "",
             "How often `trainscope history check` names a change where it happened, and fails a CI job on nothing, on "
             "series of commits built from real recorded samples with a known change injected, beside what a z-score "
             "at 5 (Conbench's default) and asv's step detection make of the same series (reports/history/"
             "calibration.py; regenerate with `scripts/calibrate-history.sh --output docs/history-calibration.md`).", "",
             f"- samples: `{source}` — `{' '.join(run_['command_line'])}` on {host['hostname']} "
             f"({host['cpu']['model']}, {host['cpu'].get('threads')} hardware threads), {run_['started_at'][:10]}; "
             f"its {len(records)} records with a robust cv of at most 2%, in turn",
             f"- {series} series per cell, {COMMITS} commits each, one run per commit: the record's trials drawn with "
             "replacement, then the iterations within each drawn trial, multiplied by the change",
             f"- changes: none; a step of 2%, 5%, 10% or 2x from commit {STEP_AT}; a drift of "
             f"{DRIFT_PER_COMMIT:.0%} per commit over the {DRIFT_COMMITS} commits from {STEP_AT} (in all +"
             f"{scale_at(DRIFT, COMMITS) - 1:.1%}); {STAIR_STEP:.0%} at {STEP_AT} and {STAIR_STEP:.0%} more at the "
             "commit after (two kernel commits in a row; named at the commit only when both steps are, each at its "
             "own commit)",
             "- noise: `low` is the samples as recorded; `medium` and `high` multiply lognormal noise into every "
             "resampled iteration, to a robust cv of 5% and 15%"
             + (f"; `runs` draws, at each commit, one of the record's {siblings} committed real runs before resampling it: "
                "the offsets between real runs of one build, which resampling one run cannot show (beside the goals, "
                "which are set on the other three)" if siblings else ""),
             f"- our detector: detect.py with a penalty of {penalty:g} per change (a step must be {penalty ** 0.5:.1f} "
             "standard errors" + (", the default that `history check` uses)" if penalty == detect.PENALTY else
                                  f"; `history check` uses {detect.PENALTY:g})"),
             "- in hindsight: the whole series fitted at once. A drift counts as found when a regression is named at one "
             "of its commits. \"Something else named\": a series where a change was named away from the injected one "
             "(more than one commit off; with no change, anywhere)",
             f"- as CI runs it: after every commit, check on the series so far; it fails when a regression starts among "
             f"the newest {RECENT} commits. On quiet commits (every commit of a no-change series; for the z-score also "
             f"those before the change) a failure is a false alert. The z-score judges each commit against up to "
             f"{rivals.LOOKBACK} before it and has no hindsight; asv has no per-commit mode (it refits the whole "
             f"series) and reports only changes above its default threshold of {rivals.ASV_THRESHOLD:.0%}",
             "", "The goals' figures, per detector, on the `low`, `medium` and `high` series (a z-score has no hindsight: "
             "its 2x and 5% are its first alert at the change's commit, its drift any alert from the drift on):", "",
             summary(cells), "", "Every cell:", "", table(cells), "",
             "Goals (our detector, on the `low`, `medium` and `high` series):", ""]
    lines += [f"- {'met' if ok else 'MISSED'}: {text}" for text, ok in goals(cells)]
    lines += ["", "## How `history check` decides", "",
              "Each record's metric on each machine is a series; detect.py fits it with levels that change only between "
              "commits, in log space (a step is a ratio), each run weighed by the inverse of its variance: the run-to-run "
              "noise estimated from the series itself (no run can show how far the next run of the same build lands), "
              "what the run's own samples and trials add when they are noisier than its siblings', and its contention "
              "(contention that differs from the series' usual widens by contention.py's factor per share; contention "
              "every run had, much less). A change is kept when it explains more than a step of "
              f"{detect.PENALTY ** 0.5:g} standard errors would. A level may be one commit, so that commits that change "
              "speed one after another are each named (the stairs), but one of at most two commits between two levels "
              "that agree is an excursion, not two changes, and a first commit alone is an odd start; "
              "the newest commit alone may be a new level (a 2x "
              "slowdown fails the commit that brought it) unless earlier runs already landed as far off and came back, "
              f"or the history has fewer than {detect.ALONE_AFTER} commits: then the next commit confirms it. The check "
              f"fails (exit 1) on a regression whose first commit is among the newest {RECENT} commits (`--recent`): "
              "small steps on noisy records are named some commits after they came, as the table's last column shows, "
              "and an old regression the team accepted stops failing by itself. A change is named at its first commit; "
              "when the record has no run at the commits before it, or only runs under contention, the line gives the "
              "range to bisect. A history of fewer than "
              f"{detect.MIN_COMMITS} commits names nothing.", "",
              "Reading the tables: `runs` is where a real CI machine lives; there the noise is the offsets between runs "
              "of one build, a few distinct levels rather than a spread, and the figures are worse for every detector. "
              "A z-score judges a commit by the spread of those before it: it sees small steps at once on quiet series, "
              "and it alerts on the odd run that a quiet series throws now and then; asv's fit is robust, but its "
              f"threshold ({rivals.ASV_THRESHOLD:.0%}) leaves smaller steps unreported and it has no commit-by-commit "
              "mode.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    default = Path(__file__).resolve().parents[2] / "tests" / "reports" / "data" / "ci-quiet-1.json"
    p = argparse.ArgumentParser(prog="calibrate-history", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("result", nargs="?", default=str(default), help="a result with real samples (default: the committed "
                   "quiet ci run; its siblings -2.json ... make the `runs` level)")
    p.add_argument("--series", type=int, default=50, help="series per noise level and change (default 50)")
    p.add_argument("--output", help="also write the markdown document here (docs/history-calibration.md)")
    p.add_argument("--penalty", type=float, default=detect.PENALTY, help=f"our detector's penalty per change, in squared "
                   f"standard errors (default {detect.PENALTY:g}: what `history check` uses; others to see what it buys)")
    args = p.parse_args(argv)
    try:
        if args.series < 1:
            raise InputError("--series must be at least 1")
        if not 0 < args.penalty < float("inf"):
            raise InputError("--penalty must be a positive number")
        result = load_result(args.result)
        path = Path(args.result)
        siblings = [load_result(s).doc for s in runs_of_the_same_set(path) if s.name != path.name]
        cells = run(result.doc, siblings, series=args.series, penalty=args.penalty)
    except (InputError, ValueError) as e:
        print(f"calibrate-history: error: {e}", file=sys.stderr)
        return 2
    text = document(cells, path.name, result.doc, args.series, len(siblings) + 1 if siblings else 0, args.penalty)
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    return 0 if all(ok for _, ok in goals(cells)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
