"""How much did a metric change, and how sure are we: the ratio of medians with a bootstrap interval.

The effect of a change on a timing metric is the ratio of the candidate's median to the baseline's. Its
interval comes from a hierarchical bootstrap (Saravanan et al., "Application of the hierarchical
bootstrap to multi-level data in neuroscience", 2020): iterations of one trial are not independent of
each other the way two runs are — a machine drifts between trials and between runs — so each replicate
first draws the record's trials with replacement and then the iterations within each drawn trial. With
one trial this is the ordinary bootstrap of the median; with several, a run whose trials disagree gets
an interval as wide as their disagreement, which is the run-to-run noise the run itself measured.
Runs of one build also land apart from each other by more than their trials do (seen here: +23% between
quiet runs whose trials agreed within 1%); only several runs show that, so a baseline may be
several runs — and so may the candidate —, which become the top level of the resampling
(bootstrap_medians, run_offsets).

Noise is the robust coefficient of variation, 1.4826 x MAD / median: a timing distribution has a long
tail (a rank descheduled once in 90 iterations), which would inflate a plain stdev/mean without making
the median any less certain.
"""
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

BOOTSTRAP_REPLICATES = 2000
MAX_RESAMPLED = 2_000_000  # values resampled at once: 16 MB of them, and as much of indices, per block
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution x this = its sigma

Floats = npt.NDArray[np.float64]
Samples = Sequence[float] | Floats
Run = tuple[Samples, int]  # one run of a measurement: its samples and how many trials they are


@dataclass(frozen=True)
class Effect:
    ratio: float  # median(candidate) / median(baseline)
    low: float    # the interval of the ratio
    high: float
    confidence: float


def robust_cv(samples: Samples) -> float:
    """1.4826 x median absolute deviation / median; 0 for a constant or empty series."""
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return 0.0
    med = float(np.median(x))
    if med <= 0:
        return 0.0
    return MAD_TO_SIGMA * float(np.median(np.abs(x - med))) / med


def by_trial(samples: Samples, trials: int | None) -> Floats:
    """The samples as a (trials, iterations) array; one row when they do not split evenly."""
    x = np.asarray(samples, dtype=float)
    t = int(trials or 1)
    if t < 1 or x.size % t:
        t = 1
    return x.reshape(t, -1)


def hierarchical_resamples(samples: Samples, trials: int, rng: np.random.Generator,
                           replicates: int = BOOTSTRAP_REPLICATES) -> Floats:
    """`replicates` resamples of one run, shape (replicates, n): its trials drawn with replacement, then the
    iterations within each drawn trial."""
    grid = by_trial(samples, trials)
    t, m = grid.shape
    picked_trials = rng.integers(0, t, size=(replicates, t, 1))
    picked_iters = rng.integers(0, m, size=(replicates, t, m))
    return grid[picked_trials, picked_iters].reshape(replicates, t * m)


def bootstrap_medians(runs: Sequence[Run], rng: np.random.Generator, replicates: int = BOOTSTRAP_REPLICATES) -> Floats:
    """Medians of hierarchical resamples of one or several runs of the same measurement, each run given as
    (samples, trials): the runs drawn with replacement, then each drawn run's trials, then iterations. The resamples
    are drawn in blocks of at most MAX_RESAMPLED values: drawn at once, those of a 30,000-step training run took a
    gigabyte (2,000 x 30,000 indices and values). A measurement small enough for one block (up to 1,000 samples in
    all, the usual) draws exactly what it drew before."""
    values = max(1, sum(len(s) for s, _ in runs))
    block = max(1, MAX_RESAMPLED // values)
    if block >= replicates:
        return _bootstrap_medians(runs, rng, replicates)
    return np.concatenate([_bootstrap_medians(runs, rng, min(block, replicates - done))
                           for done in range(0, replicates, block)])


def _bootstrap_medians(runs: Sequence[Run], rng: np.random.Generator, replicates: int) -> Floats:
    per_run = [hierarchical_resamples(s, t, rng, replicates) for s, t in runs]
    if len(per_run) == 1:
        return np.median(per_run[0], axis=1)
    picked = rng.integers(0, len(per_run), size=(replicates, len(per_run)))
    if len({r.shape[1] for r in per_run}) == 1:  # the usual case, the same suite run again: vectorised
        stack = np.stack(per_run)  # (runs, replicates, n)
        return np.median(stack[picked, np.arange(replicates)[:, None]].reshape(replicates, -1), axis=1)
    return np.array([np.median(np.concatenate([per_run[r][b] for r in picked[b]])) for b in range(replicates)])


def run_offsets(runs: Sequence[Run]) -> Floats:
    """Each baseline run's median over the median of them all: how far one run of the same build lands from
    another. One run: [1.0], since a single run cannot show it."""
    pooled = _pooled_median(runs)
    return np.array([float(np.median(s)) / pooled if pooled > 0 else 1.0 for s, _ in runs])


def seed_for(text: str) -> int:
    """A fixed seed per compared record: the same two results always give the same verdict."""
    return zlib.crc32(text.encode())


def ratio_of_medians(base_runs: Sequence[Run], cand_runs: Sequence[Run], confidence: float = 0.99, seed: int = 0,
                     replicates: int = BOOTSTRAP_REPLICATES) -> Effect:
    """The ratio of the candidate's median to the baseline's and its `confidence` interval: the percentile
    bootstrap of the log ratio, both sides resampled independently. Each side is one or several runs of
    the same measurement, each run (samples, trials). A side of one run cannot show how far runs land
    apart; when the other side has several, that side's run-to-run offsets are borrowed for it (a run is
    a run, on either side), so the spread between runs joins the interval on both sides."""
    rng = np.random.default_rng(seed)
    mb = bootstrap_medians(base_runs, rng, replicates)
    mc = bootstrap_medians(cand_runs, rng, replicates)
    if len(cand_runs) == 1 and len(base_runs) > 1:
        offsets = run_offsets(base_runs)
        mc = mc * offsets[rng.integers(0, len(offsets), size=replicates)]
    elif len(base_runs) == 1 and len(cand_runs) > 1:
        offsets = run_offsets(cand_runs)
        mb = mb * offsets[rng.integers(0, len(offsets), size=replicates)]
    tiny = float(np.finfo(np.float64).tiny)  # a zero median (a timer's resolution) must not make the log infinite
    log_ratio = np.log(np.maximum(mc, tiny)) - np.log(np.maximum(mb, tiny))
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(log_ratio, [tail, 1.0 - tail])
    ratio = max(_pooled_median(cand_runs), tiny) / max(_pooled_median(base_runs), tiny)
    return Effect(ratio, float(np.exp(low)), float(np.exp(high)), confidence)


def _pooled_median(runs: Sequence[Run]) -> float:
    return float(np.median(np.concatenate([np.asarray(s, dtype=float) for s, _ in runs])))
