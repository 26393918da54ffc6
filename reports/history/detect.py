"""Where a record's series changed level: a penalised step fit over its commits, weighted by what each run measured.

The method is of the penalised-step family (asv's step_detect after Friedrich et al. 2008; the exact optimal
partitioning of Jackson et al. 2005), with what only trainscope knows about each point:
- the series is fitted in log space (a step is a ratio: 2x is 2x at 1 us and at 1 s), each point weighted by the
  inverse of its variance, s_i^2 = sigma^2 + e_i^2 + k_i^2, where
  - sigma is how far runs of one build land apart, which no run can show about itself (seen on the committed quiet
    ci runs: medians 8% apart whose trials agreed within 1%): estimated from the series itself, robustly, from the
    differences between consecutive commits' runs (_sigma). Not from repeated runs of one commit: those ran back to
    back, seconds apart, while commits ran minutes or days apart, and the machine drifts in between (seen on
    history-real.sh's runs: two runs of one commit within 3%, a minute of commits 10% slower, not reproduced when
    the two commits ran again interleaved). For the same reason a commit's repeated runs together weigh as one run
    against that noise: repeats guard a level against one odd run; they do not narrow what separates commits;
  - e_i is what the run's own spread adds to that: se_i is the uncertainty of its median, from its samples (the
    within-run spread over the root of their count, or the spread of its trials' medians when the trials disagree
    more: iterations of one trial are not independent draws, compare's effect.py says why), and e_i^2 is the
    excess of se_i^2 over the series' typical (median) se^2, which sigma holds already. So a run noisier than its
    siblings weighs less, and none weighs more than a typical run: an se from three trials' medians is itself too
    uncertain to trust a run that happened to look tight (tried: weights by se_i alone let such runs set levels
    and named steps of 2% in series of resampled quiet runs);
  - k_i is the run's contention: contention.py's band says a run at a share c of the CPUs taken by other work may
    land exp(PER_SHARE_DIFFERENCE x d + PER_SHARED_SHARE x s) off another, d the difference between their shares
    and s the share both had; here the other is the series' typical run (its median share), and the band is taken
    as two standard deviations. In a quiet history, a run at 88% weighs some 10^4 times less than a quiet one: it
    still counts (it does not veto), it cannot move a level that quiet runs set; in a history that was always
    measured at 88%, every run gets the same +-11% and a 2x step is still a step;
- a change can only fall between commits (repeated runs of one commit share a level);
- the fit minimises the weighted squared residuals plus PENALTY per change: a change is kept only when it explains
  more than a step of PENALTY ** 0.5 = 6 standard errors would (the gain of splitting a segment is exactly the
  squared z of the step between its halves). Six, not the 3 of a single test: over a hundred commits every boundary
  is a candidate and `check` looks again at every commit; docs/history-calibration.md shows what it buys;
- a level may be one commit, so that commits that change speed one after another (issue #20's kernels) are each
  named at their own commit; what keeps one run that landed off from being a change: a segment of at most two
  commits between two levels that agree is an excursion, not two changes, however often it was measured
  (_without_excursions), and a first level of one commit is an odd start, nothing before it to tell it from a
  level (tried: a first segment held to two commits averaged an odd first run with the next and named a change at
  the third commit); the newest may be one commit, so that the commit
  that makes things 2x slower is named at once, unless runs of the history have landed as far off before, or the
  history is too short to know (_within_past_excursions, ALONE_AFTER): then a second commit confirms it.

Each change names the first commit of the new level and the last commit with a run before it (the range to bisect
when the record had no run at the commits in between, a gap in Point.order, or only runs under contention, which
cannot say which side of the step they are on), its size as the ratio of the new level to the old with a 99%
interval (from the two segments' weights; the uncertainty of sigma itself is not in it), and whether that is a
regression or an improvement (Point.lower_is_better). Deterministic: no random draws.
"""
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt

from ..common.contention import PER_SHARE_DIFFERENCE, PER_SHARED_SHARE
from ..common.policy import Policy
from ..compare.effect import MAD_TO_SIGMA, by_trial
from .series import Point, Series

PENALTY = 36.0             # per change, in squared standard errors (module docstring)
CONFIDENCE_Z = 2.5758      # the step's interval: 99%, as compare's
CONTENTION_SIGMAS = 2.0    # contention's band (contention.py) taken as this many standard deviations
MIN_NOISE = 0.001          # runs land at least 0.1% apart: a floor on sigma, for a series of identical values
MEDIAN_SE = 1.2533         # the standard error of a median is sqrt(pi / 2) times that of a mean
TRIM = 0.05                # of the differences between runs, the largest share left out of the noise's root mean square
T_TAIL_Z = 3.0902          # the normal quantile at 0.1%, for few_differences
ALONE_AFTER = 10           # commits a history needs before its newest commit alone can be a new level (fit_prepared)
ZERO_AS = 0.001            # a value of 0 as this fraction of the series' smallest positive one (prepare)
MIN_COMMITS = 4            # a series shorter than this has no history to judge against
MAX_COMMITS = 1000         # the newest commits fitted: the fit holds commits^2 sums (8 MB each at 1,000)

Floats = npt.NDArray[np.float64]


class Direction(str, Enum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"


@dataclass(frozen=True)
class Change:
    """One change of level in a series."""
    commit: str          # the first commit at the new level
    before: str          # the last commit with a run before it
    order: int           # `commit`'s Point.order
    before_order: int
    ratio: float         # the new level over the old (a time 2x slower: 2.0)
    low: float           # the ratio's interval
    high: float
    direction: Direction
    runs_before: int     # runs in the segment before and after the change
    runs_after: int
    contended: int       # of those, runs measured under contention (they weighed less)

    @property
    def skipped(self) -> int:
        """Commits of the history between `before` and `commit` where the record has no run, or only runs under
        contention."""
        return max(0, self.order - self.before_order - 1)

    @property
    def bisect(self) -> str:
        """The commits to bisect: `before..commit` when commits without a run lie between, else `commit` alone."""
        return f"{self.before}..{self.commit}" if self.skipped else self.commit

    @property
    def percent(self) -> str:
        """'+100.0% [+95.2%, +104.9%]': the change and its interval, as percentages of the old level."""
        return f"{self.ratio - 1:+.1%} [{self.low - 1:+.1%}, {self.high - 1:+.1%}]"


@dataclass(frozen=True)
class Fit:
    """The fitted levels of a series: the changes, and the noise it was judged against."""
    changes: tuple[Change, ...]
    sigma: float         # run-to-run noise (log space: about a relative spread) estimated from the series
    commits: int


def _log(values: Sequence[float] | Floats) -> Floats:
    x = np.asarray(values, dtype=float)
    return np.log(np.maximum(x, np.finfo(np.float64).tiny))


def run_se(point: Point) -> float:
    """The standard error of the run's median in log space, from its own samples (0 when it has fewer than 3)."""
    if len(point.samples) < 3 or min(point.samples) <= 0:
        return 0.0
    logs = _log(point.samples)
    within = MEDIAN_SE * MAD_TO_SIGMA * float(np.median(np.abs(logs - np.median(logs)))) / math.sqrt(logs.size)
    grid = by_trial(logs, point.trials)
    if grid.shape[0] < 2:
        return within
    trial_medians = np.median(grid, axis=1)
    between = float(np.std(trial_medians, ddof=1)) / math.sqrt(grid.shape[0])
    return max(within, between)


def contention_sd(shares: Sequence[float | None], policy: Policy | None = None) -> tuple[Floats, npt.NDArray[np.bool_]]:
    """Each run's contention as a standard deviation in log space (module docstring): its share of the CPUs taken by
    other work, counted as compare counts it (none within the policy's limit), against the share typical of the
    series (its median): contention that differs from the other runs' widens by PER_SHARE_DIFFERENCE, contention
    they all had by PER_SHARED_SHARE only, so that a history measured on a machine always loaded is judged, not
    vetoed. Also returns which runs' contention differs from the typical (they are the ones that weigh less)."""
    limit = (policy or Policy()).max_others_busy
    c = np.array([x if x is not None and x > limit else 0.0 for x in shares], dtype=float)
    typical = float(np.median(c)) if c.size else 0.0
    band = PER_SHARE_DIFFERENCE * np.abs(c - typical) + PER_SHARED_SHARE * np.minimum(c, typical)
    return band / CONTENTION_SIGMAS, c != typical


def _groups(points: Sequence[Point]) -> npt.NDArray[np.int64]:
    """Each point's commit as an index 0, 1, ... in order of the commit's first point (the series' order)."""
    at: dict[str, int] = {}
    return np.array([at.setdefault(p.commit, len(at)) for p in points], dtype=np.int64)


@dataclass(frozen=True)
class Prepared:
    """What the fit reads of each point, computed once (the calibration fits every prefix of a series)."""
    points: tuple[Point, ...]
    group: npt.NDArray[np.int64]  # the point's commit index
    y: Floats                     # log of the value
    own: Floats                   # run_se
    contention: Floats            # contention_sd
    odd: npt.NDArray[np.bool_]    # contention other than the series' typical
    first: npt.NDArray[np.int64]  # per commit, its first point

    @property
    def commits(self) -> int:
        return self.first.size


def prepare(points: Sequence[Point]) -> Prepared | None:
    """None for a series the fit cannot judge: no points, a value that is not a finite number, a negative one, or
    none above 0 (a ratio needs positive values). A value of 0 (an accuracy of a model that learned nothing) is
    taken as ZERO_AS of the smallest positive one: a step down to it is a step, named as one of -99.9%."""
    values = np.array([p.value for p in points], dtype=float)
    if values.size == 0 or np.any(~np.isfinite(values)) or np.any(values < 0) or not np.any(values > 0):
        return None
    values = np.where(values == 0, ZERO_AS * float(np.min(values[values > 0])), values)
    group = _groups(points)
    _, first = np.unique(group, return_index=True)
    sd, odd = contention_sd([p.contention for p in points])
    return Prepared(tuple(points), group, _log(values), np.array([run_se(p) for p in points]), sd, odd, first)


def _sigma(y: Floats, odd: npt.NDArray[np.bool_], group: npt.NDArray[np.int64], commits: int) -> float:
    """Run-to-run noise from the series, from the differences between consecutive commits' runs, the first of each
    commit (each difference of two runs has twice a run's variance): the larger of their MAD
    (robust to the few steps) and their root mean square without the largest TRIM of them (runs of one build that
    land at a few distinct levels, as the five committed quiet runs do, give a MAD far below their spread), widened
    for a short history (few_differences); contended runs left out where quiet ones are enough."""
    quiet = ~odd
    has_quiet = np.bincount(group[quiet], minlength=commits) > 0
    use = quiet | ~has_quiet[group]
    g, v = group[use], y[use]
    first = np.concatenate(([True], np.diff(g) != 0))  # points of one commit are adjacent (fit_prepared sorts them)
    diffs = np.diff(v[first])
    if diffs.size == 0:
        return MIN_NOISE
    size = np.sort(np.abs(diffs))
    kept = size[:max(1, size.size - math.ceil(TRIM * size.size))]  # the largest are the steps, if any
    spread = max(MAD_TO_SIGMA * float(np.median(size)), float(np.sqrt(np.mean(kept ** 2)))) / math.sqrt(2)
    return max(MIN_NOISE, spread) * few_differences(diffs.size)


def few_differences(m: int) -> float:
    """How much wider a noise estimated from m differences is taken: Student's t over the normal quantile at
    0.1% (one-sided) for m degrees of freedom, by the Cornish-Fisher expansion (x1.8 for 5 differences, x1.3 for 10,
    x1.03 for 100): a short history's noise is itself uncertain, and a history's first commits must not alert on
    the luck of a few runs that happened to agree."""
    z = T_TAIL_Z
    t = z + (z ** 3 + z) / (4 * m) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * m ** 2)
    return t / z


def _partition(w: Floats, wy: Floats, wy2: Floats, penalty: float) -> list[int]:
    """The optimal partition of the commits (exact dynamic programming, O(commits^2)): per commit, the summed
    weight, weight x level and weight x level^2 of its runs. Returns the start of every segment after the first."""
    n = w.size
    cw, cwy, cwy2 = (np.concatenate(([0.0], np.cumsum(a))) for a in (w, wy, wy2))
    with np.errstate(divide="ignore", invalid="ignore"):  # the diagonal (empty segments) is never read
        sw = cw[None, :] - cw[:, None]
        cost = np.maximum((cwy2[None, :] - cwy2[:, None]) - (cwy[None, :] - cwy[:, None]) ** 2 / sw, 0.0) + penalty
    # cost[a, b]: the segment of commits a..b-1, b > a (the diagonal and below are never segments). A segment of
    # one commit is the newest or has two commits after it: a run that landed off at the newest commit but one is
    # told from a level only by the commits that follow (with the newest alone, which may not stand, it would be
    # paired with it and named; tried: 7 false alerts in 5,000 commits of real runs' offsets instead of 2).
    starts, ends = np.arange(n + 1)[:, None], np.arange(n + 1)[None, :]
    allowed = (ends - starts >= 2) | ((ends - starts == 1) & ((ends <= n - 2) | (ends == n)))
    cost = np.where(allowed, cost, np.inf)
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    start = np.zeros(n + 1, dtype=int)
    for b in range(1, n + 1):
        total = best[:b] + cost[:b, b]
        k = int(np.argmin(total))
        best[b], start[b] = total[k], k
    cuts, b = [], n
    while b > 0:
        a = int(start[b])
        if a > 0:
            cuts.append(a)
        b = a
    return sorted(cuts)


def _within_past_excursions(y: Floats, group: npt.NDArray[np.int64], odd: npt.NDArray[np.bool_], starts: list[int],
                            commits: int) -> bool:
    """Whether the newest commit, alone at a new level, lies no farther from the level before it than some earlier
    quiet run lay from its own segment's level. One run is all a step at the newest commit can show, and so is an
    odd run: when the history holds runs that landed as far off and came back (the committed quiet runs hold one
    16% off its four siblings), the newest is named only when a second commit confirms it. So it is too in a history
    of fewer than ALONE_AFTER commits, whose runs have not yet shown how far off they land (the calibration's one
    false alert in 15,000 commits before this rule was at the 7th commit of a series)."""
    seg = np.searchsorted(np.array(starts), group, side="right") - 1
    past = (group < commits - 1) & ~odd
    head = group == commits - 1
    if not past.any():
        return False
    levels = np.array([np.median(y[past & (seg == k)]) if (past & (seg == k)).any() else np.nan
                       for k in range(len(starts))])
    excursion = float(np.max(np.abs(y[past] - levels[seg[past]])))
    return abs(float(np.median(y[head])) - float(levels[-2])) <= excursion


def _without_excursions(cuts: list[int], w: Floats, wy: Floats, commits: int) -> list[int]:
    """The cuts less those around an excursion: a segment of at most two commits between two whose levels agree
    (their difference within its interval) is runs that landed off and came back, not two changes (asv ignores such
    one-commit bumps too). A regression that a commit or two later was undone is history nobody needs to bisect.
    Less, too, the cut after a first segment of one commit (an odd start)."""
    bounds = [0, *cuts, commits]
    if len(bounds) > 2 and bounds[1] == 1:
        del bounds[1]  # an odd start (module docstring)
    i = 1
    while i + 1 < len(bounds) - 1:
        a, b, c, d = bounds[i - 1], bounds[i], bounds[i + 1], bounds[i + 2]
        lw, rw = w[a:b].sum(), w[c:d].sum()
        if c - b <= 2 and abs(wy[c:d].sum() / rw - wy[a:b].sum() / lw) <= CONFIDENCE_Z * math.sqrt(1 / lw + 1 / rw):
            del bounds[i:i + 2]
            i = max(1, i - 1)
        else:
            i += 1
    return bounds[1:-1]


def fit(series: Series, penalty: float = PENALTY) -> Fit:
    """The changes of level in `series` (module docstring), over its newest MAX_COMMITS commits."""
    commits = list(dict.fromkeys(p.commit for p in series.points))
    kept = set(commits[-MAX_COMMITS:])
    prepared = prepare([p for p in series.points if p.commit in kept])
    return fit_prepared(prepared, prepared.commits, penalty) if prepared else Fit((), MIN_NOISE, 0)


def fit_prepared(prep: Prepared, commits: int, penalty: float = PENALTY) -> Fit:
    """The changes of level in the first `commits` commits of a prepared series."""
    if commits < MIN_COMMITS:
        return Fit((), MIN_NOISE, commits)
    keep = prep.group < commits
    group, y, own, cont, odd = prep.group[keep], prep.y[keep], prep.own[keep], prep.contention[keep], prep.odd[keep]
    order = np.argsort(group, kind="stable")
    group, y, own, cont, odd = group[order], y[order], own[order], cont[order], odd[order]
    y = y - float(np.median(y))  # centred, so the sums of squares keep their precision
    sigma = _sigma(y, odd, group, commits)
    excess = np.maximum(own ** 2 - float(np.median(own ** 2)), 0.0)
    runs = np.bincount(group, minlength=commits)
    wi = 1.0 / (runs[group] * sigma ** 2 + excess + cont ** 2)  # a commit's repeats weigh as one run (sigma's doc)
    w, wy, wy2 = (np.bincount(group, weights=x, minlength=commits).astype(np.float64) for x in (wi, wi * y, wi * y * y))
    contended = np.bincount(group, weights=odd.astype(float), minlength=commits)
    cuts = _partition(w, wy, wy2, penalty)
    if cuts and cuts[-1] == commits - 1 and (commits - 1 < ALONE_AFTER
                                             or _within_past_excursions(y, group, odd, [0, *cuts], commits)):
        cuts.pop()
    cuts = _without_excursions(cuts, w, wy, commits)
    bounds = [0, *cuts, commits]
    changes = []
    for left, cut, right in zip(bounds, bounds[1:], bounds[2:]):
        lw, rw = w[left:cut].sum(), w[cut:right].sum()
        step = wy[cut:right].sum() / rw - wy[left:cut].sum() / lw
        se = math.sqrt(1 / lw + 1 / rw)
        # Named by quiet runs: a commit whose runs were all contended says little of which level it is at, so the
        # change is named at the first quiet commit of the new level, and the range to bisect reaches back over
        # the contended ones to the last quiet commit of the old.
        quiet = np.flatnonzero(runs - contended > 0)
        after = quiet[(quiet >= cut) & (quiet < right)]
        prior = quiet[(quiet >= left) & (quiet < cut)]
        first = prep.points[prep.first[after[0] if after.size else cut]]
        last = prep.points[prep.first[prior[-1] if prior.size else cut - 1]]
        worse = step > 0 if first.lower_is_better else step < 0
        changes.append(Change(
            commit=first.commit, before=last.commit, order=first.order, before_order=last.order,
            ratio=math.exp(step), low=math.exp(step - CONFIDENCE_Z * se), high=math.exp(step + CONFIDENCE_Z * se),
            direction=Direction.REGRESSION if worse else Direction.IMPROVEMENT,
            runs_before=int(runs[left:cut].sum()), runs_after=int(runs[cut:right].sum()),
            contended=int(contended[left:right].sum())))
    return Fit(tuple(changes), sigma, commits)


def detect(series: Series, penalty: float = PENALTY) -> list[Change]:
    return list(fit(series, penalty).changes)


def alerts(fit: Fit, head: int, recent: int) -> list[Change]:
    """The regressions of `fit` that start among the newest `recent` commits of a history whose newest commit has
    order `head`: what `history check` fails on."""
    return [c for c in fit.changes if c.direction == Direction.REGRESSION and c.order > head - recent]
