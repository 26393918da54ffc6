"""Is a change larger than the noise? Chosen by what the records carry.

- Mann-Whitney U (two-sided, normal approximation with tie correction) on the per-iteration samples,
  when both records have at least MIN_SAMPLES of them: no assumption about the shape of the timing
  distribution, which for latencies is skewed with a long tail.
- Iterations of one trial are not independent of each other the way two runs are: a machine drifts
  between trials and between runs. So when a record has several trials, the change must also exceed the
  spread of its per-trial medians (the largest of the two records'), the run-to-run noise the run itself
  measured. Record more trials (--trials 3 or more) to make this guard meaningful.
- Without samples, the medians must differ by more than twice the combined standard deviation of the
  two records (a coarse z-test on the recorded stdev).
"""
import math

MIN_SAMPLES = 5


def mann_whitney_p(a, b):
    """Two-sided p-value of the Mann-Whitney U test for samples a and b."""
    n1, n2 = len(a), len(b)
    pooled = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = rank
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, pooled) if g == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    mu = n1 * n2 / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0  # every sample identical
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)  # continuity correction
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def trial_spread(record, samples):
    """Range of the per-trial medians (0 with a single trial)."""
    trials = record.get("trials", 1) or 1
    if trials < 2 or len(samples) % trials:
        return 0.0
    per = len(samples) // trials
    medians = [_median(samples[i * per:(i + 1) * per]) for i in range(trials)]
    return max(medians) - min(medians)


def significant(base_rec, cand_rec, base_val, cand_val, metric, alpha):
    """(is the change beyond noise, method, p-value or None)."""
    a = base_rec.get(metric.samples) if metric.samples else None
    b = cand_rec.get(metric.samples) if metric.samples else None
    if a and b and len(a) >= MIN_SAMPLES and len(b) >= MIN_SAMPLES:
        p = mann_whitney_p(a, b)
        spread = max(trial_spread(base_rec, a), trial_spread(cand_rec, b))
        method = "mann-whitney+trials" if spread > 0 else "mann-whitney"
        return p < alpha and abs(cand_val - base_val) > spread, method, p
    sd_a = base_rec.get(metric.name, {}).get("stdev", 0.0) if isinstance(base_rec.get(metric.name), dict) else 0.0
    sd_b = cand_rec.get(metric.name, {}).get("stdev", 0.0) if isinstance(cand_rec.get(metric.name), dict) else 0.0
    return abs(cand_val - base_val) > 2 * math.sqrt(sd_a ** 2 + sd_b ** 2), "stdev", None
