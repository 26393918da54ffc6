"""The training section's collectives table: each row set against the sweep at its own group's rank count."""
from synthetic import make_record

from reports.common.load import Result
from reports.html.sections.training import attainable


def sweep(op, nbytes, ranks, busbw):
    rec = make_record(op=op, nbytes=nbytes)
    rec.update(ranks=ranks, busbw_gbps=busbw)
    return rec


def issued(group, group_size, op="all_reduce", nbytes=1 << 20):
    return {"group": group, "group_size": group_size, "op": op, "bytes": nbytes}


def test_a_row_is_set_against_the_sweep_at_its_groups_rank_count():
    result = Result(path="r.json", doc={}, records=[sweep("all_reduce", 1 << 20, 2, 5.0), sweep("all_reduce", 1 << 20, 4, 9.0)])
    assert attainable(result, issued("tp", 2))["busbw_gbps"] == 5.0
    assert attainable(result, issued("dp", 4))["busbw_gbps"] == 9.0
    assert attainable(result, issued("pp", 8)) is None  # no sweep at 8 ranks
    assert attainable(result, issued("tp", 2, op="all_gather")) is None
