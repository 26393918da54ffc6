"""The critical path of one pipeline-parallel training step, from a `--trace` run's spans.

Each stage runs its micro-batches' forward and backward ops one after another; a forward on stage s needs
the same micro-batch's forward on stage s-1 (its activations arrive by a receive), a backward on stage s
needs the backward on stage s+1 (its gradient). Walking back from the op that ends the step (the last op no other
depends on: the first stage's last backward), each op's
predecessor is whichever of its two dependencies (the previous op on its stage, the op it receives from)
ended last: the one that held it up. The path alternates compute (the ops) and the gaps between them
(transfers, waiting on a receive, or the stage doing something else), and tells what to shorten first.
Each op on the path says what held it up (`held_by`: "stage", its stage's previous op; "receive", the
op it receives from) and the gap between that op's end and its own start.
Stages are told apart by the `about` entry trainscope writes in every trace file (the mesh and the rank's
coordinate on each axis, reports/common/mesh.py): a stage is a coordinate on the pipeline axis, and the path is that
of the ranks at 0 on every other axis.
"""
import re
import statistics
from typing import Any

from ..common.json_types import JsonObject, TraceDoc, TraceEvent

from ..common.mesh import coordinate, mesh_axes
from .intervals import step_spans
from .trace_roles import COMPUTE, STEP

STAGES = "pp"  # the mesh axis whose coordinate is the pipeline stage

OP = re.compile(r"^(forward|backward) (\d+)$")

Op = dict[str, Any]  # one forward or backward op of a stage: kind, micro, start_us, end_us (and where it sits)


def stage_ops(events: list[TraceEvent], step_index: int) -> tuple[TraceEvent | None, list[Op]]:
    """The forward/backward micro-batch ops of the step_index-th step span, in time order."""
    steps = step_spans(events)
    if step_index >= len(steps):
        return None, []
    s = steps[step_index]
    lo, hi = s["ts"], s["ts"] + s["dur"]
    ops = []
    for e in events:
        m = OP.match(e.get("name", ""))
        if m and e.get("cat") == COMPUTE and lo <= e["ts"] <= hi:
            ops.append({"kind": m.group(1), "micro": int(m.group(2)), "start_us": e["ts"], "end_us": e["ts"] + e["dur"]})
    return s, sorted(ops, key=lambda o: o["start_us"])


def step_path(stages: dict[int, list[TraceEvent]], step_index: int) -> JsonObject | None:
    """stages: {pp_rank: events}. The critical path of one step, or None when a stage lacks that step."""
    per_stage: dict[int, list[Op]] = {}
    step_spans: list[TraceEvent] = []
    for s, events in stages.items():
        span, ops = stage_ops(events, step_index)
        if span is None or not ops:
            return None
        per_stage[s] = ops
        step_spans.append(span)
    last_stage = max(per_stage)
    index: dict[tuple[int, str, int], Op] = {}
    for s, ops in per_stage.items():
        for i, op in enumerate(ops):
            op["stage"], op["position"] = s, i
            index[(s, op["kind"], op["micro"])] = op

    def dependencies(op: Op) -> list[tuple[Op, str]]:
        s = op["stage"]
        deps: list[tuple[Op, str]] = []
        if op["position"] > 0:
            deps.append((per_stage[s][op["position"] - 1], "stage"))
        cross = (s - 1, "forward", op["micro"]) if op["kind"] == "forward" else (s + 1, "backward", op["micro"])
        if op["kind"] == "forward" and s > 0 or op["kind"] == "backward" and s < last_stage:
            if cross in index:
                deps.append((index[cross], "receive"))
        return deps

    # The walk starts at the op that ends the step: the last one that no other op depends on (stage 0's last
    # backward). Not simply the last to end: a stage's backward span holds its send, which can end after the first
    # stage has received it and finished.
    needed = {id(d) for ops in per_stage.values() for op in ops for d, _ in dependencies(op)}
    ends = [ops[-1] for ops in per_stage.values()]
    cur = max([o for o in ends if id(o) not in needed] or ends, key=lambda o: o["end_us"])
    path = [dict(cur, via=None, gap_us=0.0)]
    while True:
        deps = dependencies(cur)
        if not deps:
            break
        pred, via = max(deps, key=lambda d: d[0]["end_us"])
        path[-1]["via"] = via
        path[-1]["gap_us"] = max(0.0, cur["start_us"] - pred["end_us"])
        path.append(dict(pred, via=None, gap_us=0.0))
        cur = pred
    path.reverse()
    start = min(sp["ts"] for sp in step_spans)
    end = max(sp["ts"] + sp["dur"] for sp in step_spans)
    compute = sum(p["end_us"] - p["start_us"] for p in path)
    gaps = sum(p["gap_us"] for p in path)
    receive_gaps = sum(p["gap_us"] for p in path if p["via"] == "receive")
    return {"step": step_index, "step_us": end - start, "length_us": path[-1]["end_us"] - path[0]["start_us"],
            "compute_us": compute, "gap_us": gaps, "receive_gap_us": receive_gaps,
            "before_us": path[0]["start_us"] - start, "after_us": end - path[-1]["end_us"],
            "path": [{"stage": p["stage"], "op": f"{p['kind']} {p['micro']}", "start_us": p["start_us"], "end_us": p["end_us"],
                      "gap_before_us": p["gap_us"], "held_by": p["via"]} for p in path]}


def critical_path(docs: dict[int, TraceDoc]) -> JsonObject | None:
    """docs: {rank: trace document}. None unless the run was pipeline parallel."""
    stages: dict[int, list[TraceEvent]] = {}
    for rank, doc in docs.items():
        about = doc.get("trainscope", {}).get("about", {})
        axes = mesh_axes(about)
        pipelined = any(a["name"] == STAGES and a["size"] > 1 for a in axes)
        if pipelined and all(coordinate(about, a["name"]) == 0 for a in axes if a["name"] != STAGES):
            stages[coordinate(about, STAGES)] = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    if len(stages) < 2:
        return None
    steps = min(sum(1 for e in ev if e.get("cat") == STEP) for ev in stages.values())
    paths = [p for p in (step_path(stages, k) for k in range(steps)) if p]
    if not paths:
        return None
    median = statistics.median_low([p["step_us"] for p in paths])
    chosen = next(p for p in paths if p["step_us"] == median)
    return dict(chosen, stages=len(stages), steps=len(paths))


def format_path(cp: JsonObject) -> str:
    hops = " -> ".join(f"s{p['stage']}:{p['op'][0].upper()}{p['op'].split()[1]}" for p in cp["path"])
    return "\n".join([
        f"# pipeline critical path of step {cp['step']} (the median step, {cp['step_us'] / 1e3:.3f} ms "
        f"over {cp['stages']} stages): {len(cp['path'])} ops",
        f"  {hops}",
        f"  on the path: compute {cp['compute_us'] / 1e3:.3f} ms, gaps {cp['gap_us'] / 1e3:.3f} ms "
        f"({cp['receive_gap_us'] / 1e3:.3f} ms waiting on a stage's send), before the first op {cp['before_us'] / 1e3:.3f} ms, "
        f"after the last {cp['after_us'] / 1e3:.3f} ms"])
