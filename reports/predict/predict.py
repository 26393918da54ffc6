"""A collective's predicted time at a size and group size, from the measured series it was asked of (series.select):
the fit at that group size where it was measured, the algorithm-aware form over every measured group size where it
was not (formulas), each size by the regime of the size it falls in (fit.Fit.regime), with a band from that regime's
residuals and what of the request lies outside what was measured."""
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..common.collective_facts import Collective
from ..common.errors import InputError
from ..common.link_datasheet import Fabric
from ..common.sizes import size_label
from .fit import MAX_REGIMES, Fit, Line, Regime
from .formulas import AlgorithmFit, Point, fit_algorithm
from .isolated import SetApart, set_apart
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
    set_apart: tuple[SetApart, ...] = ()  # measured points left out of the fit: off both sides' lines (isolated.py)

    def at_ranks(self, regime: Regime) -> tuple[float, float]:
        """alpha and beta of t(n) = alpha + n x beta at this group size, in one regime."""
        op = self.algorithm.op
        return op.latency_steps(self.ranks) * regime.line.alpha_us, op.bus_factor(self.ranks) * regime.line.beta_us_per_byte

    def band(self, nbytes: float) -> float:
        """The band's half-width at a size, relative: the largest |relative residual| of the points of the regime the
        size is predicted by (one regime's noise does not widen another's band); in a gap between two regimes, wide
        enough to reach both regimes' lines (fit.Fit.band)."""
        return self.algorithm.band(self.ranks, nbytes)


@dataclass(frozen=True)
class Prediction:
    bytes: int
    ranks: int
    time_us: float
    low_us: float
    high_us: float
    busbw_gbps: float
    regimes: tuple[int, ...]  # the indices of the fit's regime(s) the size is predicted by: two in a gap between them
    extrapolated: tuple[str, ...]  # "size" and/or "group size": what lies outside the measured points


def model(op: Collective, key: SeriesKey, points: Sequence[Point], ranks: int, most: int = MAX_REGIMES) -> Model:
    """The model of `key` at `ranks`: its points at that group size when there are some, else all of them, in at most
    `most` regimes of the size."""
    measured = sorted({p.ranks for p in points})
    used, apart = set_apart([p for p in points if p.ranks == ranks] or list(points))
    sizes = sorted({p.bytes for p in used})
    if len(sizes) < 2:
        raise InputError(f"{key.describe()} at {'/'.join(map(str, measured))} ranks: {len(sizes)} measured size(s); "
                         "a fit of alpha and beta needs at least 2 (run collectives over a range of sizes)")
    fitted = tuple(sorted({p.ranks for p in used}))
    return Model(key, ranks, fitted, sizes[0], sizes[-1], len(used), fit_algorithm(op, used, most), tuple(apart))


def predict(m: Model, nbytes: int) -> Prediction:
    t = m.algorithm.time_us(m.ranks, nbytes)
    outside = (("size",) if not m.smallest <= nbytes <= m.largest else ()) + \
        (("group size",) if m.ranks not in m.fitted_ranks else ())
    busbw = nbytes / t / 1e3 * m.algorithm.op.bus_factor(m.ranks) if t > 0 else 0.0  # bytes/us = MB/s
    band = m.band(nbytes)
    return Prediction(nbytes, m.ranks, t, max(t * (1 - band), 0.0), t * (1 + band), busbw,
                      tuple(sorted(set(m.algorithm.per_step.span(nbytes)))), outside)


def on_fabric(m: Model, fabric: Fabric) -> Model:
    """The what-if of `m` on a datasheet fabric: in every regime each step's beta the inverse of the fabric's
    per-direction bandwidth (one link of the ring, as the fitted beta is), the regime's alpha as measured here (a
    datasheet gives no latency), no band (a peak bandwidth is no measurement: the time is a bound below what the fabric
    would take)."""
    beta = 1 / (fabric.gbps * 1e3)  # GB/s = 1e3 bytes per microsecond
    per_step = Fit(tuple(replace(r, line=Line(r.line.alpha_us, beta, ()), ratios=()) for r in m.algorithm.per_step.regimes))
    return replace(m, algorithm=AlgorithmFit(m.algorithm.op, per_step))


def faster_links(m: Model, factor: float) -> Model:
    """`m` with every regime's bandwidth `factor` times higher (beta / factor), its latency and band kept: what a
    link that much faster would give, where no datasheet names it (a target's need, predict train --target-ms)."""
    regimes = tuple(replace(r, line=replace(r.line, beta_us_per_byte=r.line.beta_us_per_byte / factor))
                    for r in m.algorithm.per_step.regimes)
    return replace(m, algorithm=AlgorithmFit(m.algorithm.op, Fit(regimes)))


def describe_fit(m: Model) -> list[str]:
    """The fit in words: a line of what it is fitted from, then a line per regime."""
    per = ", ".join(map(str, m.fitted_ranks))
    how = (f"fitted at {per} ranks" if m.ranks in m.fitted_ranks else
           f"carried from {per} ranks by the {m.algorithm.op.bus_factor_formula} form" if m.algorithm.op.scales_with_ranks
           else f"taken as measured at {per} ranks ({m.algorithm.op.name} has no form in the group size)")
    regimes = m.algorithm.per_step.regimes
    return [f"{how} from {m.points} record(s), {size_label(m.smallest)}..{size_label(m.largest)}, in {len(regimes)} "
            "regime(s) of the size; band: the largest relative residual of the regime's points"] + \
        [_describe_regime(m, r) for r in regimes] + \
        [f"  set apart: {size_label(a.point.bytes)} at {a.point.ranks} ranks, {a.point.time_us:.3f} us, {a.factor:.2f}x the "
         "lines of the sizes on both sides (an isolated point: measure that size again)" for a in m.set_apart]


def _describe_regime(m: Model, r: Regime) -> str:
    alpha, beta = m.at_ranks(r)
    bw = 1 / beta / 1e3 if beta > 0 else float("inf")
    return (f"  {size_label(r.smallest)}..{size_label(r.largest)}: at {m.ranks} ranks alpha {alpha:.3f} us, beta "
            f"{beta:.4g} us/B ({bw:.3f} GB/s); per step alpha {r.line.alpha_us:.3f} us, beta "
            f"{r.line.beta_us_per_byte:.4g} us/B; band +-{r.line.max_relative_error:.1%}")


def regimes_json(m: Model) -> list[dict[str, Any]]:
    """Each regime of the fit: its measured sizes, alpha and beta at the group size asked and per step, and its band."""
    out = []
    for r in m.algorithm.per_step.regimes:
        alpha, beta = m.at_ranks(r)
        out.append({"measured_bytes": [r.smallest, r.largest], "alpha_us": alpha, "beta_us_per_byte": beta,
                    "per_step_alpha_us": r.line.alpha_us, "per_step_beta_us_per_byte": r.line.beta_us_per_byte,
                    "band_relative": r.line.max_relative_error})
    return out
