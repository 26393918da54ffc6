"""The model's error on the user's own measurements: each series refitted without some of its measured points and
asked to predict them. Sizes: fitted on every other measured size (the 1st, 3rd, ...) and asked for the ones between
(and, with an even count, the largest: one step past the fit). Group sizes, where two or more were measured and the
op has a form in p: fitted on the other group sizes (formulas' algorithm-aware form) and asked for this one's points."""
from dataclasses import dataclass
from statistics import median

from ..common.collective_facts import collective
from .formulas import Point, fit_algorithm
from .series import SeriesKey


@dataclass(frozen=True)
class HeldOut:
    key: SeriesKey
    ranks: int  # the group size of the held-out points
    held: str  # "sizes" or "group size"
    fitted_on: int  # points the fit had
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


def _held(key: SeriesKey, ranks: int, held: str, fit_points: list[Point], test: list[Point]) -> HeldOut:
    model = fit_algorithm(collective(key.op), fit_points)
    return HeldOut(key, ranks, held, len(fit_points),
                   tuple((p.bytes, p.time_us, model.time_us(p.ranks, p.bytes)) for p in sorted(test, key=lambda p: p.bytes)))


def holdouts(key: SeriesKey, points: list[Point]) -> list[HeldOut]:
    """Every held-out check the series allows: sizes per group size (3 or more distinct sizes), then group sizes."""
    out = []
    measured = sorted({p.ranks for p in points})
    for ranks in measured:
        here = [p for p in points if p.ranks == ranks]
        sizes = sorted({p.bytes for p in here})
        if len(sizes) >= 3:
            kept = set(sizes[0::2])
            out.append(_held(key, ranks, "sizes", [p for p in here if p.bytes in kept],
                             [p for p in here if p.bytes not in kept]))
    if len(measured) >= 2 and collective(key.op).scales_with_ranks:
        for ranks in measured:
            others = [p for p in points if p.ranks != ranks]
            if len({p.bytes for p in others}) >= 2:
                out.append(_held(key, ranks, "group size", others, [p for p in points if p.ranks == ranks]))
    return out
