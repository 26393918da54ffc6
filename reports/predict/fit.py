"""The alpha-beta (Hockney) fit of a collective's time over its message size, t(n) = alpha + n x beta, piecewise over
the size: one line per protocol regime.

Weighted least squares on the relative error: each point's residual is divided by its own measured time. Plain least
squares on absolute time lets the largest messages (milliseconds) decide both terms and leaves alpha, the latency that
small messages are made of (microseconds), at whatever cancels their error: 50% off at 8 bytes would cost less than 1%
off at 4 MiB. A training step issues both (gradient buckets of MiBs, and small scalars, norms, barriers), and a user
reads the prediction as a percentage, so each point counts by its relative error.

Regimes: a transport changes protocol with the size (Open MPI's shared memory leaves its eager protocol at 4-16 KiB,
NCCL switches LL/LL128/Simple), and one alpha and beta cannot follow the jump (docs/prediction.md). The rule
(fit_regimes): the sizes are cut between measured sizes into at most MAX_REGIMES runs of at least MIN_SIZES measured
sizes each, every run fitted as one line; of the cuts into k regimes the one with the least total squared relative
residual wins, and for k = 2, 3 the best cut into k regimes replaces the fit kept so far (one line to start) only when
it divides that fit's total by SPLIT_GAIN for each regime it adds (and the fit kept is not already exact). Noise
around one line gains a little from a cut, a protocol switch a lot, so a clean line stays one line. A size is
predicted by the regime whose measured sizes hold it, outside the measured range by the nearest regime, and in the
gap between two regimes' measured sizes (where the protocol switches, at a size not measured) by the log-log
interpolation between the two regimes' ends (Fit.blend), its band reaching both regimes' lines (Fit.band).

Pinned to the points: a regime's line is the shape, and where it passes off its measured points the prediction follows
them (Regime.ratio): at each measured size the measured / fitted ratio (pooled over the group sizes measured there), in
between the log-size interpolation of its neighbours' ratios, outside the measured sizes the nearest one's. At a
measured size and group size the prediction is the measurement; between two it lies between them. A link whose time
per byte grows with the size inside one regime (TCP through a token bucket: 11.3 us/KB at 2 MiB, 12.5 at 8 MiB, one
line at 10.2) is then costed from the sizes around it rather than from a line through all of them (docs/prediction.md)."""
import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

MIN_SIZES = 3  # measured sizes per regime: two would be fitted exactly by any line, so nothing would test its line
MAX_REGIMES = 3  # a transport's protocols over 8 B .. GiBs: eager, rendezvous, and (TCP, NCCL's LL/LL128/Simple) a third
SPLIT_GAIN = 4.0  # what each regime added must divide the squared residuals by: the rms relative error halved
EXACT = 1e-18  # a sum of squared relative residuals at round-off: the points lie on the fit, nothing to cut


@dataclass(frozen=True)
class Line:
    alpha_us: float  # the latency term, microseconds
    beta_us_per_byte: float  # the inverse bandwidth term, microseconds per byte
    residuals: tuple[float, ...]  # (fitted - measured) / measured at each point of its regime, in the points' order

    def time_us(self, nbytes: float) -> float:
        return self.alpha_us + nbytes * self.beta_us_per_byte

    @property
    def max_relative_error(self) -> float:
        return max((abs(r) for r in self.residuals), default=0.0)


@dataclass(frozen=True)
class Regime:
    smallest: int  # the measured sizes it was fitted over, bytes
    largest: int
    line: Line
    # (measured size, measured / fitted time there), ascending: what pins the line to its points; none: the line alone
    ratios: tuple[tuple[int, float], ...] = ()

    def ratio(self, nbytes: float) -> float:
        """What the line's time at `nbytes` is multiplied by: its points' measured / fitted ratio at a measured size, the
        log-size interpolation of the two around it between them, the nearest one's outside them."""
        if not self.ratios:
            return 1.0
        k = bisect_left(self.ratios, nbytes, key=lambda p: p[0])  # the first measured size >= nbytes
        if k == 0 or k == len(self.ratios):
            return self.ratios[min(k, len(self.ratios) - 1)][1]
        (lo, a), (hi, b) = self.ratios[k - 1], self.ratios[k]
        w = math.log(nbytes / lo) / math.log(hi / lo)
        return a + w * (b - a)

    def cost(self, cost: Callable[[Line, float], float], nbytes: float) -> float:
        """`cost` of its line at a size, pinned to its points."""
        return cost(self.line, nbytes) * self.ratio(nbytes)


@dataclass(frozen=True)
class Fit:
    regimes: tuple[Regime, ...]  # by size, one or more

    def span(self, nbytes: float) -> tuple[int, int]:
        """The regimes a size is predicted by: (i, i) where regime i's measured sizes hold it (below the smallest: the
        first, above the largest: the last), (i, i + 1) where it lies in the gap between two regimes' measured sizes."""
        for i, r in enumerate(self.regimes):
            if nbytes <= r.largest:
                return (i, i) if nbytes >= r.smallest or i == 0 else (i - 1, i)
        return len(self.regimes) - 1, len(self.regimes) - 1

    def blend(self, nbytes: float, cost: Callable[[Line, float], float]) -> float:
        """`cost` (a regime's line, a size) at a size: its regime's where one holds it; in a gap between two regimes,
        the log-log interpolation between the lower regime's cost at its largest measured size and the upper one's at
        its smallest (the switch is somewhere in the gap, and a time grows with the size across it)."""
        i, j = self.span(nbytes)
        if i == j:
            return self.regimes[i].cost(cost, nbytes)
        lower, upper = self.regimes[i], self.regimes[j]
        w = math.log(nbytes / lower.largest) / math.log(upper.smallest / lower.largest)
        a, b = lower.cost(cost, lower.largest), upper.cost(cost, upper.smallest)
        return a ** (1 - w) * b ** w if a > 0 and b > 0 else a + w * (b - a)

    def time_us(self, nbytes: float) -> float:
        return self.blend(nbytes, Line.time_us)

    def band(self, nbytes: float, cost: Callable[[Line, float], float] = Line.time_us) -> float:
        """The relative band at a size: the largest |relative residual| of the points of the regime it is predicted by;
        in a gap between two regimes the protocol at that size is unknown, so the band reaches both regimes' lines there
        (and is no narrower than either regime's residuals)."""
        i, j = self.span(nbytes)
        e = max(r.line.max_relative_error for r in self.regimes[i:j + 1])
        t = self.blend(nbytes, cost)
        if i == j or t <= 0:
            return e
        return max(e, *(abs(r.cost(cost, nbytes) - t) / t for r in self.regimes[i:j + 1]))

    @property
    def max_relative_error(self) -> float:
        return max(r.line.max_relative_error for r in self.regimes)

    @staticmethod
    def single(alpha_us: float, beta_us_per_byte: float, smallest: int = 1, largest: int = 1) -> "Fit":
        """One regime, no residuals: a line given rather than fitted."""
        return Fit((Regime(smallest, largest, Line(alpha_us, beta_us_per_byte, ())),))


def fit_terms(columns: Sequence[Sequence[float]], times_us: Sequence[float]) -> tuple[list[float], list[float]]:
    """Coefficients c >= 0 minimising sum(((sum_j c_j x_ij) - t_i) / t_i)^2, and each point's relative residual.

    A term whose unconstrained coefficient comes out negative (noise at a few points: a latency below zero where the
    small messages are flat) is dropped and the rest refitted: a negative time at a size never measured is no
    prediction. With two terms this is the exact non-negative least squares solution."""
    t = np.asarray(times_us, dtype=float)
    x = np.asarray(columns, dtype=float).T  # one row per point, one column per term
    keep = list(range(x.shape[1]))
    while True:
        coef = np.linalg.lstsq(x[:, keep] / t[:, None], np.ones_like(t), rcond=None)[0]
        if (coef >= 0).all() or len(keep) == 1:
            break
        keep.pop(int(np.argmin(coef)))
    full = [0.0] * x.shape[1]
    for j, c in zip(keep, coef):
        full[j] = max(float(c), 0.0)
    fitted = x @ np.asarray(full)
    return full, [float(r) for r in (fitted - t) / t]


def _cuts(count: int, regimes: int) -> list[tuple[int, ...]]:
    """Every way to cut `count` sorted sizes into `regimes` (2 or more) runs of MIN_SIZES or more: the indices the runs
    start at, the first 0."""
    starts = range(MIN_SIZES, count - MIN_SIZES + 1)
    return [(0, *c) for c in combinations(starts, regimes - 1)
            if all(b - a >= MIN_SIZES for a, b in zip((0, *c), (*c, count)))]


def fit_regimes(sizes: Sequence[int], columns: Sequence[Sequence[float]], times_us: Sequence[float],
                most: int = MAX_REGIMES) -> Fit:
    """The piecewise fit of points at `sizes` (each point's bytes, the axis the regimes cut) to the two terms of
    `columns` (a latency term and a bandwidth term per point: fit_terms' columns), at most `most` regimes by the rule
    of the module's docstring. Each regime's Line holds the two coefficients and its points' residuals."""
    distinct = sorted(set(sizes))
    segments: dict[tuple[int, int], tuple[list[float], list[float]]] = {}

    def segment(lo: int, hi: int) -> tuple[list[float], list[float]]:
        """The fit of the points whose size is distinct[lo:hi]: its two coefficients and its points' residuals."""
        if (lo, hi) not in segments:
            inside = set(distinct[lo:hi])
            idx = [i for i, n in enumerate(sizes) if n in inside]
            segments[(lo, hi)] = fit_terms([[col[i] for i in idx] for col in columns], [times_us[i] for i in idx])
        return segments[(lo, hi)]

    def total(cut: tuple[int, ...]) -> float:
        return sum(r * r for lo, hi in zip(cut, (*cut[1:], len(distinct))) for r in segment(lo, hi)[1])

    best: tuple[int, ...] = (0,)  # one regime needs no MIN_SIZES: 2 sizes fit a line
    for k in range(2, most + 1):  # against the fit kept: a second switch that two regimes cannot follow, three may
        candidates = _cuts(len(distinct), k)
        if not candidates or total(best) <= EXACT:
            break
        better = min(candidates, key=total)
        if total(better) * SPLIT_GAIN ** (k - len(best)) <= total(best):  # each regime added pays the factor
            best = better
    regimes = []
    for lo, hi in zip(best, (*best[1:], len(distinct))):
        (alpha, beta), residuals = segment(lo, hi)
        inside = set(distinct[lo:hi])
        at = [n for n in sizes if n in inside]  # the regime's points' sizes, in the residuals' order
        regimes.append(Regime(distinct[lo], distinct[hi - 1], Line(alpha, beta, tuple(residuals)),
                              _ratios(at, residuals)))
    return Fit(tuple(regimes))


def _ratios(sizes: Sequence[int], residuals: Sequence[float]) -> tuple[tuple[int, float], ...]:
    """Per distinct size, the geometric mean of its points' measured / fitted (1 / (1 + residual)); none where a point's
    fitted time is 0 or below (a line at 0 there: nothing to scale)."""
    if any(1 + r <= 0 for r in residuals):
        return ()
    by: dict[int, list[float]] = {}
    for n, r in zip(sizes, residuals):
        by.setdefault(n, []).append(r)
    return tuple((n, math.exp(-sum(math.log1p(r) for r in rs) / len(rs))) for n, rs in sorted(by.items()))


def fit(sizes: Sequence[int], times_us: Sequence[float], most: int = MAX_REGIMES) -> Fit:
    """alpha and beta of one measured series at each regime (at least two distinct sizes, times > 0)."""
    return fit_regimes(sizes, [[1.0] * len(sizes), [float(n) for n in sizes]], times_us, most)
