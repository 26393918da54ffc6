"""The model's error on the user's own measurements: each series refitted without some of its measured points and
asked to predict them. Sizes: fitted on every other measured size (the 1st, 3rd, ...) and asked for the ones between
(and, with an even count, the largest: one step past the fit). Group sizes, where two or more were measured and the
op has a form in p: fitted on the other group sizes (formulas' algorithm-aware form) and asked for this one's points.
The fit's regimes and their breakpoints are chosen from the fitted points alone: a held-out point never moves a cut."""
from dataclasses import dataclass
from statistics import median

from ..common.collective_facts import collective
from .fit import MAX_REGIMES
from .formulas import Point, fit_algorithm
from .series import SeriesKey


@dataclass(frozen=True)
class HeldOut:
    key: SeriesKey
    ranks: int  # the group size of the held-out points
    held: str  # "sizes" or "group size"
    fitted_on: int  # points the fit had
    regimes: tuple[tuple[int, int], ...]  # the fit's regimes: the smallest and largest fitted size of each
    errors: tuple[tuple[int, float, float], ...]  # (bytes, measured us, predicted us) of each held-out point

    def relative(self) -> list[float]:
        return [(pred - meas) / meas for _, meas, pred in self.errors]

    @property
    def median_abs(self) -> float:
        return median(abs(e) for e in self.relative())

    @property
    def max_abs(self) -> float:
        return max(abs(e) for e in self.relative())

    @property
    def worst_bytes(self) -> int:
        rel = self.relative()
        return self.errors[max(range(len(rel)), key=lambda i: abs(rel[i]))][0]


def _held(key: SeriesKey, ranks: int, held: str, fit_points: list[Point], test: list[Point], most: int) -> HeldOut:
    model = fit_algorithm(collective(key.op), fit_points, most)
    return HeldOut(key, ranks, held, len(fit_points), tuple((r.smallest, r.largest) for r in model.per_step.regimes),
                   tuple((p.bytes, p.time_us, model.time_us(p.ranks, p.bytes)) for p in sorted(test, key=lambda p: p.bytes)))


def holdouts(key: SeriesKey, points: list[Point], most: int = MAX_REGIMES) -> list[HeldOut]:
    """Every held-out check the series allows: sizes per group size (3 or more distinct sizes), then group sizes; each
    fit in at most `most` regimes."""
    out = []
    measured = sorted({p.ranks for p in points})
    for ranks in measured:
        here = [p for p in points if p.ranks == ranks]
        sizes = sorted({p.bytes for p in here})
        if len(sizes) >= 3:
            kept = set(sizes[0::2])
            out.append(_held(key, ranks, "sizes", [p for p in here if p.bytes in kept],
                             [p for p in here if p.bytes not in kept], most))
    if len(measured) >= 2 and collective(key.op).scales_with_ranks:
        for ranks in measured:
            others = [p for p in points if p.ranks != ranks]
            if len({p.bytes for p in others}) >= 2:
                out.append(_held(key, ranks, "group size", others, [p for p in points if p.ranks == ranks], most))
    return out
