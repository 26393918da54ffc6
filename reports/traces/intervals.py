"""Time intervals as (start, end) pairs: unions, lengths and set arithmetic on them, for the trace
analyses (reports/traces/analyze.py, reports/traces/kernel_breakdown.py)."""
from collections.abc import Iterable

from ..common.json_types import TraceEvent
from .trace_roles import STEP

Interval = tuple[float, float]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def length(intervals: Iterable[Interval]) -> float:
    return sum(b - a for a, b in intervals)


def clip(intervals: Iterable[Interval], lo: float, hi: float) -> list[Interval]:
    return [(max(a, lo), min(b, hi)) for a, b in intervals if min(b, hi) > max(a, lo)]


def subtract(xs: Iterable[Interval], ys: list[Interval]) -> list[Interval]:
    """xs minus ys, both unions (sorted, disjoint)."""
    out: list[Interval] = []
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


def intersect(xs: list[Interval], ys: list[Interval]) -> list[Interval]:
    return subtract(xs, subtract(xs, ys))


def span(e: TraceEvent) -> Interval:
    return (e["ts"], e["ts"] + e["dur"])


def step_spans(events: Iterable[TraceEvent]) -> list[TraceEvent]:
    """One rank's STEP spans, in time order: the steps every analysis of a trace counts and indexes alike."""
    return sorted((e for e in events if e.get("cat") == STEP), key=lambda e: e["ts"])
