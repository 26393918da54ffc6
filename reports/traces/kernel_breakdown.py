"""Kernel breakdown of a `--trace` run on GPUs: the device work CUPTI recorded (categories kernel, memcpy,
memset), grouped by name: count, total and mean time, and share of the device's busy time, per rank and
over all ranks; with a `trainscope kernels` result, each kernel's roofline fraction where its name
matches exactly one measured op and shape.

Per step, how much of the step the device worked, three ways (all over the device work clipped to the
step span, kernels + memcpy + memset):
  sum_over_step     the plain sum of the spans' durations / the step (kernels overlapping on several
                    streams count twice, so it can exceed 1)
  busy_over_step    the union of the spans / the step (overlap counted once): the device's busy time
  busy_over_window  the union / the device's window in the step (first device span's start to the last
                    one's end, what CUDA events recorded around the step's work would time)
The acceptance figure of issue #8, "kernel times sum to within 5% of the event-timed step", is checked
on busy_over_step (`coverage_failures`, `trainscope analyze --check-kernel-coverage PCT`): the union,
because on several streams the plain sum overstates the device's time; the plain sum is reported beside
it. A step the trace covers completely but whose host leaves gaps between launches shows
busy_over_window near 1 and busy_over_step below it.
"""
import re
import statistics
from collections.abc import Iterable, Sequence

from .intervals import length, step_spans, union
from ..common.json_types import JsonObject, Record, TraceEvent
from .trace_roles import DEVICE, KERNEL


def function_name(name: str) -> str:
    """The bare function of a demangled kernel name: "void ts::cuda::(anonymous namespace)::layernormKernel<float>
    (float*, int)" -> "layernormKernel". Names that are not C++ signatures (cuBLAS's "sm90_xmma_gemm_...",
    "Memcpy HtoD") come back as they are."""
    s = name.replace("(anonymous namespace)", "")
    while True:
        t = re.sub(r"<[^<>]*>", "", s)
        if t == s:
            break
        s = t
    s = s.split("(")[0].strip()
    return s.split()[-1].split("::")[-1] if s else name


def _key(text: str) -> str:
    k = text.lower().replace("_", "")
    return k[: -len("kernel")] if k.endswith("kernel") and len(k) > len("kernel") else k


def roofline_matches(names: Iterable[str], records: Iterable[Record]) -> dict[str, JsonObject]:
    """{kernel name: match} for the kernel names whose bare function name, lower-cased, without
    underscores and a trailing "Kernel", equals exactly one CUDA-measured op of `records` (the
    `kind: "kernel"` records of a `trainscope kernels` result): layernormKernel <-> layernorm,
    crossEntropyKernel <-> cross_entropy. The match carries the op's roofline fraction only when the op
    was measured at one shape and dtype; at several, which one the traced kernel ran is not known, so the
    match says how many and gives no fraction. cuBLASLt's and cuDNN's kernels match no op."""
    ops: dict[str, list[Record]] = {}
    for r in records:
        if r.get("kind") == "kernel" and r.get("backend") == "cuda":
            ops.setdefault(_key(r["op"]), []).append(r)
    out: dict[str, JsonObject] = {}
    for name in names:
        recs = ops.get(_key(function_name(name)))
        if not recs:
            continue
        measured = [r for r in recs if r.get("roofline")]
        shapes = {(r.get("shape_name"), r.get("dtype")) for r in measured}
        if len(shapes) == 1:
            r = measured[0]
            out[name] = {"op": r["op"], "shape_name": r.get("shape_name"), "dtype": r.get("dtype"),
                         "bound": r["roofline"].get("bound"), "fraction_of_ceiling": r["roofline"].get("fraction_of_ceiling")}
        else:
            out[name] = {"op": recs[0]["op"], "ambiguous": f"{len(shapes)} measured shape(s) with a roofline",
                         "fraction_of_ceiling": None}
    return out


def _step_coverage(step: TraceEvent, device: list[TraceEvent]) -> JsonObject:
    lo, hi = step["ts"], step["ts"] + step["dur"]
    inside = [(max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in device if e["ts"] < hi and e["ts"] + e["dur"] > lo]
    busy = length(union(inside))
    window = max(b for _, b in inside) - min(a for a, _ in inside) if inside else 0.0
    return {"step": step.get("args", {}).get("step"), "step_us": step["dur"], "device_spans": len(inside),
            "sum_us": sum(b - a for a, b in inside), "busy_us": busy, "window_us": window,
            "sum_over_step": sum(b - a for a, b in inside) / step["dur"], "busy_over_step": busy / step["dur"],
            "busy_over_window": busy / window if window > 0 else None}


def _grouped(device: list[TraceEvent], groups: dict[str, JsonObject]) -> dict[str, JsonObject]:
    for e in device:
        g = groups.setdefault(e["name"], {"name": e["name"], "category": e["cat"], "count": 0, "total_us": 0.0})
        g["count"] += 1
        g["total_us"] += e["dur"]
    return groups


def _top(groups: dict[str, JsonObject], denominator: float, share_key: str, top: int,
         matches: dict[str, JsonObject]) -> list[JsonObject]:
    rows = sorted(groups.values(), key=lambda g: (-g["total_us"], g["name"]))[:top]
    for g in rows:
        g["mean_us"] = g["total_us"] / g["count"]
        g[share_key] = g["total_us"] / denominator if denominator > 0 else 0.0
        g["roofline"] = matches.get(g["name"])
    return rows


def _median_present(rows: list[JsonObject], key: str) -> float | None:
    """The median of `key` over the rows that have a value for it; None when none has."""
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.median(values) if values else None


def kernel_breakdown(ranks: dict[int, list[TraceEvent]], top: int = 10,
                     kernel_records: Sequence[Record] = ()) -> JsonObject | None:
    """ranks: {rank: spans}; kernel_records: the `kind: "kernel"` records of a `trainscope kernels` result
    (optional). None when no rank has device spans (a CPU run, or a GPU build without CUPTI)."""
    per_rank: list[JsonObject] = []
    overall: dict[str, JsonObject] = {}
    device_by_rank = {rank: [e for e in events if e.get("cat") in DEVICE] for rank, events in ranks.items()}
    names = {e["name"] for device in device_by_rank.values() for e in device if e.get("cat") == KERNEL}
    matches = roofline_matches(names, kernel_records) if kernel_records else {}
    for rank, events in sorted(ranks.items()):
        device = device_by_rank[rank]
        if not device:
            continue
        busy = length(union((e["ts"], e["ts"] + e["dur"]) for e in device))
        _grouped(device, overall)
        rows = _top(_grouped(device, {}), busy, "share_of_busy", top, matches)
        steps = step_spans(events)
        coverage = [_step_coverage(s, device) for s in steps if s["dur"] > 0]
        per_rank.append({"rank": rank, "device_spans": len(device), "busy_us": busy, "sum_us": sum(e["dur"] for e in device),
                         "top": rows, "steps": coverage, "sum_over_step": _median_present(coverage, "sum_over_step"),
                         "busy_over_step": _median_present(coverage, "busy_over_step"),
                         "busy_over_window": _median_present(coverage, "busy_over_window"),
                         "worst_busy_over_step": min((c["busy_over_step"] for c in coverage), default=None)})
    if not per_rank:
        return None
    everything = sum(g["total_us"] for g in overall.values())
    return {"per_rank": per_rank, "top": _top(overall, everything, "share", top, matches),
            "roofline_from": "kernels result" if kernel_records else None}


def coverage_failures(k: JsonObject | None, pct: float) -> list[str]:
    """The acceptance check: one line per rank whose device busy time (the union of its device spans) is
    off the step span by more than pct percent, median over its steps. A trace without device spans, or
    without steps, cannot pass."""
    if not k:
        return ["no kernel-level spans in the trace (a CPU run, a build without CUPTI, or another profiler held CUPTI)"]
    out = []
    for r in k["per_rank"]:
        if r["busy_over_step"] is None:
            out.append(f"rank {r['rank']}: no step spans to cover")
        elif abs(r["busy_over_step"] - 1) * 100 > pct:
            out.append(f"rank {r['rank']}: the device was busy {100 * r['busy_over_step']:.1f}% of the step "
                       f"(median over {len(r['steps'])} step(s); plain sum of kernel times {100 * r['sum_over_step']:.1f}%, "
                       f"busy over the device's window {_pct(r['busy_over_window'])}), more than {pct:g}% off")
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _roof(g: JsonObject) -> str:
    m = g.get("roofline")
    if not m:
        return "-"
    return f"{100 * m['fraction_of_ceiling']:.0f}%" if m.get("fraction_of_ceiling") is not None else "ambig."


def format_kernels(k: JsonObject) -> str:
    lines = ["# kernels (all ranks): total ms, count, mean us, share of all device time, "
             "roofline fraction (from a kernels result)"]
    for g in k["top"]:
        lines.append(f"  {g['total_us'] / 1e3:>10.3f} {g['count']:>7} {g['mean_us']:>10.2f} {100 * g['share']:>6.1f}% "
                     f"{_roof(g):>7}  {g['name'][:100]}")
    for r in k["per_rank"]:
        cov = "" if r["busy_over_step"] is None else (
            f"; per step (median) the device is busy {_pct(r['busy_over_step'])} of the step "
            f"(plain sum of kernel times {_pct(r['sum_over_step'])}; busy {_pct(r['busy_over_window'])} of the device's window)")
        lines.append(f"# rank {r['rank']}: {r['device_spans']} device span(s), busy {r['busy_us'] / 1e3:.3f} ms{cov}")
    return "\n".join(lines)
