"""What other tools' detectors would say about the same series, for docs/history-calibration.md: our own
implementations of their published methods, written from their descriptions (never their code).

- Conbench's z-score: a commit's value against the mean and standard deviation of the commits before it (its
  lookback, up to 100 of them); an alert when the value is more than Z_THRESHOLD = 5 standard deviations worse
  (Conbench's default threshold; Apache Arrow's later one was 30).
- asv's step detection (asv/step_detect.py): a piecewise-constant fit minimising gamma x changes + the weighted
  L1 distance of the values to each segment's weighted median, the weight of a point the inverse of its interval;
  gamma chosen by asv's information criterion, beta x changes + ln(sigma_0 + AR(1)-corrected L1 residual), with
  beta = 4 ln(n) / n; then its regression rule: an upward step is reported when it exceeds the larger of the two
  segments' mean absolute deviation and asv's default threshold (5% of the level), one-commit bumps that return
  to their level ignored.
"""
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

Z_THRESHOLD = 5.0
LOOKBACK = 100
ASV_THRESHOLD = 0.05   # asv's default `regressions_thresholds`
ASV_MIN_SIZE = 2       # asv: shorter segments count only when the level does not return


def zscore_alerts(values: Floats, lower_is_better: bool = True, min_history: int = 3) -> list[int]:
    """The commits (indices) whose value is more than Z_THRESHOLD standard deviations worse than the commits before."""
    out = []
    for k in range(min_history, values.size):
        past = values[max(0, k - LOOKBACK):k]
        sd = float(np.std(past, ddof=1))
        if sd <= 0:
            continue
        z = (values[k] - float(np.mean(past))) / sd
        if (z if lower_is_better else -z) > Z_THRESHOLD:
            out.append(k)
    return out


@dataclass(frozen=True)
class _Intervals:
    """Weighted medians and weighted L1 distances of every run of values values[l..r]."""
    median: Floats  # [l, r]
    dist: Floats


def _intervals(y: Floats, w: Floats) -> _Intervals:
    n = y.size
    median = np.full((n, n), np.nan)
    dist = np.full((n, n), np.inf)
    for left in range(n):
        v, wt = y[left:], w[left:]
        order = np.argsort(v, kind="stable")
        vs, ws, pos = v[order], wt[order], order
        m = v.size
        inside = pos[None, :] <= np.arange(m)[:, None]  # row r: values left..left+r
        cw = np.cumsum(inside * ws[None, :], axis=1)
        k = np.argmax(cw >= cw[:, -1:] / 2, axis=1)
        med = vs[k]
        median[left, left:] = med
        dist[left, left:] = np.sum(inside * ws[None, :] * np.abs(vs[None, :] - med[:, None]), axis=1)
    return _Intervals(median, dist)


def _potts(iv: _Intervals, gamma: float) -> list[int]:
    """The exclusive right ends of the optimal segments for penalty gamma."""
    n = iv.dist.shape[0]
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    start = np.zeros(n + 1, dtype=int)
    for r in range(1, n + 1):
        total = best[:r] + gamma + iv.dist[:r, r - 1]
        k = int(np.argmin(total))
        best[r], start[r] = total[k], k
    rights, r = [], n
    while r > 0:
        rights.append(r)
        r = int(start[r])
    return rights[::-1]


def _criterion(y: Floats, w: Floats, rights: list[int], levels: list[float], beta: float) -> float:
    fitted = np.repeat(levels, np.diff([0, *rights]))
    e = y - fitted
    rho_grid = np.linspace(-0.9, 0.9, 19)
    resid = np.abs(e[1:][None, :] - rho_grid[:, None] * e[:-1][None, :]) * w[1:][None, :]
    s = float(np.min(resid.sum(axis=1))) + abs(e[0]) * w[0]
    if len(levels) > 2:
        sigma0 = 0.1 * min(abs(b - a) for a, b in zip(levels, levels[1:]))
    else:
        sigma0 = 0.001 * min(abs(x) for x in levels)
    return beta * len(rights) + math.log(max(1e-300, sigma0) + s)


def asv_steps(values: Floats, errors: Floats) -> list[tuple[int, int, float, float]]:
    """asv's fit: segments (left, right exclusive, level, mean absolute deviation). `errors`: each point's
    interval half-width (its weight is the inverse; a missing one gets the median weight)."""
    n = values.size
    if n == 0:
        return []
    w = np.where(errors > 0, 1.0 / np.where(errors > 0, errors, 1.0), np.nan)
    w = np.where(np.isnan(w), np.nanmedian(w) if np.any(~np.isnan(w)) else 1.0, w)
    w = w / np.median(w)
    iv = _intervals(values, w)
    beta = 4 * math.log(n) / n
    gamma0 = float(iv.dist[0, n - 1]) or 1.0
    best: tuple[float, list[int]] = (math.inf, [n])
    for x in np.linspace(math.log(0.1 / n), 0.0, 24):
        rights = _potts(iv, gamma0 * math.exp(x))
        levels = [float(iv.median[a, b - 1]) for a, b in zip([0, *rights], rights)]
        obj = _criterion(values, w, rights, levels, beta)
        if obj < best[0]:
            best = (obj, rights)
    rights = best[1]
    return [(a, b, float(iv.median[a, b - 1]), float(iv.dist[a, b - 1]) / (b - a)) for a, b in zip([0, *rights], rights)]


def asv_regressions(values: Floats, errors: Floats, lower_is_better: bool = True) -> list[int]:
    """The commits (indices) where asv's rule reports a regression: the first commit of a worse level."""
    sign = 1.0 if lower_is_better else -1.0
    steps = asv_steps(sign * values, errors)
    out: list[int] = []
    for i in range(1, len(steps)):
        (_, _, prev, prev_err), (a, b, cur, cur_err) = steps[i - 1], steps[i]
        margin = max(prev_err, cur_err, ASV_THRESHOLD * abs(prev))
        if cur - prev <= margin:
            continue
        if b - a < ASV_MIN_SIZE and i + 1 < len(steps) and steps[i + 1][2] <= prev + margin:
            continue  # a one-commit bump that returns: asv ignores it
        out.append(a)
    return out
