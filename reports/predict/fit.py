"""The alpha-beta (Hockney) fit of a collective's time over its message size: t(n) = alpha + n x beta.

Weighted least squares on the relative error: each point's residual is divided by its own measured time. Plain least
squares on absolute time lets the largest messages (milliseconds) decide both terms and leaves alpha, the latency that
small messages are made of (microseconds), at whatever cancels their error: 50% off at 8 bytes would cost less than 1%
off at 4 MiB. A training step issues both (gradient buckets of MiBs, and small scalars, norms, barriers), and a user
reads the prediction as a percentage, so each point counts by its relative error."""
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fit:
    alpha_us: float  # the latency term, microseconds
    beta_us_per_byte: float  # the inverse bandwidth term, microseconds per byte
    residuals: tuple[float, ...]  # (fitted - measured) / measured at each point, in the points' order

    def time_us(self, nbytes: float) -> float:
        return self.alpha_us + nbytes * self.beta_us_per_byte

    @property
    def max_relative_error(self) -> float:
        return max((abs(r) for r in self.residuals), default=0.0)


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


def fit(sizes: Sequence[float], times_us: Sequence[float]) -> Fit:
    """alpha and beta of one measured series (at least two distinct sizes, times > 0)."""
    (alpha, beta), residuals = fit_terms([[1.0] * len(sizes), list(sizes)], times_us)
    return Fit(alpha, beta, tuple(residuals))
