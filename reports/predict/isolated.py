"""Measured sizes that disagree with the sizes on both their sides: set apart before a series is fitted.

A sweep's size whose iterations all ran during a transient (a shared link's burst of other traffic, a host's hiccup)
stands off the series alone. The fit pinned to its points (fit.Regime.ratio) would follow it, and a line whose regime
starts or ends there would bend to it: on the namespace cluster one 128 KiB point measured 1.8x both its
neighbours' lines in all 5 of its iterations, and a transformer's tensor-parallel step came out +75%
(docs/prediction.md). A protocol switch is not such a point: it moves the sizes after it too, so the line from the
sizes on one side of it meets it (a step), where an isolated point is off the lines from both sides (a spike or a
dip). The test: at a size with two measured sizes on each side (of the same group size), the alpha-beta line
through the two on the left and the one through the two on the right, each carried to it; the size is set apart when
its time is more than ISOLATED times both, or less than both divided by it (a side whose line gives no positive time
there cannot judge: the size is kept). The ends of a series, with no two sizes beyond them, are never judged."""
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .formulas import Point

ISOLATED = 1.5  # off both sides' lines by this factor: a protocol switch meets one side's line (a step)


@dataclass(frozen=True)
class SetApart:
    point: Point
    factor: float  # its time over the nearer of the two sides' lines (above 1: a spike; below: a dip)


def _carried(a: tuple[int, float], b: tuple[int, float], nbytes: int) -> float:
    """The alpha-beta line through two (size, time) points, at `nbytes`: exact on a series that is one such line (the
    fit's own form), where a log-log line would not be (alpha + n beta bends in log-log at its knee)."""
    (sa, ta), (sb, tb) = a, b
    return tb + (ta - tb) / (sa - sb) * (nbytes - sb)


def set_apart(points: Sequence[Point]) -> tuple[list[Point], list[SetApart]]:
    """The points to fit, and those set apart (each with its factor), per group size as the module says."""
    apart: list[SetApart] = []
    for ranks in sorted({p.ranks for p in points}):
        by_size: dict[int, list[float]] = {}
        for p in points:
            if p.ranks == ranks and p.time_us > 0:
                by_size.setdefault(p.bytes, []).append(p.time_us)
        series = [(n, math.exp(sum(map(math.log, ts)) / len(ts))) for n, ts in sorted(by_size.items())]
        for i in range(2, len(series) - 2):
            n, t = series[i]
            sides = (_carried(series[i - 2], series[i - 1], n), _carried(series[i + 1], series[i + 2], n))
            if min(sides) <= 0:
                continue
            lo, hi = min(sides), max(sides)
            factor = t / hi if t > hi else t / lo if t < lo else 1.0  # between the two: on the way from one to the other
            if factor > ISOLATED or factor < 1 / ISOLATED:
                apart += [SetApart(p, factor) for p in points if p.ranks == ranks and p.bytes == n]
    gone = {id(a.point) for a in apart}
    return [p for p in points if id(p) not in gone], apart
