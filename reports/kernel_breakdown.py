"""Kernel breakdown of a `--trace` run on GPUs: the device work CUPTI recorded (categories kernel, memcpy,
memset), grouped by name: count, total and mean time, and share of the device's busy time (the union of
the spans, so kernels overlapping on several streams count once); and per step, how much of the step
the device spent busy — the acceptance figure "kernel times sum to within 5% of the event-timed step"
reads `sum_over_step` (the plain sum of kernel times over the step) and `busy_over_step` (the union).
"""
import statistics

DEVICE = {"kernel", "memcpy", "memset"}


def _union_length(intervals):
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def kernel_breakdown(ranks, top=10):
    """ranks: {rank: spans}. None when no rank has device spans (a CPU run)."""
    per_rank, overall = [], {}
    for rank, events in sorted(ranks.items()):
        device = [e for e in events if e.get("cat") in DEVICE]
        if not device:
            continue
        busy = _union_length((e["ts"], e["ts"] + e["dur"]) for e in device)
        groups = {}
        for e in device:
            g = groups.setdefault(e["name"], {"name": e["name"], "category": e["cat"], "count": 0, "total_us": 0.0})
            g["count"] += 1
            g["total_us"] += e["dur"]
            o = overall.setdefault(e["name"], {"name": e["name"], "category": e["cat"], "count": 0, "total_us": 0.0})
            o["count"] += 1
            o["total_us"] += e["dur"]
        rows = sorted(groups.values(), key=lambda g: -g["total_us"])[:top]
        for g in rows:
            g["mean_us"] = g["total_us"] / g["count"]
            g["share_of_busy"] = g["total_us"] / busy if busy > 0 else 0.0
        coverage = []
        for s in (e for e in events if e.get("cat") == "step"):
            lo, hi = s["ts"], s["ts"] + s["dur"]
            inside = [(max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in device if e["ts"] < hi and e["ts"] + e["dur"] > lo]
            if s["dur"] > 0:
                coverage.append({"step": s.get("args", {}).get("step"), "step_us": s["dur"],
                                 "sum_over_step": sum(b - a for a, b in inside) / s["dur"], "busy_over_step": _union_length(inside) / s["dur"]})
        per_rank.append({"rank": rank, "device_spans": len(device), "busy_us": busy, "top": rows, "steps": coverage,
                         "sum_over_step": statistics.median(c["sum_over_step"] for c in coverage) if coverage else None,
                         "busy_over_step": statistics.median(c["busy_over_step"] for c in coverage) if coverage else None})
    if not per_rank:
        return None
    rows = sorted(overall.values(), key=lambda g: -g["total_us"])[:top]
    everything = sum(g["total_us"] for g in overall.values())
    for g in rows:
        g["mean_us"] = g["total_us"] / g["count"]
        g["share"] = g["total_us"] / everything if everything > 0 else 0.0
    return {"per_rank": per_rank, "top": rows}


def format_kernels(k):
    lines = ["# kernels (all ranks): total ms, count, mean us, share of all device time"]
    for g in k["top"]:
        lines.append(f"  {g['total_us'] / 1e3:>10.3f} {g['count']:>7} {g['mean_us']:>10.2f} {100 * g['share']:>6.1f}%  {g['name'][:100]}")
    for r in k["per_rank"]:
        cov = "" if r["sum_over_step"] is None else (f"; per step (median) kernel time sums to {100 * r['sum_over_step']:.1f}% of the step, "
                                                     f"the device is busy {100 * r['busy_over_step']:.1f}% of it")
        lines.append(f"# rank {r['rank']}: {r['device_spans']} device span(s), busy {r['busy_us'] / 1e3:.3f} ms{cov}")
    return "\n".join(lines)
