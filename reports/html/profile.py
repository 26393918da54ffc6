"""The report's profile section, from a `train --trace DIR` directory (`report ... --trace DIR`): one
step of every rank on one time axis (a Gantt picture), the breakdown per rank (compute, exposed
communication, idle) with the overlap, and the stragglers (reports/traces/analyze.py does the arithmetic)."""
import sys
from collections.abc import Sequence
from pathlib import Path

from ..traces.analyze import analyze_docs, spans_of
from ..traces.critical_path import format_path
from ..traces.intervals import step_spans
from ..common.json_types import Block, TraceDoc
from ..common.load import Result
from .plots import PlotSink, legend_beside, new_figure
from .sections import BuiltSection
from ..traces.trace_dir import load_trace_docs
from ..traces.trace_roles import COMMUNICATION, COMPUTE, PHASE, WAIT

COLORS = {COMPUTE: "C0", WAIT: "C3", PHASE: "0.75", COMMUNICATION: "C1"}


def foreign_trace(docs: dict[int, TraceDoc], results: Sequence[Result]) -> str | None:
    """Why the trace is of none of the results' runs (its run: "train mlp tiny dp=2" over N ranks, as trainscope
    writes it in every trace file, against each train record's model, preset, layout and world size), or None."""
    about = docs[min(docs)].get("trainscope", {})
    what, ranks = about.get("what"), about.get("ranks", len(docs))
    if not isinstance(what, str) or not what.startswith("train "):
        return None  # a collectives or kernels trace: nothing in a train record to hold it to
    runs = [(f"train {r['model']} {r['preset']} {r['layout']['name']}", r["world_size"])
            for res in results for r in res.records_of("train")]
    if (what, ranks) in runs:
        return None
    theirs = "; ".join(f"{w} over {n} rank(s)" for w, n in runs) or "no train run"
    return (f"This trace is of '{what}' over {ranks} rank(s), which none of the results is ({theirs}): it may be of "
            "another run, and its figures do not explain these results.")


def build_profile(trace_dir: str | Path, plots: PlotSink, results: Sequence[Result] = ()) -> BuiltSection:
    docs = load_trace_docs(trace_dir)  # read once: with kernel-level spans the files are large
    result = analyze_docs(docs)
    ranks = spans_of(docs)
    blocks: list[Block] = []
    if results and (why := foreign_trace(docs, results)):
        print(f"report: warning: --trace {trace_dir}: {why}", file=sys.stderr)
        blocks.append({"kind": "alert", "text": why})
    blocks.append({"kind": "text", "text": f"Traces in {trace_dir}: {len(ranks)} rank(s). "
                                           "Times are since a barrier all ranks left together."})
    if not result["ranks"]:  # a collectives or kernels trace: where its time went
        for r in result["spans"]:
            blocks.append({"kind": "table",
                           "caption": f"Rank {r['rank']}: the longest of its {r['spans']} measurement span(s), "
                                      f"{r['total_us'] / 1e3:.3f} ms in all",
                           "columns": ["span", "ms", "share"],
                           "rows": [[t["name"], f"{t['us'] / 1e3:.3f}", f"{100 * t['share']:.1f}%"] for t in r["top"]]})
        return {"key": "profile", "title": "Profile", "blocks": blocks}

    # One step: the last one of rank 0, and the step of the same index on every other rank.
    steps0 = step_spans(ranks[min(ranks)])
    index = len(steps0) - 1
    fig, (ax,) = new_figure(width=8.0, height=0.8 + 0.55 * len(ranks))
    t0: float | None = None
    for row, rank in enumerate(sorted(ranks)):
        steps = step_spans(ranks[rank])
        if index >= len(steps):
            continue
        lo, hi = steps[index]["ts"], steps[index]["ts"] + steps[index]["dur"]
        t0 = lo if t0 is None else min(t0, lo)
        for e in ranks[rank]:
            cat = e.get("cat")
            if cat not in COLORS or e["ts"] + e["dur"] < lo or e["ts"] > hi:
                continue
            y, h = (row - 0.05, 0.3) if cat == COMMUNICATION else (row - 0.4, 0.35)
            ax.broken_barh([(e["ts"] / 1e3, e["dur"] / 1e3)], (y, h), color=COLORS[cat], linewidth=0)
    ax.set_yticks(range(len(ranks)))
    ax.set_yticklabels([f"rank {r}" for r in sorted(ranks)])
    ax.set_xlabel("time (ms)")
    ax.set_title(f"step {index}: compute (blue), blocked waits (red), phases (grey), collectives in flight (orange, below)")
    if t0 is not None:
        ax.set_xlim(left=t0 / 1e3)
    ax.invert_yaxis()
    blocks.append(plots.save(fig, "profile_gantt", "one step, every rank", "a Gantt chart of one training step on every rank"))

    fig, (ax,) = new_figure(width=7.5, height=0.6 + 0.4 * len(result["ranks"]))
    labels = [f"rank {r['rank']}" for r in result["ranks"]]
    left = [0.0] * len(labels)
    for j, (part, color) in enumerate((("compute_us", "C0"), ("exposed_us", "C3"), ("idle_us", "0.7"))):
        widths = [r[part] / 1e3 for r in result["ranks"]]
        ax.barh(labels, widths, left=left, color=color, label=part[:-3].replace("exposed", "exposed communication"))
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("median per step (ms)")
    ax.set_title("where each rank's step goes")
    legend_beside(ax)
    ax.invert_yaxis()
    blocks.append(plots.save(fig, "profile_breakdown", "breakdown per rank",
                             "compute, exposed communication and idle time per rank"))

    rows = [[r["rank"], f"{r['step_us'] / 1e3:.3f}", f"{r['compute_us'] / 1e3:.3f}", f"{r['exposed_us'] / 1e3:.3f}",
             f"{r['idle_us'] / 1e3:.3f}", f"{r['communication_us'] / 1e3:.3f}",
             f"{100 * r['overlap']:.0f}%" if r["overlap"] is not None else "-", f"{100 * r['pipeline_bubble']:.1f}%"]
            for r in result["ranks"]]
    blocks.append({"kind": "table",
                   "caption": "Per rank, median per step (ms): compute + exposed communication + idle = step; overlap = compute "
                              "during communication / communication; bubble = blocked on pipeline receives / step",
                   "columns": ["rank", "step", "compute", "exposed", "idle", "communication", "overlap", "bubble"], "rows": rows})
    rows = [[s["rank"], s["steps"], s["collectives"], f"{s['median_skew_us'] / 1e3:.3f}", f"{s['max_skew_us'] / 1e3:.3f}",
             "late" if s["late"] else ""] for s in result["stragglers"]]
    blocks.append({"kind": "table",
                   "caption": "Arrival skew at the collectives (ms): how much later than the first member of its group each rank "
                              "started them, its largest in a step, the median and max over the steps; late = median above "
                              f"{result['straggler_threshold_ms']:g} ms and 3x the others'",
                   "columns": ["rank", "steps", "collectives", "median skew", "max skew", "straggler"], "rows": rows})
    cp = result.get("critical_path")
    if cp:
        blocks.append({"kind": "text", "text": format_path(cp).replace("# ", "", 1)})
        blocks.append({"kind": "table",
                       "caption": "The pipeline critical path, op by op: what held each op up (its stage's previous op, or the "
                                  "op it receives from) and the gap before it (ms)",
                       "columns": ["stage", "op", "start", "end", "gap before", "held by"],
                       "rows": [[p["stage"], p["op"], f"{p['start_us'] / 1e3:.3f}", f"{p['end_us'] / 1e3:.3f}",
                                 f"{p['gap_before_us'] / 1e3:.3f}", p["held_by"] or "-"] for p in cp["path"]]})
    if result["late_ranks"]:
        blocks.insert(1, {"kind": "alert", "text": "stragglers: " + ", ".join(f"rank {r}" for r in result["late_ranks"])})
    return {"key": "profile", "title": "Profile", "blocks": blocks}
