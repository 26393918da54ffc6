"""Time intervals as (start, end) pairs: unions, lengths and set arithmetic on them, for the trace
analyses (reports/analyze.py, reports/kernel_breakdown.py)."""


def union(intervals):
    out = []
    for a, b in sorted(tuple(i) for i in intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def length(intervals):
    return sum(b - a for a, b in intervals)


def clip(intervals, lo, hi):
    return [(max(a, lo), min(b, hi)) for a, b in intervals if min(b, hi) > max(a, lo)]


def subtract(xs, ys):
    """xs minus ys, both unions (sorted, disjoint)."""
    out = []
    for a, b in xs:
        cur = a
        for c, d in ys:
            if d <= cur or c >= b:
                continue
            if c > cur:
                out.append((cur, c))
            cur = max(cur, d)
        if cur < b:
            out.append((cur, b))
    return out


def intersect(xs, ys):
    return subtract(xs, subtract(xs, ys))


def span(e):
    return (e["ts"], e["ts"] + e["dur"])
