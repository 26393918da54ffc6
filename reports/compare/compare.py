"""`compare`: match two results record by record and decide, metric by metric, pass, regression or
inconclusive — and never let a slow candidate pass for being noisy.

Per record, the deciding metric's effect is the ratio of medians with its interval (effect.py). Against
the threshold t (policy.py):
- regression: the whole interval lies above 1 + t (worse by more than t, beyond doubt);
- improvement: the whole interval lies below 1 / (1 + t) (a pass, listed as such);
- inconclusive: too few samples (an imported record, one average from another tool, always); either
  record noisier than the limit (robust cv); the interval reaching past 1 + t (the data cannot rule a
  regression out); or a GPU throttled in either run (by an amount its telemetry does not record);
- pass: none of these — the interval rules out a regression beyond t.
Contention (other work on the machine, contention.py) widens the interval by the factor B it may have moved
the ratio by, either way: [low / B, high x B] is what the rules above read. Contention alike on both sides
widens it little, contention that differs a lot; it vetoes nothing the widened interval still settles (a 2x
slowdown at 88% contention on both sides is a regression), and a row and the verdict it touched say so.
A record whose interval lies wholly beyond the threshold is a regression however noisy it is: noise
widens the interval, so a clear regression stays clear. The run's outcome is regression when any record
regressed, else inconclusive when any record was or when a run did not finish (a crashed run's stream:
what it never measured cannot pass), else pass. Records present on one side only are listed, counted in the
verdict line and JUnit, never dropped silently; whether one only in the baseline fails the gate is the policy's
choice (Policy.missing), as is the exit code of an inconclusive outcome (Policy.inconclusive).
A train record's loss and accuracy are rows of their own (judge_quality, quality.py): a relative change against
their own threshold, with no interval, since a fixed seed trains alike; contention does not touch them.
A train row whose job a `train_prediction` record among the inputs predicted (`predict train --json`: its result
given as one more baseline, or records of the candidate's own) shows the predicted step beside the candidate's
measured one (common/predicted_vs_measured.py); it decides nothing. A result holding predictions alone is no run:
it is left out of the runs compared (and of their count and contention) unless a side would be left with none.
"""
import json
import math
import re
from statistics import median
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum

import numpy as np

from ..common import contention, junit
from ..common import identity as ids
from .effect import Run, ratio_of_medians, robust_cv, seed_for
from .quality import change_of
from ..common.json_types import Record
from ..common.junit import Case
from ..common.load import Result
from ..common.markdown import markdown_text
from ..common.policy import Inconclusive, Missing, Policy
from ..common.predicted_vs_measured import job_of_prediction, job_of_train, measured_step, step_beside, window_steps


class Outcome(str, Enum):
    REGRESSION = "regression"
    INCONCLUSIVE = "inconclusive"
    IMPROVEMENT = "improvement"
    PASS = "pass"


ORDER = {o: i for i, o in enumerate(Outcome)}
EXIT_CODES = {Outcome.PASS: 0, Outcome.REGRESSION: 1, Outcome.INCONCLUSIVE: 3}  # 2: bad input


@dataclass
class MetricChange:
    metric: str
    unit: str
    baseline: float
    candidate: float
    change: float  # relative, (candidate - baseline) / baseline


@dataclass
class PredictedStep:
    """The prediction of a train row's job beside the candidate's measured step (it decides nothing)."""
    source: str  # the result file the prediction is in
    step_us: float
    band_us: tuple[float, float]
    text: str  # 'measured 12.100 ms, predicted 10.200 ms (band ...), error -15.7%'


@dataclass
class Row:
    identity: str
    kind: str
    metric: str
    unit: str
    outcome: Outcome
    reason: str                # why, in a few words (empty for a plain pass)
    baseline: float            # the medians
    candidate: float
    change: float              # worse by this much when positive: ratio - 1 in the bad direction
    low: float | None = None   # the interval of the change, in the same terms (None: no interval was computed)
    high: float | None = None
    threshold: float = 0.0
    cv_baseline: float | None = None
    cv_candidate: float | None = None
    samples: tuple[int, int] = (0, 0)
    others: list[MetricChange] = field(default_factory=list)
    family: ids.Family = ids.Family.SPEED
    band: float = 1.0          # contention's factor the interval was widened by, either way (1: none)
    predicted: PredictedStep | None = None  # a train row's prediction among the inputs, beside the candidate's step


@dataclass
class Comparison:
    baseline: str
    candidate: str
    policy: Policy
    rows: list[Row]
    only_in_baseline: list[str]
    only_in_candidate: list[str]
    contention: list[str]      # reasons, prefixed by the run they concern
    telemetry: tuple[bool, bool]  # (baseline has telemetry, candidate has telemetry)
    baseline_runs: int = 1
    candidate_runs: int = 1
    incomplete: list[str] = field(default_factory=list)  # runs that did not finish: "candidate x.jsonl: why"

    def of(self, outcome: Outcome) -> list[Row]:
        return [r for r in self.rows if r.outcome == outcome]

    @property
    def regressions(self) -> list[Row]:
        return self.of(Outcome.REGRESSION)

    @property
    def outcome(self) -> Outcome:
        if self.regressions:
            return Outcome.REGRESSION
        if self.of(Outcome.INCONCLUSIVE) or self.incomplete:
            return Outcome.INCONCLUSIVE
        return Outcome.PASS

    @property
    def missing_fails(self) -> bool:
        """Records of the baseline the candidate did not measure fail the gate (--missing fail)."""
        return self.policy.missing == Missing.FAIL and bool(self.only_in_baseline)

    @property
    def exit_code(self) -> int:
        if self.missing_fails:
            return EXIT_CODES[Outcome.REGRESSION]
        if self.outcome == Outcome.INCONCLUSIVE:
            if self.policy.inconclusive == Inconclusive.FAIL:
                return EXIT_CODES[Outcome.REGRESSION]
            if self.policy.inconclusive == Inconclusive.PASS and not self.incomplete:
                return EXIT_CODES[Outcome.PASS]  # a run that did not finish is no record's verdict: it stays 3
        return EXIT_CODES[self.outcome]


def _index(records: list[Record]) -> dict[ids.Identity, Record]:
    """Records by identity; of repeated measurements (a suite that runs one twice) the first counts."""
    out = {}
    for rec in records:
        key = ids.compared_identity(rec)
        if key is not None and key not in out:
            out[key] = rec
    return out


def judge(kind: str, metric: ids.Metric, bases: list[Record], cands: list[Record], policy: Policy, name: str = "",
          band: float = 1.0, throttled: bool = False) -> Row:
    """The outcome of one deciding metric: `bases` and `cands`, the records of this identity in each run of
    the baseline and of the candidate (usually one each). `band`: the factor contention may have moved the
    ratio by, either way (contention.band); `throttled`: a GPU throttled in a run (the comparison says where, once)."""
    base_runs: list[Run] = [(b.get(metric.samples) or [], b.get("trials", 1)) for b in bases]
    cand_runs: list[Run] = [(c.get(metric.samples) or [], c.get("trials", 1)) for c in cands]
    a = [x for s, _ in base_runs for x in s]
    z = [x for s, _ in cand_runs for x in s]
    # The medians shown are those the effect is the ratio of: of all samples of a side's runs.
    bv = median(a) if a else median([ids.value(b, metric) for b in bases])
    cv = median(z) if z else median([ids.value(c, metric) for c in cands])
    t = policy.threshold_for(kind, metric.name)
    sign = 1 if metric.lower_is_better else -1  # a ratio above 1 is worse either way after this

    def row(outcome: Outcome, reason: str, change: float, low: float | None = None, high: float | None = None,
            cvs: tuple[float | None, float | None] = (None, None)) -> Row:
        return Row(name, kind, metric.name, metric.unit, outcome, reason, bv, cv, change, low, high, t, cvs[0], cvs[1],
                   (len(a), len(z)), band=band)

    plain = ((cv / bv) ** sign - 1) if bv and cv and math.isfinite(bv) and math.isfinite(cv) else 0.0
    # An imported record (importers.py) is another tool's one average: a point value, whose change is shown but
    # decides nothing, whatever --min-samples says — there is no spread to tell a change from noise. (The sample
    # count below would stop it too, as "too few samples"; this says why, and holds at --min-samples 1.)
    imported = sorted({r["source"]["tool"] for r in bases + cands if r.get("source")})
    if imported:
        return row(Outcome.INCONCLUSIVE, f"summary only: {' and '.join(imported)} gave one average per size, no samples", plain)
    fewest = min(len(s) for s, _ in base_runs + cand_runs)
    if fewest < policy.min_samples:
        return row(Outcome.INCONCLUSIVE, f"too few samples: {fewest} < {policy.min_samples}", plain)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # an overflow is caught below, not printed
        e = ratio_of_medians(base_runs, cand_runs, policy.confidence, seed_for(name + metric.name))
        ratio, low, high = (e.ratio, e.low, e.high) if sign > 0 else (1 / e.ratio, 1 / e.high, 1 / e.low)
        cvs = (robust_cv(a), robust_cv(z))
    if not all(math.isfinite(x) for x in (bv, cv, ratio, low, high, *cvs)):
        # Numbers a result may hold (strict_json.py) whose medians or ratios still overflow a double (1.7e308): no
        # verdict can be read from them, least of all a pass.
        return row(Outcome.INCONCLUSIVE, "figures too large to compare: their arithmetic overflows a double", 0.0)
    args = (ratio - 1, low - 1, high - 1, cvs)
    limit = policy.max_cv_for(kind, metric.name)
    if throttled:
        return row(Outcome.INCONCLUSIVE, "throttled GPU: by how much, its telemetry does not say", *args)
    # What contention may have done to the ratio, either way, widens the interval the rules read.
    low, high = low / band, high * band
    contended = f"under contention: interval x{band:.2f} each way" if band > 1 else ""
    if low > 1 + t:
        return row(Outcome.REGRESSION, contended, *args)
    if high < 1 / (1 + t):
        return row(Outcome.IMPROVEMENT, contended, *args)
    if max(cvs) > limit:
        side = "baseline" if cvs[0] >= cvs[1] else "candidate"
        return row(Outcome.INCONCLUSIVE, f"noisy: {side} cv {max(cvs):.1%} > {limit:.0%}", *args)
    if high > 1 + t:
        why = (f"{contended}, reaches {high - 1:+.1%}" if contended else f"wide interval: reaches {high - 1:+.1%}")
        return row(Outcome.INCONCLUSIVE, f"{why}, cannot rule out a regression beyond {t:.0%}", *args)
    return row(Outcome.PASS, contended, *args)


def _runs(results: Result | Sequence[Result]) -> list[Result]:
    return [results] if isinstance(results, Result) else list(results)


def judge_quality(kind: str, bases: list[Record], cands: list[Record], policy: Policy, name: str) -> list[Row]:
    """A row per quality figure either side has (quality.py): its relative change against its threshold, no
    interval; contention does not enter (a busy machine slows a run, it does not change what the run computes)."""
    rows = []
    for metric in (m for m in ids.METRICS[kind] if m.family == ids.Family.QUALITY):
        q = change_of(metric, bases, cands)
        if q is None:
            continue
        t = policy.threshold_for(kind, metric.name)
        outcome = (Outcome.INCONCLUSIVE if q.unmatched else Outcome.REGRESSION if q.change > t
                   else Outcome.IMPROVEMENT if q.change < -t else Outcome.PASS)
        reason = q.unmatched or (f"{metric.label} worse beyond {t:.1%}" if outcome == Outcome.REGRESSION else "")
        rows.append(Row(name, kind, metric.name, metric.unit, outcome, reason, q.baseline, q.candidate, q.change,
                        threshold=t, samples=(len(bases), len(cands)), family=ids.Family.QUALITY))
    return rows


def _predictions_only(result: Result) -> bool:
    return bool(result.records_of("train_prediction")) and all(ids.compared_identity(r) is None for r in result.records)


def _measured_runs(runs: list[Result]) -> list[Result]:
    """The runs less those that hold predictions alone (no run: nothing to compare), unless none would be left."""
    return [r for r in runs if not _predictions_only(r)] or runs


def _predicted(row: Row, cands: list[Record], predictions: list[tuple[Result, Record]]) -> PredictedStep | None:
    job = job_of_train(cands[0])
    match = next(((res, p) for res, p in predictions if job_of_prediction(p) == job), None)
    if match is None:
        return None
    res, p = match
    low, high = p["band_us"]
    # A window's prediction is its mean step: beside it the candidate runs' mean steps, not the row's medians.
    steps, timed = window_steps(p), [c for c in cands if c.get("step_time_us")]
    measured = sum(measured_step(c, steps) for c in timed) / len(timed) if steps > 1 and timed else row.candidate
    return PredictedStep(res.path, p["step_us"], (low, high), step_beside(measured, p))


def compare(baselines: Result | Sequence[Result], candidates: Result | Sequence[Result],
            policy: Policy | None = None) -> Comparison:
    """Compare the candidate with the baseline, each one result or several runs of one build (a list)."""
    policy = policy or Policy()
    baselines, candidates = _runs(baselines), _runs(candidates)
    predictions = [(res, p) for res in baselines + candidates for p in res.records_of("train_prediction")]
    baselines, candidates = _measured_runs(baselines), _measured_runs(candidates)
    base_idx = [_index(b.records) for b in baselines]
    cand_idx = [_index(c.records) for c in candidates]
    base_keys = set().union(*(i.keys() for i in base_idx))
    cand_keys = set().union(*(i.keys() for i in cand_idx))

    reasons = [f"{side}{f' {n + 1}' if len(runs) > 1 else ''}: {r}"
               for side, runs in (("baseline", baselines), ("candidate", candidates))
               for n, res in enumerate(runs) for r in contention.reasons(res, policy)]
    band = contention.band([contention.share(b, policy) for b in baselines], [contention.share(c, policy) for c in candidates])
    throttled = any(map(contention.throttled, baselines + candidates))
    rows = []
    for key in base_keys & cand_keys:
        bases = [i[key] for i in base_idx if key in i]
        cands = [i[key] for i in cand_idx if key in i]
        metrics = ids.METRICS[key[0]]
        decider = next(m for m in metrics if m.decides and m.family == ids.Family.SPEED)
        r = judge(key[0], decider, bases, cands, policy, ids.describe(key), band, throttled)
        if key[0] == "train" and predictions:
            r.predicted = _predicted(r, cands, predictions)
        for m in metrics:
            if not m.decides:
                ob, oc = median([ids.value(b, m) for b in bases]), median([ids.value(c, m) for c in cands])
                r.others.append(MetricChange(m.name, m.unit, ob, oc, (oc - ob) / ob if ob else 0.0))
        rows += [r] + judge_quality(key[0], bases, cands, policy, ids.describe(key))
    rows.sort(key=lambda r: (ORDER[r.outcome], -r.change if r.outcome == Outcome.REGRESSION else r.change, r.identity))
    only_b = sorted(ids.describe(k) for k in base_keys - cand_keys)
    only_c = sorted(ids.describe(k) for k in cand_keys - base_keys)
    incomplete = [f"{side} {res.path}: {res.incomplete}" for side, runs in (("baseline", baselines), ("candidate", candidates))
                  for res in runs if res.incomplete]
    return Comparison(", ".join(b.path for b in baselines), ", ".join(c.path for c in candidates), policy, rows, only_b, only_c,
                      reasons, (all(map(contention.has_telemetry, baselines)), all(map(contention.has_telemetry, candidates))),
                      len(baselines), len(candidates), incomplete)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def _interval(r: Row) -> str:
    return "-" if r.low is None or r.high is None else f"[{r.low:+.1%}, {r.high:+.1%}]"


def _cvs(r: Row) -> str:
    return "-" if r.cv_baseline is None or r.cv_candidate is None else f"{r.cv_baseline:.1%}/{r.cv_candidate:.1%}"


def method_line(cmp: Comparison) -> str:
    p = cmp.policy
    runs = max(cmp.baseline_runs, cmp.candidate_runs)
    levels = (f"runs ({cmp.baseline_runs} baseline, {cmp.candidate_runs} candidate), then trials, then iterations" if runs > 1
              else "trials, then iterations; one run a side, so the spread between runs is not in it")
    return (f"# effect: ratio of medians, {p.confidence:.0%} interval by bootstrap ({levels}); "
            f"threshold {p.threshold:.0%}, noise limit cv {p.max_cv:.0%}, at least {p.min_samples} samples"
            + ("; per-kind thresholds " + ", ".join(f"{k} {v:.0%}" for k, v in sorted(p.thresholds.items()))
               if p.thresholds else "")
            + (f"; loss and accuracy: relative change, threshold {100 * p.quality_threshold:g}%, no interval (one figure a run)"
               if _quality_rows(cmp) else ""))


def verdict_line(cmp: Comparison) -> str:
    """The run's outcome and why, in one line; a run that did not finish is named whatever the outcome."""
    unfinished = "; incomplete: " + "; ".join(cmp.incomplete) if cmp.incomplete else ""
    contended = ("; measured under contention: " + "; ".join(cmp.contention)
                 if cmp.contention and cmp.outcome != Outcome.INCONCLUSIVE else "")
    return _outcome_line(cmp) + contended + unfinished + _one_sided_note(cmp) + _exit_note(cmp)


def _exit_note(cmp: Comparison) -> str:
    """Where the policy turned an outcome into another exit code: said, with the option that did."""
    if cmp.missing_fails:
        return f" (--missing fail: exit {cmp.exit_code})"
    if cmp.outcome != Outcome.INCONCLUSIVE or cmp.exit_code == EXIT_CODES[Outcome.INCONCLUSIVE]:
        return ""
    return f" (--inconclusive {cmp.policy.inconclusive.value}: exit {cmp.exit_code})"


def _one_sided_note(cmp: Comparison) -> str:
    """Records on one side only, counted where the verdict is read, and whether they decide anything."""
    if not cmp.only_in_baseline and not cmp.only_in_candidate:
        return ""
    counts = [f"{len(items)} record(s) only in the {side}" for side, items in
              (("baseline", cmp.only_in_baseline), ("candidate", cmp.only_in_candidate)) if items]
    effect = ("" if cmp.missing_fails else
              ", not compared; they do not fail the gate (--missing fail fails on those only in the baseline)"
              if cmp.only_in_baseline else ", not compared (new records fail no gate)")
    return "; " + " and ".join(counts) + effect


def one_sided_lines(cmp: Comparison) -> list[str]:
    """A line per side with records the other lacks: how many, of which kinds, and what the gate does with them."""
    lines = []
    for side, items, effect in (
            ("baseline", cmp.only_in_baseline, "the candidate did not measure them: "
             + ("they fail the gate (--missing fail)" if cmp.policy.missing == Missing.FAIL
                else "listed, they do not fail the gate (--missing pass)")),
            ("candidate", cmp.only_in_candidate, "new, no baseline to compare them with: listed, they fail no gate")):
        if items:
            kinds: dict[str, int] = {}
            for identity in items:
                kinds[_kind_of(identity)] = kinds.get(_kind_of(identity), 0) + 1
            lines.append(f"# {len(items)} record(s) only in the {side} ("
                         + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + f"): {effect}")
    return lines


def _kind_of(identity: str) -> str:
    """A record's name begins with what it is (an op, a kernel, `train`, a link test): its JUnit class too."""
    return identity.split(" ")[0]


def _outcome_line(cmp: Comparison) -> str:
    o = cmp.outcome
    if o == Outcome.REGRESSION:
        worst = cmp.regressions[0]
        # Runs of one build can land apart more than any run's own samples show (docs/compare-calibration.md).
        modest = any(r.low is not None and r.low < 1.0 for r in cmp.regressions)  # less than 2x beyond doubt
        caveat = ("; one candidate run: confirm with another, runs of one build can land this far apart"
                  if cmp.candidate_runs == 1 and modest else "")
        return f"verdict: regression — {_regressed(cmp)}, worst {_named(worst)} {worst.change:+.1%}{caveat}"
    if o == Outcome.INCONCLUSIVE:
        contended = "measured under contention: " + "; ".join(cmp.contention) + "; " if cmp.contention else ""
        if not cmp.of(Outcome.INCONCLUSIVE):
            return f"verdict: inconclusive — {contended}a run did not finish, so what it did not measure cannot pass"
        why: dict[str, int] = {}
        for r in cmp.of(Outcome.INCONCLUSIVE):
            kind = r.reason.split(":")[0]  # "noisy", "wide interval", "under contention", "too few samples"
            why[kind] = why.get(kind, 0) + 1
        return (f"verdict: inconclusive — {contended}" + ", ".join(f"{n} record(s) {w}" for w, n in why.items())
                + " (see the rows above)")
    quality = f", no loss or accuracy worse beyond {100 * cmp.policy.quality_threshold:g}%" if _quality_rows(cmp) else ""
    return f"verdict: pass — no record slower beyond {cmp.policy.threshold:.0%}{quality}"


def _quality_rows(cmp: Comparison, rows: list[Row] | None = None) -> list[Row]:
    return [r for r in (cmp.rows if rows is None else rows) if r.family == ids.Family.QUALITY]


def _regressed(cmp: Comparison) -> str:
    """'3 record(s) slower beyond 5%', '1 record(s) worse in quality (final_loss)', or both."""
    quality = _quality_rows(cmp, cmp.regressions)
    slower = len(cmp.regressions) - len(quality)
    return ", ".join(([f"{slower} record(s) slower beyond {cmp.policy.threshold:.0%}"] if slower else [])
                     + ([f"{len(quality)} record(s) worse in quality ({', '.join(sorted({r.metric for r in quality}))})"]
                        if quality else []))


def _named(r: Row) -> str:
    """The record, and the quality figure when it is one (a record's time row is named by the record alone)."""
    return f"{r.identity} [{r.metric}]" if r.family == ids.Family.QUALITY else r.identity


def summary_line(cmp: Comparison) -> str:
    counts = {o: len(cmp.of(o)) for o in Outcome}
    no_tel = [side for side, has in zip(("baseline", "candidate"), cmp.telemetry) if not has]
    return (f"# {len(cmp.rows)} compared: {counts[Outcome.REGRESSION]} regression(s), "
            f"{counts[Outcome.IMPROVEMENT]} improvement(s), {counts[Outcome.PASS]} pass, "
            f"{counts[Outcome.INCONCLUSIVE]} inconclusive; "
            f"{len(cmp.only_in_baseline)} only in the baseline, {len(cmp.only_in_candidate)} only in the candidate"
            + (f"; no telemetry in the {' and '.join(no_tel)} (contention unknown)" if no_tel else ""))


def format_table(cmp: Comparison) -> str:
    lines = [f"# trainscope compare: {cmp.baseline} -> {cmp.candidate}", method_line(cmp),
             f"{'outcome':<12} {'change':>8} {'interval':>18} {'baseline':>11} {'candidate':>11} {'cv b/c':>11}  record"]
    for r in cmp.rows:
        why = f"  ({r.reason})" if r.reason else ""
        lines.append(f"{r.outcome.value:<12} {_pct(r.change):>8} {_interval(r):>18} {r.baseline:>11.4g} {r.candidate:>11.4g} "
                     f"{_cvs(r):>11}  {r.identity} [{r.metric}]{why}")
        if r.predicted:
            lines.append(f"{'':<12} {'':>8} {'':>18} {'':>11} {'':>11} {'':>11}  predicted: candidate {r.predicted.text} "
                         f"({r.predicted.source})")
    for d in cmp.only_in_baseline:
        lines.append(f"{'missing':<12} {'':>8} {'':>18} {'':>11} {'':>11} {'':>11}  {d} (only in the baseline)")
    for d in cmp.only_in_candidate:
        lines.append(f"{'new':<12} {'':>8} {'':>18} {'':>11} {'':>11} {'':>11}  {d} (only in the candidate)")
    lines += [*one_sided_lines(cmp), summary_line(cmp), verdict_line(cmp)]
    return "\n".join(lines) + "\n"


def _md(text: object) -> str:
    return markdown_text(text)


def format_markdown(cmp: Comparison) -> str:
    gate = f" (fails the gate: {len(cmp.only_in_baseline)} record(s) only in the baseline)" if cmp.missing_fails else ""
    out = [f"## trainscope compare: **{cmp.outcome.value}**{gate}", "", _md(verdict_line(cmp)), "",
           _md(summary_line(cmp).lstrip("# ")), "", _md(method_line(cmp).lstrip("# ")) + ".", ""]
    shown = [r for r in cmp.rows if r.outcome != Outcome.PASS]
    if shown:
        out += ["| outcome | record | metric | baseline | candidate | change | interval | why |",
                "|---|---|---|---:|---:|---:|---|---|"]
        for r in shown:
            out.append(f"| {r.outcome.value} | {_md(r.identity)} | {r.metric} | {r.baseline:.4g} | {r.candidate:.4g} | "
                       f"{_pct(r.change)} | {_interval(r)} | {_md(r.reason)} |")
        out.append("")
    predicted = [r for r in cmp.rows if r.predicted]
    if predicted:
        out += ["Predicted beside measured (`predict train`; error = (predicted - measured) / measured):", ""]
        out += [f"- {_md(r.identity)}: candidate {_md(r.predicted.text)} ({_md(r.predicted.source)})"
                for r in predicted if r.predicted] + [""]
    for title, items in (("Only in the baseline", cmp.only_in_baseline), ("Only in the candidate", cmp.only_in_candidate)):
        if items:
            out += [f"{title}:", ""] + [f"- {_md(i)}" for i in items] + [""]
    if cmp.only_in_baseline or cmp.only_in_candidate:
        out += [_md(line.lstrip("# ")) for line in one_sided_lines(cmp)] + [""]
    return "\n".join(out)


def format_junit(cmp: Comparison) -> str:
    """One test case per record: a failure per regression, skipped (with the reason) per inconclusive one — a failure
    too under `--inconclusive fail`, which fails the gate on it; a record on one side only is skipped, one only in the
    baseline a failure under `--missing fail`."""
    cases = []
    for r in cmp.rows:
        text = f"{r.metric} {r.baseline:.6g} -> {r.candidate:.6g} ({_pct(r.change)}, interval {_interval(r)})"
        name = ("trainscope." + _kind_of(r.identity), _named(r))
        if r.outcome == Outcome.REGRESSION:
            cases.append(Case(*name, junit.Outcome.FAILURE, f"{r.metric} {_pct(r.change)} ({r.baseline:.4g} -> "
                              f"{r.candidate:.4g})", f"{r.identity}: {text}", failure_type="regression"))
        elif r.outcome == Outcome.INCONCLUSIVE and cmp.policy.inconclusive == Inconclusive.FAIL:
            cases.append(Case(*name, junit.Outcome.FAILURE, f"inconclusive: {r.reason}", f"{r.identity}: {text}",
                              failure_type="inconclusive"))
        elif r.outcome == Outcome.INCONCLUSIVE:
            cases.append(Case(*name, junit.Outcome.SKIPPED, f"inconclusive: {r.reason}", text))
        else:
            cases.append(Case(*name, junit.Outcome.PASSED, "", f"{r.outcome.value}: {text}"))
    for identity in cmp.only_in_baseline:
        name = ("trainscope." + _kind_of(identity), identity)
        if cmp.missing_fails:
            cases.append(Case(*name, junit.Outcome.FAILURE, "only in the baseline: the candidate did not measure it",
                              f"{identity}: in the baseline, not in the candidate (--missing fail)", failure_type="missing"))
        else:
            cases.append(Case(*name, junit.Outcome.SKIPPED, "only in the baseline: the candidate did not measure it",
                              "not compared (--missing pass)"))
    for identity in cmp.only_in_candidate:
        cases.append(Case("trainscope." + _kind_of(identity), identity, junit.Outcome.SKIPPED,
                          "only in the candidate: no baseline to compare it with", "not compared (a new record)"))
    return junit.junit_text("trainscope compare", cases)


def format_json(cmp: Comparison) -> str:
    doc = asdict(cmp)
    doc["policy"] = asdict(cmp.policy)
    # A median that overflowed (judge) is null: what compare writes is strict JSON too (strict_json.py).
    doc["rows"] = [{k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in r.items()} for r in doc["rows"]]
    return json.dumps(doc | {"outcome": cmp.outcome.value, "exit_code": cmp.exit_code, "regressions": len(cmp.regressions),
                             "missing_fails": cmp.missing_fails},
                      indent=1, default=str, allow_nan=False) + "\n"


def machine_key(result: Result) -> str:
    """The baseline name for the machine a result ran on: backend, rank count and device model."""
    run = result.run
    layout = run["layouts"][0] if run["layouts"] else {"backend": "none", "size": run["world"]["processes"]}
    host = run["hosts"][0]
    gpus = host["gpus"]["devices"]
    model = gpus[0]["name"] if gpus else (host["cpu"]["model"] or "cpu")
    key = f"{layout['backend']}-{layout['size']}x-{model}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("_")
