"""How often `compare` is right: injected slowdowns on pairs resampled from real recorded samples.

A pair is two synthetic runs of one real record: each draws the record's trials with replacement and then
iterations within each drawn trial (the same two-level model as the interval, effect.py), the candidate's
samples multiplied by 1 + the injected slowdown. Noise levels: the real records as recorded (those with a
robust cv of at most 2%), and the same records with their spread widened in log space to a target cv
(x' = median * (x / median)^k keeps the shape of the real distribution, tail included). Every pair goes
through compare() as two one-record results, exactly as the command line would see them.

Used by scripts/calibrate-compare.py (the table in docs/compare-calibration.md) and by the tests.
"""
import argparse
import copy
import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .compare import Outcome, compare
from .effect import Samples, by_trial, robust_cv
from ..common.errors import InputError
from ..common.files import runs_of_the_same_set
from ..common.json_types import Record, ResultDoc
from ..common.load import Result, load_result
from ..common.policy import Policy

EFFECTS = (0.0, 0.02, 0.05, 0.10, 1.0, 999.0)  # slowdowns: none, 2%, 5%, 10%, 2x, 1000x
LOW_NOISE_CV = 0.02


def noise_sigma(samples: Samples, target_cv: float, seed: int = 0) -> float:
    """The sigma of lognormal noise that, multiplied into the samples, brings their robust cv to target_cv
    (0 when they are already that noisy)."""
    x = np.asarray(samples, dtype=float)
    if robust_cv(x) >= target_cv:
        return 0.0
    z = np.random.default_rng(seed).standard_normal(x.size)
    low, high = 0.0, 1.0
    for _ in range(40):  # bisection: the cv grows with sigma
        mid = (low + high) / 2
        low, high = (mid, high) if robust_cv(x * np.exp(mid * z)) < target_cv else (low, mid)
    return (low + high) / 2


def resample_run(samples: Samples, trials: int, rng: np.random.Generator, scale: float = 1.0, sigma: float = 0.0) -> list[float]:
    """One synthetic run of a real record: its trials drawn with replacement, iterations within each, times
    `scale` (the injected slowdown) and lognormal noise of `sigma` (a noisier machine)."""
    grid = by_trial(samples, trials)
    t, m = grid.shape
    rows = grid[rng.integers(0, t, size=t)]
    x = rows[np.arange(t)[:, None], rng.integers(0, m, size=(t, m))] * scale
    if sigma > 0:
        x = x * np.exp(sigma * rng.standard_normal(x.shape))
    return x.ravel().tolist()


def with_samples(record: Record, samples: Sequence[float]) -> Record:
    rec = copy.deepcopy(record)
    rec["samples_us"] = list(samples)
    s = sorted(samples)
    rec["time_us"] = dict(rec["time_us"], median=float(np.median(s)), min=s[0], max=s[-1], n=len(s))
    return rec


def one_record_result(name: str, doc: ResultDoc, record: Record) -> Result:
    d = dict(doc, records=[record])
    return Result(name, d, name, [record])


def quiet_records(doc: ResultDoc, max_cv: float = LOW_NOISE_CV) -> list[Record]:
    """The records of a real result whose time samples are quiet enough to be the low-noise level."""
    return [r for r in doc["records"]
            if r["kind"] == "collective" and r.get("samples_us") and robust_cv(r["samples_us"]) <= max_cv]


@dataclass
class Cell:
    noise: str
    effect: float
    pairs: int
    counts: dict[Outcome, int]  # pairs per outcome

    def rate(self, outcome: Outcome) -> float:
        return self.counts.get(outcome, 0) / self.pairs if self.pairs else 0.0


def run(doc: ResultDoc, noise_levels: dict[str, float | None], effects: Sequence[float] = EFFECTS, pairs: int = 50,
        policy: Policy | None = None, seed: int = 1) -> list[Cell]:
    """One Cell per (noise level, injected slowdown): how compare classed `pairs` pairs. noise_levels maps
    a name to a target cv (None: the samples as recorded)."""
    policy = policy or Policy()
    records = quiet_records(doc)
    if not records:
        raise ValueError("no record with a robust cv of at most 2% to calibrate on")
    rng = np.random.default_rng(seed)
    bare = {k: v for k, v in doc.items() if k != "records"}
    cells = []
    for noise, target in noise_levels.items():
        sources = [(r, 0.0 if target is None else noise_sigma(r["samples_us"], target)) for r in records]
        for effect in effects:
            counts: dict[Outcome, int] = {}
            for i in range(pairs):
                rec, sigma = sources[i % len(sources)]
                samples, trials = rec["samples_us"], rec.get("trials", 1)
                base = with_samples(rec, resample_run(samples, trials, rng, 1.0, sigma))
                cand = with_samples(rec, resample_run(samples, trials, rng, 1.0 + effect, sigma))
                cmp = compare(one_record_result("baseline", bare, base), one_record_result("candidate", bare, cand), policy)
                outcome = cmp.rows[0].outcome
                counts[outcome] = counts.get(outcome, 0) + 1
            cells.append(Cell(noise, effect, pairs, counts))
    return cells


def goals(cells: list[Cell]) -> list[tuple[str, bool]]:
    """The calibration's goals, each (text, met): no false regression without a change, every 2x and
    1000x caught, at least 95% of 10% slowdowns caught at a cv of at most 2%."""
    def cells_of(effect: float, noise: str | None = None) -> list[Cell]:
        return [c for c in cells if c.effect == effect and (noise is None or c.noise == noise)]
    false_alarms = sum(c.counts.get(Outcome.REGRESSION, 0) for c in cells_of(0.0))
    no_change = sum(c.pairs for c in cells_of(0.0))
    big = [c for e in (1.0, 999.0) for c in cells_of(e)]
    ten = cells_of(0.10, "low")
    caught_ten = min((c.rate(Outcome.REGRESSION) for c in ten), default=0.0)
    caught_big = ", ".join(f"{c.noise} {c.effect + 1:g}x {c.rate(Outcome.REGRESSION):.0%}" for c in big)
    return [(f"0 false regressions over {no_change} no-change pairs (got {false_alarms})", false_alarms == 0 and no_change >= 50),
            (f"every 2x and 1000x slowdown caught (got {caught_big})", all(c.rate(Outcome.REGRESSION) == 1.0 for c in big)),
            (f">= 95% of 10% slowdowns caught at cv <= 2% (got {caught_ten:.0%})", caught_ten >= 0.95)]


def table(cells: list[Cell]) -> str:
    """A markdown table: per noise level and slowdown, the share of pairs per outcome."""
    lines = ["| noise | slowdown | pairs | regression | inconclusive | pass | improvement |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for c in cells:
        slow = "none" if c.effect == 0 else f"{c.effect:.0%}" if c.effect < 1 else f"{c.effect + 1:g}x"
        lines.append(f"| {c.noise} | {slow} | {c.pairs} | " + " | ".join(f"{c.rate(o):.0%}" for o in
                     (Outcome.REGRESSION, Outcome.INCONCLUSIVE, Outcome.PASS, Outcome.IMPROVEMENT)) + " |")
    return "\n".join(lines)


# (what, comparisons, records, false regressions, inconclusive records, passes)
SameBuild = tuple[str, int, int, int, int, int]


def same_build_pairs(results: list[Result], policy: Policy | None = None) -> list[SameBuild]:
    """Real runs of one build compared with each other, which no resampling can stand in for: every ordered
    pair one run against one, and with five runs every three baseline runs against each of the other two
    and against both. Returns [(what, comparisons, records, false regressions, inconclusive records, passes)]."""
    policy = policy or Policy()
    out = []
    splits = {"1 run vs 1 run": [([a], [b]) for a, b in itertools.permutations(results, 2)]}
    if len(results) == 5:
        threes = list(itertools.combinations(results, 3))
        splits["3 runs vs 1 run"] = [(list(base), [r]) for base in threes for r in results if r not in base]
        splits["3 runs vs 2 runs"] = [(list(base), [r for r in results if r not in base]) for base in threes]
    for what, cases in splits.items():
        rows = [r for base, cand in cases for r in compare(base, cand, policy).rows]
        out.append((what, len(cases), len(rows), sum(r.outcome == Outcome.REGRESSION for r in rows),
                    sum(r.outcome == Outcome.INCONCLUSIVE for r in rows),
                    sum(r.outcome in (Outcome.PASS, Outcome.IMPROVEMENT) for r in rows)))
    return out


def document(cells: list[Cell], source: str, doc: ResultDoc, pairs: int, policy: Policy,
             same_build: Sequence[SameBuild] = ()) -> str:
    """docs/compare-calibration.md: where the samples came from, the method, the table and the goals."""
    run = doc["run"]
    host = run["hosts"][0]
    records = quiet_records(doc)
    lines = ["# compare, calibrated", "",
             "How often `trainscope compare` calls a slowdown a regression, a pass or inconclusive, on pairs of runs "
             "resampled from real recorded samples with a known slowdown injected (reports/compare/calibration.py; "
             "regenerate with `scripts/calibrate-compare.sh`).", "",
             f"- samples: `{source}` — `{' '.join(run['command_line'])}` on {host['hostname']} ({host['cpu']['model']}, "
             f"{host['cpu'].get('threads')} hardware threads), {run['started_at'][:10]}; "
             f"the {len(records)} records with a robust cv of at most 2%",
             f"- {pairs} pairs per cell; a pair is two runs, each drawing the record's trials with replacement and then the "
             "iterations within each; the candidate's samples multiplied by 1 + the slowdown",
             "- noise: `low` is the samples as recorded; `medium` and `high` multiply lognormal noise into every resampled "
             "iteration, to a robust cv of 5% and 15%",
             f"- policy: threshold {policy.threshold:.0%}, noise limit cv {policy.max_cv:.0%}, {policy.confidence:.0%} interval, "
             f"at least {policy.min_samples} samples (the defaults)", "",
             table(cells), "", "Goals:", ""]
    lines += [f"- {'met' if ok else 'MISSED'}: {text}" for text, ok in goals(cells)]
    if same_build:
        lines += ["", "Real runs of one build against each other (the five committed quiet `ci.toml` runs): how far runs land "
                  "apart is something resampling one run cannot show.", "",
                  "| comparison | comparisons | records | false regressions | inconclusive | pass |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {w} | {n} | {k} | {f} ({f / k:.1%}) | {i} ({i / k:.0%}) | {p} ({p / k:.0%}) |"
                  for w, n, k, f, i, p in same_build]
    lines += ["", "Reading it: `none` rows are false alarms when they say regression; at the 5% threshold a 5% slowdown is "
              "a coin toss that the interval cannot settle, hence inconclusive; above the noise limit nothing passes, but "
              "a slowdown whose interval clears the threshold is still caught.", ""]
    return "\n".join(lines)


NOISE_LEVELS = {"low": None, "medium": 0.05, "high": 0.15}


def main(argv: Sequence[str] | None = None) -> int:
    default = Path(__file__).resolve().parents[2] / "tests" / "reports" / "data" / "ci-quiet-1.json"
    # __doc__ is None under `python3 -OO`, which strips docstrings.
    p = argparse.ArgumentParser(prog="calibrate-compare", description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("result", nargs="?", default=str(default),
                   help="a result with real samples (default: the committed quiet ci run)")
    p.add_argument("--pairs", type=int, default=50, help="pairs per noise level and slowdown (default 50)")
    p.add_argument("--output", help="also write the markdown document here (docs/compare-calibration.md)")
    args = p.parse_args(argv)
    try:
        if args.pairs < 1:
            raise InputError("--pairs must be at least 1")
        result = load_result(args.result)
        policy = Policy()
        cells = run(result.doc, NOISE_LEVELS, pairs=args.pairs, policy=policy)
        siblings = runs_of_the_same_set(args.result)
        same_build: Sequence[SameBuild] = (same_build_pairs([load_result(s) for s in siblings], policy)
                                           if len(siblings) > 1 else ())
    except (InputError, ValueError) as e:
        print(f"calibrate-compare: error: {e}", file=sys.stderr)
        return 2
    text = document(cells, Path(args.result).name, result.doc, args.pairs, policy, same_build)
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    return 0 if all(ok for _, ok in goals(cells)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
