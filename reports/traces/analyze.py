"""`trainscope analyze TRACE_DIR...`: what a `--trace` run's spans (or a PyTorch profiler trace's, pytorch_trace.py)
say about where each step went; several directories side by side.

Per rank and step, from the spans' roles alone (kernels/trace.h names them; trace_dir.py reads them):
  compute   = the union of "compute" spans minus the time blocked in "wait" spans inside them
  exposed   = communication ("communication" spans, launch to completion) not under compute
  idle      = the rest of the step (data waits, host overhead, pipeline bubbles)
so compute + exposed + idle is the step, and overlap = compute during communication / communication.
The exposed time splits into waiting for peers (the part before the collective's last member started it: nothing
moves before every member has arrived, so it is a straggler's cost, not the network's) and transfer (the rest). The
last member waits for nobody, so the shortest member's span is the transfer, and the last member started that long
before each rank's span ends: each rank's own clock, as the train record does it (bench/train/peer_waits.h).
Stragglers: the k-th collective of a group (same label, e.g. "dp0") is one operation on every member;
a rank's arrival skew is how much later than the first member it started it, and its skew of a step its largest at
that step's collectives (a rank held up once a step is late at the first collective after the hold-up, and the
ones right after it, the loss's mean after the gradients', find the ranks together: a median over collectives would
fall with their count per step). A rank whose median over its steps is above --straggler-ms and over 3x the median
of the other ranks' is named: the train record's rule (bench/train/arrival_skew.h). Pipeline: each rank's time
blocked on receives per step, as a fraction of the step (its bubble).
"""
import bisect
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .critical_path import critical_path, format_path
from ..common.errors import InputError
from .intervals import clip, intersect, length, span, step_spans, subtract, union
from ..common.json_types import JsonObject, Record, TraceDoc, TraceEvent
from .kernel_breakdown import format_kernels, kernel_breakdown
from .trace_dir import load_trace_docs
from .trace_roles import COMMUNICATION, COMPUTE, DEVICE, PHASE, STEP, WAIT, main_thread_name

P2P = {"send", "recv"}
Thread = tuple[Any, Any]  # (pid, tid)


def thread_of(e: TraceEvent) -> Thread:
    return e.get("pid", 0), e.get("tid", 0)


def main_thread(doc: TraceDoc) -> Thread | None:
    """The rank's main thread on the host: the one its trace names so (trace_roles.main_thread_name(); trainscope's
    files have named their threads since the first format, while its tid moved from 0 to 3), or, in a trace naming
    none (a PyTorch profiler's, its spans rebuilt by the loader), the host thread (one without device work) whose
    spans cover the most time; None in a trace without host spans."""
    events = doc["traceEvents"]
    named = [thread_of(e) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
             and e.get("args", {}).get("name") == main_thread_name()]
    if named:
        return named[0]
    spans = [e for e in events if e.get("ph") == "X"]
    device = {thread_of(e) for e in spans if e.get("cat") in DEVICE}
    covered: dict[Thread, list[TraceEvent]] = {}
    for e in spans:
        if thread_of(e) not in device:
            covered.setdefault(thread_of(e), []).append(e)
    if not covered:
        return None
    return max(covered, key=lambda t: length(union(span(e) for e in covered[t])))


def spans_of(docs: dict[int, TraceDoc]) -> dict[int, list[TraceEvent]]:
    return {rank: [e for e in doc["traceEvents"] if e.get("ph") == "X"] for rank, doc in docs.items()}


def load_trace_dir(directory: str | Path) -> dict[int, list[TraceEvent]]:
    """{rank: its complete spans (Chrome "X" events)}."""
    return spans_of(load_trace_docs(directory))


def span_totals(docs: dict[int, TraceDoc], top: int = 15) -> list[JsonObject]:
    """A trace without training steps (collectives, kernels): where its time went, by outermost span of each rank's
    main thread."""
    rows = []
    for rank, doc in sorted(docs.items()):
        main = main_thread(doc)
        events = [e for e in doc["traceEvents"] if e.get("ph") == "X" and thread_of(e) == main]
        outer: list[TraceEvent] = []
        end = -1.0
        for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
            if e["ts"] >= end:
                outer.append(e)
                end = e["ts"] + e["dur"]
        total = sum(e["dur"] for e in outer)
        inner: dict[str, float] = {}
        outermost = {id(e) for e in outer}
        for e in events:
            if id(e) not in outermost:
                inner[e["name"].split(" ")[0]] = inner.get(e["name"].split(" ")[0], 0.0) + e["dur"]
        biggest = sorted(outer, key=lambda e: -e["dur"])[:top]
        rows.append({"rank": rank, "spans": len(outer), "total_us": total, "phases_us": inner,
                     "top": [{"name": e["name"], "us": e["dur"], "share": e["dur"] / total if total > 0 else 0.0}
                             for e in biggest]})
    return rows


def step_breakdown(events: list[TraceEvent], peer_waits: list[tuple[float, float]] | None = None) -> list[JsonObject]:
    """Per step of one rank: compute + exposed + idle = step. `peer_waits`: the windows from this rank's start of each
    collective to its group's last member's (peer_wait_windows); with them the exposed time is split."""
    steps = step_spans(events)
    compute = union(span(e) for e in events if e.get("cat") == COMPUTE)
    waits = union(span(e) for e in events if e.get("cat") == WAIT)
    data = union(span(e) for e in events if e.get("cat") == PHASE and e["name"] == "data")
    device = union(span(e) for e in events if e.get("cat") in DEVICE)
    comm = union(span(e) for e in events if e.get("cat") == COMMUNICATION)
    recv_waits = union(span(e) for e in events if e.get("cat") == WAIT and e["name"] == "wait recv")
    waits_for_peers = union(peer_waits or [])
    compute = subtract(compute, waits)
    rows = []
    for s in steps:
        lo, hi = span(s)
        c, m = clip(compute, lo, hi), clip(comm, lo, hi)
        exposed = length(subtract(m, c))
        both = length(intersect(c, m))
        step = hi - lo
        # Idle: the host blocked (on the data loader, or a wait outside the collectives' spans) or busy elsewhere.
        idle = subtract([(lo, hi)], union(c + m))
        blocked = union(clip(data, lo, hi) + clip(waits, lo, hi))
        row: JsonObject = {
            "step": s.get("args", {}).get("step"), "step_us": step, "compute_us": length(c), "communication_us": length(m),
            "exposed_us": exposed, "idle_us": step - length(c) - exposed, "overlap": both / length(m) if length(m) > 0 else None,
            "pipeline_wait_us": length(clip(recv_waits, lo, hi)), "idle_host_wait_us": length(intersect(idle, blocked))}
        if peer_waits is not None:
            waiting = length(intersect(subtract(m, c), clip(waits_for_peers, lo, hi)))
            row.update(waiting_us=waiting, transfer_us=exposed - waiting)
        if device:  # kernel-level spans (CUPTI): when the device idled, was the host waiting too, or busy elsewhere?
            d = clip(device, lo, hi)
            device_idle = subtract([(lo, hi)], d)
            host_waiting = union(blocked + subtract(m, c))
            row.update(device_busy_us=length(d), device_idle_us=length(device_idle),
                       device_idle_host_waiting_us=length(intersect(device_idle, host_waiting)),
                       device_idle_host_busy_us=length(subtract(device_idle, host_waiting)))
        rows.append(row)
    return rows


def collective_spans(ranks: dict[int, list[TraceEvent]]) -> dict[tuple[str, int], dict[int, tuple[float, float]]]:
    """(group, k) -> {rank: (start, end) of the k-th collective of that group}: one operation on every member."""
    seqs: dict[tuple[str, int], dict[int, tuple[float, float]]] = {}
    for rank, events in ranks.items():
        counters: dict[str, int] = {}
        for e in sorted((e for e in events if e.get("cat") == COMMUNICATION and e["name"] not in P2P), key=lambda e: e["ts"]):
            g = e.get("args", {}).get("group", "")
            k = counters.get(g, 0)
            counters[g] = k + 1
            seqs.setdefault((g, k), {})[rank] = span(e)
    return seqs


def peer_wait_windows(ranks: dict[int, list[TraceEvent]]) -> dict[int, list[tuple[float, float]]]:
    """Per rank, from its start of each collective to the start of the group's last member: blocked there, it waits
    for a peer (the C++ train record's split, bench/train/peer_waits.h, on a trace)."""
    windows: dict[int, list[tuple[float, float]]] = {rank: [] for rank in ranks}
    for members in collective_spans(ranks).values():
        if len(members) < 2:
            continue
        transfer = min(end - start for start, end in members.values())
        for rank, (start, end) in members.items():
            if end - transfer > start:
                windows[rank].append((start, end - transfer))
    return windows


class StepIndex:
    """One rank's step spans, to find the step a moment falls in (the train record's `steps` per collective)."""

    def __init__(self, events: list[TraceEvent]) -> None:
        steps = step_spans(events)
        self.starts = [e["ts"] for e in steps]
        self.spans = [(span(e), e.get("args", {}).get("step", i)) for i, e in enumerate(steps)]

    def at(self, t: float) -> Any | None:
        """The step whose span holds `t`, or None (a collective outside the timed steps: evaluation, set-up)."""
        i = bisect.bisect_right(self.starts, t) - 1
        if i < 0:
            return None
        (lo, hi), step = self.spans[i]
        return step if lo <= t <= hi else None


def stragglers(ranks: dict[int, list[TraceEvent]], threshold_ms: float) -> tuple[list[JsonObject], list[int]]:
    """Per rank, its arrival skew per step (its largest at the step's collectives of its groups, the step its group's
    lowest member was in; a collective in no step a step of its own) and the median over its steps; the ranks
    consistently late."""
    index = {rank: StepIndex(events) for rank, events in ranks.items()}
    by_step: dict[int, dict[Any, float]] = {rank: {} for rank in ranks}
    counted = dict.fromkeys(ranks, 0)
    for k, spans in enumerate(collective_spans(ranks).values()):
        if len(spans) < 2:
            continue
        first = min(start for start, _ in spans.values())
        lowest = min(spans)
        step = index[lowest].at(spans[lowest][0])
        key = ("step", step) if step is not None else ("alone", k)
        for rank, (start, _) in spans.items():
            by_step[rank][key] = max(by_step[rank].get(key, 0.0), start - first)
            counted[rank] += 1
    skews = {rank: list(steps.values()) for rank, steps in by_step.items()}
    medians = {rank: statistics.median(v) if v else 0.0 for rank, v in skews.items()}
    named = []
    for rank, m in medians.items():
        others = [x for r, x in medians.items() if r != rank]
        if m > threshold_ms * 1e3 and m > 3 * (statistics.median(others) if others else 0.0):
            named.append(rank)
    table = [{"rank": r, "collectives": counted[r], "steps": len(skews[r]), "median_skew_us": medians[r],
              "max_skew_us": max(skews[r]) if skews[r] else 0.0, "late": r in named} for r in sorted(ranks)]
    return table, sorted(named)


def analyze(directory: str | Path, threshold_ms: float = 1.0, kernel_records: Sequence[Record] = ()) -> JsonObject:
    return analyze_docs(load_trace_docs(directory), threshold_ms, kernel_records)


def analyze_docs(docs: dict[int, TraceDoc], threshold_ms: float = 1.0, kernel_records: Sequence[Record] = ()) -> JsonObject:
    """analyze() on trace documents already loaded ({rank: document}, load_trace_docs)."""
    ranks = spans_of(docs)
    what = docs[min(docs)].get("trainscope", {}).get("what", "")
    if not any(e.get("cat") == STEP for events in ranks.values() for e in events):
        return {"what": what, "ranks": [], "spans": span_totals(docs),
                "kernels": kernel_breakdown(ranks, kernel_records=kernel_records)}
    # Arrival skew compares the ranks' clocks: without one time axis (the legacy PyTorch profiler's) it says nothing.
    aligned = all(doc.get("trainscope", {}).get("clocks_aligned", True) for doc in docs.values())
    windows = peer_wait_windows(ranks) if len(ranks) > 1 else None
    per_rank = []
    for rank in sorted(ranks):
        rows = step_breakdown(ranks[rank], windows[rank] if windows is not None else None)
        if not rows:
            raise InputError(f"rank {rank}: the trace has no step spans")

        def med(key: str) -> float:
            return statistics.median(r[key] for r in rows)

        overlaps = [r["overlap"] for r in rows if r["overlap"] is not None]
        per_rank.append({"rank": rank, "steps": len(rows), "step_us": med("step_us"), "compute_us": med("compute_us"),
                         "communication_us": med("communication_us"), "exposed_us": med("exposed_us"), "idle_us": med("idle_us"),
                         "overlap": statistics.median(overlaps) if overlaps else None,
                         "pipeline_bubble": statistics.median(r["pipeline_wait_us"] / r["step_us"] for r in rows),
                         "idle_host_wait_us": med("idle_host_wait_us"),
                         **(waiting_split(rows, med("exposed_us")) if windows is not None else {}),
                         **({k: med(k) for k in DEVICE_FIELDS} if all("device_busy_us" in r for r in rows) else {}),
                         "per_step": rows})
    table, late = stragglers(ranks, threshold_ms) if aligned else ([], [])
    return {"what": what, "ranks": per_rank, "clocks_aligned": aligned, "stragglers": table, "late_ranks": late,
            "straggler_threshold_ms": threshold_ms,
            "critical_path": critical_path(docs), "kernels": kernel_breakdown(ranks, kernel_records=kernel_records)}


def format_spans(result: JsonObject) -> str:
    lines = [f"# {result['what'] or 'trace'}: no training steps; where the time went, by outermost span"]
    for r in result["spans"]:
        phases = ", ".join(f"{k} {v / 1e3:.3f} ms" for k, v in sorted(r["phases_us"].items(), key=lambda kv: -kv[1]))
        lines.append(f"  rank {r['rank']}: {r['spans']} span(s), {r['total_us'] / 1e3:.3f} ms"
                     + (f"; inside them: {phases}" if phases else ""))
        for t in r["top"]:
            lines.append(f"    {t['us'] / 1e3:>10.3f} ms {100 * t['share']:>5.1f}%  {t['name']}")
    if result.get("kernels"):
        lines.append(format_kernels(result["kernels"]))
    return "\n".join(lines)


DEVICE_FIELDS = ("device_busy_us", "device_idle_us", "device_idle_host_waiting_us", "device_idle_host_busy_us")


def waiting_split(rows: list[JsonObject], exposed_median: float) -> JsonObject:
    """The median exposed time split in the proportion of the steps' totals, so the two parts add up to it (as the
    train record's waiting_for_peers_us and exposed_transfer_us do)."""
    total = sum(r["exposed_us"] for r in rows)
    share = min(1.0, sum(r["waiting_us"] for r in rows) / total) if total > 0 else 0.0
    return {"waiting_us": exposed_median * share, "transfer_us": exposed_median * (1 - share)}


def format_table(result: JsonObject) -> str:
    if not result["ranks"]:
        return format_spans(result)
    lines = ["# per rank, median per step (ms): compute + exposed communication + idle = step",
             f"# {'rank':>4} {'step':>10} {'compute':>10} {'exposed':>10} {'idle':>10} {'comm':>10} {'overlap':>8} {'bubble':>7}"]
    for r in result["ranks"]:
        ov = f"{100 * r['overlap']:.0f}%" if r["overlap"] is not None else "-"
        lines.append(f"  {r['rank']:>4} {r['step_us'] / 1e3:>10.3f} {r['compute_us'] / 1e3:>10.3f} "
                     f"{r['exposed_us'] / 1e3:>10.3f} {r['idle_us'] / 1e3:>10.3f} {r['communication_us'] / 1e3:>10.3f} {ov:>8} "
                     f"{100 * r['pipeline_bubble']:>6.1f}%")
    if all("waiting_us" in r for r in result["ranks"]):
        lines.append("# exposed (ms): waiting for peers (before a collective's last member started it) + transfer = exposed")
        for r in result["ranks"]:
            lines.append(f"  rank {r['rank']:>3}: waiting {r['waiting_us'] / 1e3:.3f}, transfer {r['transfer_us'] / 1e3:.3f}")
    lines.append("# idle (ms): host waiting (data loader, blocked waits) + other host work = idle")
    for r in result["ranks"]:
        lines.append(f"  rank {r['rank']:>3}: waiting {r['idle_host_wait_us'] / 1e3:.3f}, "
                     f"other {(r['idle_us'] - r['idle_host_wait_us']) / 1e3:.3f}")
    if all("device_busy_us" in r for r in result["ranks"]):
        lines.append("# device (kernel spans, ms): busy + idle = step; "
                     "idle while the host waited (on data or peers) vs while it was busy")
        for r in result["ranks"]:
            lines.append(f"  rank {r['rank']:>3}: busy {r['device_busy_us'] / 1e3:.3f}, idle {r['device_idle_us'] / 1e3:.3f} = "
                         f"host waiting {r['device_idle_host_waiting_us'] / 1e3:.3f} "
                         f"+ host busy {r['device_idle_host_busy_us'] / 1e3:.3f}")
    if result["stragglers"]:
        lines.append("# arrival skew at the collectives (ms): how much later than the first member each rank started them, "
                     "its largest in a step; median and max over the steps")
    for s in result["stragglers"]:
        lines.append(f"  rank {s['rank']:>3}: median {s['median_skew_us'] / 1e3:.3f}, max {s['max_skew_us'] / 1e3:.3f} "
                     f"over {s['steps']} step(s), {s['collectives']} collective(s)" + ("  <- late" if s["late"] else ""))
    late = result["late_ranks"]
    if not result.get("clocks_aligned", True):
        lines.append("# stragglers: not looked for (the traces' clocks start at each process's own profiler start)")
    elif late:
        lines.append(f"# stragglers: {', '.join(f'rank {r}' for r in late)}")
    else:
        lines.append(f"# stragglers: none (no rank consistently late by more than {result['straggler_threshold_ms']:g} ms)")
    if result.get("critical_path"):
        lines.append(format_path(result["critical_path"]))
    if result.get("kernels"):
        lines.append(format_kernels(result["kernels"]))
    return "\n".join(lines)


def format_side_by_side(results: Sequence[tuple[str, JsonObject]]) -> str:
    """Several traces' breakdowns in one table (a trainscope run beside a PyTorch job's): the mean over every rank's
    steps of each part, and its share of the mean step (means, so that the parts add up to the step)."""
    lines = ["# side by side, mean over ranks and steps (ms): compute + exposed communication + idle = step",
             f"# {'step':>10} {'compute':>16} {'exposed':>16} {'idle':>16}  trace"]
    for directory, r in results:
        rows = [s for x in r["ranks"] for s in x["per_step"]]
        if not rows:
            lines.append(f"  {'-':>10} {'-':>16} {'-':>16} {'-':>16}  {directory} ({r['what'] or 'trace'}: no training steps)")
            continue
        step = statistics.fmean(s["step_us"] for s in rows)
        parts = [statistics.fmean(s[k] for s in rows) for k in ("compute_us", "exposed_us", "idle_us")]
        cells = " ".join(f"{p / 1e3:>9.3f} ({100 * p / step if step > 0 else 0:>3.0f}%)" for p in parts)
        lines.append(f"  {step / 1e3:>10.3f} {cells}  {directory} ({r['what'] or 'trace'}, {len(r['ranks'])} rank(s))")
    return "\n".join(lines)
