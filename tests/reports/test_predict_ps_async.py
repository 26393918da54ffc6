"""`predict train` of a `--sync ps-async` plan: the steady state's bounds (reports/predict/ps_async.py) over known
costs, each figure exact (no timing here): a rank's own work per step, and the staleness chain over S + 1 steps."""
import pytest
from synthetic import make_doc
from test_predict_train import LAYER_FLOPS, ELEMENTS, calibration_train, plan_doc, plan_record, prediction, predict, sweep_records

from reports.common.errors import InputError
from reports.predict.ps_async import Bound, Facts, steady_state
from reports.predict.replay import Progress

# Each worker computes 30 + 50 us (test_predict_train's layer), the server's update is 20 us (its 1000 elements), one
# shard of 40000 B on the exact line 10 us + 1e-3 us/B is 50 us.
SHARD = 40_000
COMPUTE, UPDATE, T = 80.0, 20.0, 50.0


def facts(workers=2, servers=1, dedicated=True, staleness=0):
    """Every rank's facts, as the trainer's plan lays them out (async_ps.h): dedicated servers after the workers, else
    the first workers serve."""
    ranks = workers + (servers if dedicated else 0)
    out = {}
    for r in range(ranks):
        worker = r < workers
        shard = (r - workers if not worker else None) if dedicated else (r if r < servers else None)
        out[r] = Facts(workers, servers, dedicated, staleness, SHARD, shard, worker)
    return out


def own(f, host=0.0):
    return {r: (COMPUTE if x.worker else 0.0, UPDATE if x.shard is not None else 0.0, host if x.worker else 0.0)
            for r, x in f.items()}


@pytest.mark.parametrize("staleness,progress,step,bound", [
    # A worker: 80 + one shard sent (50) = 130; the server: 20 + two workers' shards (100) = 120; the chain 80 + 50 +
    # 20 + 50 = 200 over S + 1 steps.
    (0, Progress.IN_WAITS, 200, Bound.STALENESS),
    (1, Progress.IN_WAITS, 130, Bound.RANK),
    # Transfers beside compute: a worker's max(80, 50), the server's max(20, 100).
    (0, Progress.INDEPENDENT, 200, Bound.STALENESS),
    (3, Progress.INDEPENDENT, 100, Bound.RANK),  # the chain 50
])
def test_the_step_is_the_largest_bound(staleness, progress, step, bound):
    got, replayed = steady_state(facts(staleness=staleness), own(facts()), lambda a, b: T, progress)
    assert got.step_us == pytest.approx(step) and got.bound is bound
    assert got.chain_us == pytest.approx(200 / (staleness + 1)) and got.transfer_us == T
    assert replayed.step_us == pytest.approx(step)
    for t in replayed.ranks:  # each rank's own compute and update, the rest of the step waited for
        assert t.step_us == pytest.approx(step) and t.transfer_us == pytest.approx(step - sum(own(facts())[t.rank]))
        assert t.exposed_by_group_us == {"dp": pytest.approx(t.transfer_us)}


def test_a_workers_host_time_is_in_its_own_work_and_in_the_chain():
    """10 us of a worker's data wait per step: a worker's own work 80 + 10 + 50 = 140, the chain 90 + 50 + 20 + 50 = 210
    (S = 0), the server's 20 + 100 (it loads no data)."""
    got, replayed = steady_state(facts(), own(facts(), host=10.0), lambda a, b: T, Progress.IN_WAITS)
    assert (got.step_us, got.chain_us, got.bound) == (pytest.approx(210), pytest.approx(210), Bound.STALENESS)
    assert [t.host_us for t in replayed.ranks] == [10.0, 10.0, 0.0]
    got, _ = steady_state(facts(staleness=2), own(facts(), host=10.0), lambda a, b: T, Progress.IN_WAITS)
    assert (got.bound, got.rank_us) == (Bound.RANK, pytest.approx(140))


def test_a_worker_that_serves_does_both_and_sends_nothing_to_itself():
    """Workers serve (no dedicated server), 2 shards: rank 0 computes, updates shard 0, sends shard 1 to rank 1 and
    a version to rank 1: 80 + 20 + 2 x 50 = 200; rank 1 alike."""
    f = facts(servers=2, dedicated=False, staleness=2)
    got, _ = steady_state(f, own(f), lambda a, b: T, Progress.IN_WAITS)
    assert got.rank_us == pytest.approx(200) and got.step_us == pytest.approx(200) and got.bound is Bound.RANK
    f = facts(workers=3, servers=1, dedicated=False, staleness=2)  # rank 0 serves two others: 80 + 20 + 2 x 50
    got, _ = steady_state(f, own(f), lambda a, b: T, Progress.IN_WAITS)
    assert (got.bound_rank, got.rank_us) == (0, pytest.approx(200))


def test_many_workers_make_the_server_the_bound():
    f = facts(workers=8, staleness=4)  # the server: 20 + 8 x 50
    got, _ = steady_state(f, own(f), lambda a, b: T, Progress.IN_WAITS)
    assert (got.bound, got.bound_rank, got.step_us) == (Bound.RANK, 8, pytest.approx(420))


def test_a_plan_without_its_servers_is_one_line():
    f = {r: x for r, x in facts().items() if x.worker}
    with pytest.raises(InputError, match="names no worker or not every one of its 1 server"):
        steady_state(f, own(f), lambda a, b: T, Progress.IN_WAITS)


def ps_async_record(rank, staleness):
    f = facts(staleness=staleness)[rank]
    compute = [{"compute": "forward", "layer": 0, "micro_batch": 0, "flops": LAYER_FLOPS},
               {"compute": "backward", "layer": 0, "micro_batch": 0, "flops": 2 * LAYER_FLOPS}] if f.worker else []
    rec = plan_record(rank, ranks=3, sched={"events": compute + [{"compute": "optimizer",
                                                                  "elements": ELEMENTS if f.shard is not None else 0}]})
    rec["layout"] = f"dp=3 ps-async(S={staleness}, 1 server)"
    rec["ps_async"] = {"workers": 2, "servers": 1, "dedicated": True, "staleness": staleness, "shard_bytes": SHARD,
                       "shard": f.shard, "shard_elements": ELEMENTS if f.shard is not None else 0, "worker": f.worker}
    return rec


@pytest.mark.parametrize("staleness,step,bound", [(0, 200, "staleness"), (1, 130, "rank")])
def test_predict_train_gives_the_steady_state(staleness, step, bound, capsys, write_doc, tmp_path):
    cal = write_doc("cal.json", make_doc([calibration_train()] + sweep_records("sendrecv")))
    plan = write_doc("plan.json", plan_doc([ps_async_record(r, staleness) for r in range(3)]))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", str(cal), "--plan", str(plan), "--progress", "in-waits", "--json", str(out)],
                        capsys)
    assert code == 0, got.err
    doc = prediction(out)
    assert doc["step_us"] == pytest.approx(step)
    assert doc["ps_async"] == {"bound": bound, "bound_rank": 0, "rank_us": pytest.approx(130),
                               "chain_us": pytest.approx(200 / (staleness + 1)), "transfer_us": pytest.approx(T),
                               "staleness": staleness}
    assert [(r["compute_us"], r["optimizer_us"]) for r in doc["per_rank"]] == \
        [pytest.approx((COMPUTE, 0)), pytest.approx((COMPUTE, 0)), pytest.approx((0, UPDATE))]
    # The band: compute and update at the calibration's -10% and +10% (the exact line's transfers have none).
    low, high = ((72 + 2 * T + 18) / (staleness + 1), (88 + 2 * T + 22) / (staleness + 1)) if staleness == 0 else (122, 138)
    assert doc["band_us"] == pytest.approx([low, high])
    assert "# ps-async steady state: the step is " in got.out and f"# step: {step:.1f} us" in got.out


@pytest.mark.parametrize("ops,transfer,costed_from,not_from", [
    # A shard is one message one way: costed from the send series where the calibration swept it, the sendrecv one
    # (an exchange, here three times as slow) only where it did not (a calibration swept before send existed).
    (["sendrecv", "send"], T, "send", "sendrecv"),
    (["sendrecv"], 3 * T, "sendrecv", "send"),
])
def test_a_shards_transfer_is_costed_from_the_one_way_send_where_measured(ops, transfer, costed_from, not_from, capsys,
                                                                         write_doc, tmp_path):
    sweeps = [r for op in ops for r in sweep_records(op, scale=3.0 if op == "sendrecv" else 1.0)]
    cal = write_doc("cal.json", make_doc([calibration_train()] + sweeps))
    plan = write_doc("plan.json", plan_doc([ps_async_record(r, 1) for r in range(3)]))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", str(cal), "--plan", str(plan), "--progress", "in-waits", "--json", str(out)],
                        capsys)
    assert code == 0, got.err
    assert prediction(out)["ps_async"]["transfer_us"] == pytest.approx(transfer)
    assert f"# {costed_from} on 2 ranks" in got.out and f"# {not_from} on 2 ranks" not in got.out


def test_a_ps_async_schedule_with_an_op_is_one_line(capsys, write_doc):
    recs = [ps_async_record(r, 0) for r in range(3)]
    recs[0]["schedule"]["events"][1:1] = [{"issue": 1, "op": "all_reduce", "group": "dp", "group_size": 2,
                                           "members": [0, 1], "bytes": 8}, {"wait": 1}]
    cal = write_doc("cal.json", make_doc([calibration_train()] + sweep_records("sendrecv")))
    plan = write_doc("plan.json", plan_doc(recs))
    code, got = predict(["--calibration", str(cal), "--plan", str(plan)], capsys)
    assert code == 2 and "rank 0's ps-async schedule issues an op" in got.err


def test_a_calibration_without_sendrecv_is_one_line_naming_it(capsys, write_doc):
    """A shard's transfers are costed from the sendrecv sweep: a calibration that swept only all_reduce is one line
    saying what to measure, before any figure."""
    cal = write_doc("cal.json", make_doc([calibration_train()] + sweep_records("all_reduce")))
    plan = write_doc("plan.json", plan_doc([ps_async_record(r, 0) for r in range(3)]))
    code, got = predict(["--calibration", str(cal), "--plan", str(plan)], capsys)
    lines = [line for line in got.err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "sendrecv" in lines[0], got.err
    assert "# step:" not in got.out
