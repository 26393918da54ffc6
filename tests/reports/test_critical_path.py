"""The pipeline critical path on a hand-made two-stage GPipe step whose answer is worked out by hand:
stage 0 runs F0 F1 ... B1 B0, stage 1 runs F0 F1 B1 B0; the path is the chain of ops that held each next
one up, with the transfer gaps between stages."""
from reports.traces.critical_path import critical_path, format_path


def doc(pp_rank, ops, step=(0.0, 80.0), dp_rank=0):
    events = [{"ph": "X", "cat": "step", "name": "step 0", "ts": step[0], "dur": step[1] - step[0], "pid": pp_rank, "tid": 0}]
    for name, start, end in ops:
        events.append({"ph": "X", "cat": "compute", "name": name, "ts": start, "dur": end - start, "pid": pp_rank, "tid": 0})
        events.append({"ph": "X", "cat": "compute", "name": "forward layer 1", "ts": start, "dur": 1.0, "pid": pp_rank, "tid": 0})
    return {"traceEvents": events, "trainscope": {"about": {"pp": 2, "pp_rank": pp_rank, "dp_rank": dp_rank, "tp_rank": 0}}}


STAGE0 = [("forward 0", 0, 10), ("forward 1", 10, 20), ("backward 1", 50, 60), ("backward 0", 60, 70)]
STAGE1 = [("forward 0", 12, 22), ("forward 1", 22, 32), ("backward 1", 32, 42), ("backward 0", 42, 52)]


def test_the_path_follows_the_op_that_held_each_one_up():
    cp = critical_path({0: doc(0, STAGE0), 1: doc(1, STAGE1)})
    assert [(p["stage"], p["op"]) for p in cp["path"]] == [(0, "forward 0"), (1, "forward 0"), (1, "forward 1"), (1, "backward 1"),
                                                          (0, "backward 1"), (0, "backward 0")]
    assert [p["gap_before_us"] for p in cp["path"]] == [0, 2, 0, 0, 8, 0]
    assert [p["held_by"] for p in cp["path"]] == [None, "receive", "stage", "stage", "receive", "stage"]
    assert cp["compute_us"] == 60 and cp["gap_us"] == 10 and cp["receive_gap_us"] == 10
    assert cp["length_us"] == 70 and cp["before_us"] == 0 and cp["after_us"] == 10 and cp["step_us"] == 80
    assert "s0:F0 -> s1:F0 -> s1:F1 -> s1:B1 -> s0:B1 -> s0:B0" in format_path(cp)


def test_a_slow_transfer_moves_the_path():
    # stage 0's F1 is slow: stage 1's F1 now waits on it (a receive), not on its own F0
    late = [("forward 0", 12, 22), ("forward 1", 40, 50), ("backward 1", 50, 60), ("backward 0", 60, 70)]
    s0 = [("forward 0", 0, 10), ("forward 1", 10, 30), ("backward 1", 62, 72), ("backward 0", 72, 78)]
    cp = critical_path({0: doc(0, s0), 1: doc(1, late)})
    hops = [(p["stage"], p["op"]) for p in cp["path"]]
    assert hops[:2] == [(0, "forward 0"), (0, "forward 1")] and hops[2] == (1, "forward 1")
    assert cp["path"][2]["gap_before_us"] == 10 and cp["path"][2]["held_by"] == "receive"


def test_no_path_without_a_pipeline_and_only_data_parallel_rank_zero_counts():
    flat = doc(0, STAGE0)
    flat["trainscope"]["about"]["pp"] = 1
    assert critical_path({0: flat}) is None
    # a second data-parallel replica of the stages is ignored (its path would be the same work)
    cp = critical_path({0: doc(0, STAGE0), 1: doc(1, STAGE1), 2: doc(0, STAGE0, dp_rank=1), 3: doc(1, STAGE1, dp_rank=1)})
    assert cp["stages"] == 2 and len(cp["path"]) == 6


def test_the_path_ends_at_the_first_stages_last_backward_though_a_send_ends_later():
    """A stage's backward span holds its blocking send, which can end after the first stage has received the gradient
    and finished its own backward (seen once in a 4-stage traced run): the step still ends on stage 0's last backward,
    the op nothing else depends on."""
    s1 = [("forward 0", 12, 22), ("forward 1", 22, 32), ("backward 1", 32, 42), ("backward 0", 42, 75)]
    s0 = [("forward 0", 0, 10), ("forward 1", 10, 20), ("backward 1", 50, 60), ("backward 0", 62, 70)]
    cp = critical_path({0: doc(0, s0), 1: doc(1, s1)})
    assert (cp["path"][0]["stage"], cp["path"][0]["op"]) == (0, "forward 0")
    assert (cp["path"][-1]["stage"], cp["path"][-1]["op"]) == (0, "backward 0")
