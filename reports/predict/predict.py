"""A collective's predicted time at a size and group size, from the measured series it was asked of (series.select):
the fit at that group size where it was measured, the algorithm-aware form over every measured group size where it
was not (formulas), with a band from the fit's residuals and what of the request lies outside what was measured."""
from collections.abc import Sequence
from dataclasses import dataclass

from dataclasses import replace

from ..common.collective_facts import Collective
from ..common.errors import InputError
from ..common.link_datasheet import Fabric
from ..common.sizes import size_label
from .fit import Fit
from .formulas import AlgorithmFit, Point, fit_algorithm
from .series import SeriesKey


@dataclass(frozen=True)
class Model:
    key: SeriesKey
    ranks: int  # the group size it predicts at
    fitted_ranks: tuple[int, ...]  # the measured group sizes its points are of
    smallest: int  # the measured sizes it was fitted over, bytes
    largest: int
    points: int
    algorithm: AlgorithmFit

    @property
    def alpha_us(self) -> float:
        """alpha of t(n) = alpha + n x beta at this group size."""
        return self.algorithm.op.latency_steps(self.ranks) * self.algorithm.per_step.alpha_us

    @property
    def beta_us_per_byte(self) -> float:
        return self.algorithm.op.bus_factor(self.ranks) * self.algorithm.per_step.beta_us_per_byte

    @property
    def band(self) -> float:
        """The band's half-width, relative: the largest relative residual of the points the model was fitted to."""
        return self.algorithm.per_step.max_relative_error


@dataclass(frozen=True)
class Prediction:
    bytes: int
    ranks: int
    time_us: float
    low_us: float
    high_us: float
    busbw_gbps: float
    extrapolated: tuple[str, ...]  # "size" and/or "group size": what lies outside the measured points


def model(op: Collective, key: SeriesKey, points: Sequence[Point], ranks: int) -> Model:
    """The model of `key` at `ranks`: its points at that group size when there are some, else all of them."""
    measured = sorted({p.ranks for p in points})
    used = [p for p in points if p.ranks == ranks] or list(points)
    sizes = sorted({p.bytes for p in used})
    if len(sizes) < 2:
        raise InputError(f"{key.describe()} at {'/'.join(map(str, measured))} ranks: {len(sizes)} measured size(s); "
                         "a fit of alpha and beta needs at least 2 (run collectives over a range of sizes)")
    fitted = tuple(sorted({p.ranks for p in used}))
    return Model(key, ranks, fitted, sizes[0], sizes[-1], len(used), fit_algorithm(op, used))


def predict(m: Model, nbytes: int) -> Prediction:
    t = m.algorithm.time_us(m.ranks, nbytes)
    outside = (("size",) if not m.smallest <= nbytes <= m.largest else ()) + \
        (("group size",) if m.ranks not in m.fitted_ranks else ())
    busbw = nbytes / t / 1e3 * m.algorithm.op.bus_factor(m.ranks) if t > 0 else 0.0  # bytes/us = MB/s
    return Prediction(nbytes, m.ranks, t, max(t * (1 - m.band), 0.0), t * (1 + m.band), busbw, outside)


def on_fabric(m: Model, fabric: Fabric) -> Model:
    """The what-if of `m` on a datasheet fabric: each step's beta the inverse of the fabric's per-direction bandwidth
    (one link of the ring, as the fitted beta is), alpha as measured here (a datasheet gives no latency), no band (a
    peak bandwidth is no measurement: the time is a bound below what the fabric would take)."""
    beta = 1 / (fabric.gbps * 1e3)  # GB/s = 1e3 bytes per microsecond
    per_step = Fit(m.algorithm.per_step.alpha_us, beta, tuple(0.0 for _ in m.algorithm.per_step.residuals))
    return replace(m, algorithm=AlgorithmFit(m.algorithm.op, per_step))


def describe_fit(m: Model) -> str:
    per = ", ".join(map(str, m.fitted_ranks))
    how = (f"fitted at {per} ranks" if m.ranks in m.fitted_ranks else
           f"carried from {per} ranks by the {m.algorithm.op.bus_factor_formula} form" if m.algorithm.op.scales_with_ranks
           else f"taken as measured at {per} ranks ({m.algorithm.op.name} has no form in the group size)")
    bw = 1 / m.beta_us_per_byte / 1e3 if m.beta_us_per_byte > 0 else float("inf")
    step = m.algorithm.per_step
    return (f"{how} from {m.points} record(s), {size_label(m.smallest)}..{size_label(m.largest)}: at {m.ranks} ranks alpha "
            f"{m.alpha_us:.3f} us, beta {m.beta_us_per_byte:.4g} us/B ({bw:.3f} GB/s); per step alpha {step.alpha_us:.3f} us, "
            f"beta {step.beta_us_per_byte:.4g} us/B; band +-{m.band:.1%} (the fit's largest relative residual)")
