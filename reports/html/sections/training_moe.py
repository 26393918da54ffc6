"""The training section's mixture-of-experts tables: per MoE run, each layer's expert load (the record's "moe": tokens
per expert, max/mean over the run and its worst micro-batch, the drops, the auxiliary loss) and, under expert
parallelism, each layer's all-to-alls per direction (process 0's, per call over the timed steps) set against the
alltoallv sweep of the same result at the nearest size and the same ranks."""
from collections.abc import Callable

from ...common.json_types import Block, Record
from ...common.load import Result
from .collective_sweep import attainable

Namer = Callable[[Result, Record], str]

# The record's directions (layers/moe.h MoeExchange), in the order a micro-batch runs them.
DIRECTIONS = ("dispatch", "combine", "combine_backward", "dispatch_backward")


def _load_table(run: str, moe: Record) -> Block:
    rows = []
    for layer in moe["layers"]:
        dropped = f"{layer['dropped']} of {layer['assignments']} ({100 * layer['dropped_fraction']:.2f}%)"
        rows.append([layer["layer"], " ".join(str(n) for n in layer["tokens_per_expert"]), f"{layer['imbalance']:.3f}",
                     f"{layer['worst_micro_batch_imbalance']:.3f}", layer["capacity"], dropped, f"{layer['aux_loss']:.5f}"])
    capacity = f"capacity factor {moe['capacity_factor']:g}" if moe["capacity_factor"] is not None else "no capacity limit"
    return {"kind": "table",
            "caption": f"{run}: expert load per MoE layer over every training micro-batch process 0 ran ({moe['experts']} "
                       f"experts, top-{moe['top_k']}, {capacity}): the assignments routed to each expert before dropping, "
                       "their max/mean (1: balanced; experts / top-k: all on top-k experts) over the run and in the worst "
                       "micro-batch, each expert's capacity per micro-batch, the assignments dropped beyond it, and the "
                       "load-balancing loss (coefficient included)",
            "columns": ["layer", "tokens per expert", "imbalance max/mean", "worst micro-batch", "capacity", "dropped",
                        "aux loss"],
            "rows": rows}


def _all_to_all_table(result: Result, run: str, moe: Record) -> Block | None:
    rows = []
    for layer in moe["layers"]:
        a2a = layer.get("all_to_all")
        if not a2a:
            continue
        for d in DIRECTIONS:
            x = a2a[d]
            if not x["calls"]:
                rows.append([layer["layer"], d.replace("_", " "), 0, "-", "-", "-", "-", "-", "-"])
                continue
            sweep = attainable(result, {"op": "alltoallv", "group_size": a2a["group_size"], "bytes": x["bytes_per_call"]})
            bus = x["busbw_gbps"]
            rows.append([layer["layer"], d.replace("_", " "), x["calls"], round(x["bytes_per_call"]),
                         f"{x['rows_sent'] / x['calls']:.1f}", f"{x['time_per_call_us']:.1f}",
                         f"{bus:.3f}" if bus is not None else "-",
                         f"{sweep['busbw_gbps']:.3f} at {sweep['bytes']} B" if sweep else "-",
                         f"{100 * bus / sweep['busbw_gbps']:.0f}%" if sweep and bus is not None else "-"])
    if not rows:
        return None
    ranks = next(layer["all_to_all"]["group_size"] for layer in moe["layers"] if layer.get("all_to_all"))
    return {"kind": "table",
            "caption": f"{run}: each MoE layer's all-to-alls over the {ranks} expert-parallel ranks, per call over the timed "
                       "steps (process 0's): the tokens' rows to their experts (dispatch) and back (combine) in the "
                       "forward, the same two in the backward; bytes as the collectives sweep counts an alltoallv's (the "
                       "busiest rank's buffer), the rows process 0 sent, launch to completion (a late peer's wait "
                       "included), bus bandwidth, and what the alltoallv sweep in the same result attained at the "
                       "nearest size and the same ranks",
            "columns": ["layer", "direction", "calls", "bytes per call", "rows sent per call", "time (us)", "busbw (GB/s)",
                        "sweep busbw", "of attainable"],
            "rows": rows}


def moe_blocks(runs: list[tuple[Result, Record]], name: Namer) -> list[Block]:
    """Per run with a mixture of experts: its expert-load table, and its all-to-all table under expert parallelism."""
    blocks: list[Block] = []
    for r, x in runs:
        moe = x.get("moe")
        if not moe or not moe.get("layers"):
            continue
        blocks.append(_load_table(name(r, x), moe))
        exchanges = _all_to_all_table(r, name(r, x), moe)
        if exchanges:
            blocks.append(exchanges)
    return blocks
