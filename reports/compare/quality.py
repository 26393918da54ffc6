"""How far a train record's quality figures (final training loss, held-out loss and accuracy) moved between
two results, and whether they can be set side by side at all.

A training run with a fixed seed on one build is deterministic on the CPU, bit for bit (the resume tests hold it
to that): a loss that moved at the same steps, seed and options is the code's doing, not noise. It is not bit for
bit across machines or thread counts (the same sums added in another order), and a run has one final loss, no
samples to build an interval from; so a figure is judged by its relative change against a threshold of its own
(policy.QUALITY_THRESHOLD), with no interval. The seed is no identity option (runs of other seeds are samples of
one step time), but for quality it is: figures trained from other seeds, or taken at other steps (a run stopped
early by --target-loss, evaluations at another --eval-every), are not compared, and the row says why.
"""
import math
from dataclasses import dataclass
from statistics import median
from typing import Any

from ..common import identity as ids
from ..common import option_facts
from ..common.json_types import Record


@dataclass(frozen=True)
class QualityChange:
    baseline: float            # the median of a side's runs (nan: that side has no such figure)
    candidate: float
    change: float              # relative, worse when positive: (candidate - baseline) / baseline, negated for accuracy
    unmatched: str = ""        # why the sides cannot be compared ('' when they can)


def change_of(metric: ids.Metric, bases: list[Record], cands: list[Record]) -> QualityChange | None:
    """The figure's change from the baseline runs to the candidate runs; None when neither side has it (a run
    without evaluations has no held-out figures: its time and final loss are still compared)."""
    b = [v for v in (ids.find(r, metric.path) for r in bases) if v is not None]
    c = [v for v in (ids.find(r, metric.path) for r in cands) if v is not None]
    if not b and not c:
        return None
    bv, cv = (float(median(x)) if x else math.nan for x in (b, c))
    if len(b) < len(bases) or len(c) < len(cands):
        side = "baseline" if len(b) < len(bases) else "candidate"
        return QualityChange(bv, cv, 0.0, f"no {metric.label} in the {side}")
    for words, read in (("trained from other seeds", _seed), ("taken at other steps", lambda r: ids.find(r, metric.at))):
        unmatched = _differ(words, [read(r) for r in bases], [read(r) for r in cands])
        if unmatched:
            return QualityChange(bv, cv, 0.0, unmatched)
    return QualityChange(bv, cv, _relative(cv - bv, bv) * (1 if metric.lower_is_better else -1))


def _relative(delta: float, base: float) -> float:
    if base:
        return delta / abs(base)
    return 0.0 if delta == 0 else math.copysign(math.inf, delta)


def _seed(record: Record) -> Any:
    config = option_facts.described_config(record)
    return None if config is None else config.get("seed")


def _differ(words: str, bases: list[Any], cands: list[Any]) -> str:
    """'trained from other seeds (1 vs 2)' when the runs do not all share one value, else ''."""
    if len({repr(v) for v in bases + cands}) <= 1:
        return ""
    return f"{words} ({'/'.join(map(str, bases))} vs {'/'.join(map(str, cands))})"
