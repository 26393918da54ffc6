"""What the collectives sweep of a result attained, for an operation a training run issued: the training section sets its
collectives and its MoE layers' all-to-alls against it."""
from ...common.json_types import Record
from ...common.load import Result


def attainable(result: Result, issued: Record) -> Record | None:
    """The collectives-sweep record of the same result, op and rank count nearest in size to a collective the
    training issued (within a factor of 2; out-of-place preferred), or None. The rank count is that of the
    group the collective ran in (a tensor-parallel all-reduce is set against the sweep at the tp size)."""
    best: tuple[tuple[float, bool], Record] | None = None
    for rec in result.records_of("collective"):
        if rec["op"] != issued["op"] or rec["ranks"] != issued["group_size"] or not rec.get("busbw_gbps"):
            continue
        ratio = max(rec["bytes"], issued["bytes"]) / max(1, min(rec["bytes"], issued["bytes"]))
        if ratio > 2:
            continue
        key = (ratio, rec.get("in_place", False))
        if best is None or key < best[0]:
            best = (key, rec)
    return best[1] if best else None
