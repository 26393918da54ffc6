"""The algorithm-aware alpha-beta form that carries a collective's fit to group sizes not measured: on p ranks,
t(p, n) = steps(p) x alpha + factor(p) x n x beta, where factor is the collective's bus factor and steps the latency
terms of the same algorithm (reports/common/collective_facts.py LATENCY_STEPS): ring all_reduce 2(p-1) alpha +
2(p-1)/p n beta; all_gather, reduce_scatter, alltoall (and gather, scatter) (p-1) alpha + (p-1)/p n beta; broadcast,
reduce, sendrecv alpha + n beta whatever p (taken as measured). alpha and beta here are per step: one message's
latency and the inverse bandwidth of one link, fitted over every measured group size at once, per regime of the size n
(fit.fit_regimes: the cut chosen from the points of every group size together)."""
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..common.collective_facts import Collective
from .fit import MAX_REGIMES, Fit, Line, fit_regimes


@dataclass(frozen=True)
class Point:
    ranks: int
    bytes: int
    time_us: float  # the record's median


@dataclass(frozen=True)
class AlgorithmFit:
    op: Collective
    per_step: Fit  # alpha and beta of one step of the algorithm, per regime of the size

    def time_us(self, ranks: int, nbytes: float) -> float:
        return self.per_step.blend(nbytes, self._cost(ranks))

    def band(self, ranks: int, nbytes: float) -> float:
        """The relative band at a group size and size (fit.Fit.band)."""
        return self.per_step.band(nbytes, self._cost(ranks))

    def _cost(self, ranks: int) -> Callable[[Line, float], float]:
        """A regime's time at a size on `ranks` from its per-step line."""
        steps, factor = self.op.latency_steps(ranks), self.op.bus_factor(ranks)
        return lambda line, n: steps * line.alpha_us + factor * n * line.beta_us_per_byte


def fit_algorithm(op: Collective, points: Sequence[Point], most: int = MAX_REGIMES) -> AlgorithmFit:
    """alpha and beta per step from points at any group sizes, weighted by relative error as fit.fit is, in at most
    `most` regimes of the size."""
    steps = [op.latency_steps(p.ranks) for p in points]
    moved = [op.bus_factor(p.ranks) * p.bytes for p in points]
    return AlgorithmFit(op, fit_regimes([p.bytes for p in points], [steps, moved], [p.time_us for p in points], most))
