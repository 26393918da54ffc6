"""The training section's MoE tables: a run's expert load per layer, and under expert parallelism its all-to-alls per
direction, each set against the alltoallv sweep of the same result at the nearest size and the same ranks."""
from synthetic import make_doc, make_record, make_train

from reports.common.load import Result
from reports.html.sections.training import TrainingSection

DIRECTIONS = ("dispatch", "combine", "combine_backward", "dispatch_backward")


class Plots:
    def save(self, fig, name, title, alt):
        return {"kind": "plot", "file": name}


def exchange(calls, nbytes, rows, us):
    bus = nbytes / (us * 1e-6) / 1e9 * 0.5 if calls else None  # alltoallv's bus factor over 2 ranks
    return {"calls": calls, "rows_sent": rows * calls, "bytes_per_call": nbytes if calls else None, "largest_bytes": nbytes,
            "time_per_call_us": us if calls else None, "busbw_gbps": bus}


def moe_record(ep):
    layer = {"layer": "h.0.moe", "capacity": 80, "micro_batches": 6, "tokens_per_expert": [405, 419, 350, 362],
             "assignments": 1536, "imbalance": 1.0911, "worst_micro_batch_imbalance": 1.2969, "dropped": 4,
             "dropped_fraction": 4 / 1536, "aux_loss": 0.01003}
    if ep:
        layer["all_to_all"] = {"group_size": 2, "dispatch": exchange(4, 70528, 255, 50.0),
                               "combine": exchange(4, 1 << 20, 275, 100.0), "combine_backward": exchange(4, 70528, 255, 50.0),
                               "dispatch_backward": exchange(0, 0, 0, 0)}
    moe = {"experts": 4, "top_k": 2, "capacity_factor": 1.25, "aux_loss_coef": 0.01, "router_skew": 0, "layers": [layer]}
    return make_train(model="transformer", preset="moe-tiny", moe=moe)


def sweep(nbytes, busbw, ranks=2):
    rec = make_record(op="alltoallv", nbytes=nbytes)
    rec.update(ranks=ranks, busbw_gbps=busbw)
    return rec


def moe_tables(records):
    blocks = TrainingSection().build([Result(path="r.json", doc={}, records=records)], Plots())
    return [b for b in blocks if b["kind"] == "table" and ("expert load" in b["caption"] or "all-to-alls" in b["caption"])]


def test_the_expert_load_table_has_a_row_per_layer(validate):
    rec = moe_record(ep=False)
    validate(make_doc([rec]))
    (load,) = moe_tables([rec])  # no all-to-all table without expert parallelism
    assert load["columns"] == ["layer", "tokens per expert", "imbalance max/mean", "worst micro-batch", "capacity", "dropped",
                               "aux loss"]
    assert load["rows"] == [["h.0.moe", "405 419 350 362", "1.091", "1.297", 80, "4 of 1536 (0.26%)", "0.01003"]]
    assert "4 experts, top-2, capacity factor 1.25" in load["caption"]


def test_the_all_to_alls_are_set_against_the_sweep_at_the_nearest_size_and_the_same_ranks(validate):
    rec = moe_record(ep=True)
    # Sweep points: 64 KiB on 2 ranks (nearest to 70528 B), 1 MiB on 2 ranks, and 64 KiB on 4 (other ranks: never).
    sweeps = [sweep(65536, 2.0), sweep(1 << 20, 8.0), sweep(65536, 99.0, ranks=4)]
    validate(make_doc([rec, *sweeps]))
    _, a2a = moe_tables([rec, *sweeps])
    rows = {row[1]: row for row in a2a["rows"]}
    assert list(rows) == [d.replace("_", " ") for d in DIRECTIONS]
    dispatch = rows["dispatch"]
    assert dispatch[:6] == ["h.0.moe", "dispatch", 4, 70528, "255.0", "50.0"]
    assert dispatch[6] == f"{70528 / 50e-6 / 1e9 * 0.5:.3f}"
    assert dispatch[7] == "2.000 at 65536 B" and dispatch[8] == f"{100 * 70528 / 50e-6 / 1e9 * 0.5 / 2.0:.0f}%"
    assert rows["combine"][7] == "8.000 at 1048576 B"
    assert rows["dispatch backward"][2:] == [0, "-", "-", "-", "-", "-", "-"]  # no timed call
    assert "2 expert-parallel ranks" in a2a["caption"]


def test_without_a_sweep_the_all_to_alls_stand_alone():
    _, a2a = moe_tables([moe_record(ep=True)])
    assert all(row[7] == "-" and row[8] == "-" for row in a2a["rows"])
