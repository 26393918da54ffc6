"""`trainscope predict train`: compute rates from a one-process calibration run, a plan's schedules replayed over the
fitted costs, and the command's figures and one-line errors. Synthetic records with known costs, so every expected
figure is exact (no timing here)."""
import json

import pytest
from helpers import ROOT
from synthetic import make_doc, make_record, make_train, stats

from reports.__main__ import main
from reports.common.errors import InputError
from reports.common.load import Result, load_results
from reports.predict.compute import Wanted, compute_rates
from reports.predict.search import candidates
from reports.predict.step_figures import model_flops
from reports.predict.replay import Progress
from reports.predict.train_command import PlanDoc

FORWARD_US, BACKWARD_US, OPTIMIZER_US = 300.0, 500.0, 40.0
FORWARD_FLOPS, PARAMETERS = 1e6, 2000


def calibration_train(micro_batch=8, scale=1.0, **extra):
    """A one-process mlp tiny run at `micro_batch` whose phases took the constants above (times `scale`)."""
    rec = make_train(backend="cpu", device="cpu", precision="float32", flops_per_step=3 * FORWARD_FLOPS,
                     recompute_flops_per_step=0.0, parameters=PARAMETERS,
                     config={"resolved": {"micro_batch": micro_batch}},
                     phases_us={k: stats([v * scale] * 3) for k, v in
                                (("data", 1.0), ("forward", FORWARD_US), ("backward", BACKWARD_US),
                                 ("optimizer", OPTIMIZER_US))},
                     step_time_us=stats([900.0 * scale, 1000.0 * scale, 1100.0 * scale]))
    rec.update(extra)
    return rec


WANTED = Wanted("mlp", "tiny", "float32", "cpu")


def result(records, path="cal.json"):
    return Result(path, make_doc(records), records=records)


def test_the_rates_are_the_phases_over_their_flops_and_elements():
    r = compute_rates([result([calibration_train()])], WANTED, 8)
    assert r.forward_us_per_flop == pytest.approx(FORWARD_US / FORWARD_FLOPS)
    assert r.backward_us_per_flop == pytest.approx(BACKWARD_US / (2 * FORWARD_FLOPS))
    assert r.optimizer_us_per_element == pytest.approx(OPTIMIZER_US / PARAMETERS)
    assert (r.band_low, r.band_high) == pytest.approx((0.1, 0.1))  # min 900 and p95 1100 about the median 1000


def test_a_recomputing_calibration_counts_its_recomputation_in_the_backward_only():
    """flops_per_step is the model's (3 forwards, recomputation not in it): the forward rate is over a third of it, the
    backward's over twice that plus recompute_flops_per_step (the forwards the backward ran again)."""
    r = compute_rates([result([calibration_train(recompute_flops_per_step=FORWARD_FLOPS / 2)])], WANTED, 8)
    assert r.forward_us_per_flop == pytest.approx(FORWARD_US / FORWARD_FLOPS)
    assert r.backward_us_per_flop == pytest.approx(BACKWARD_US / (2.5 * FORWARD_FLOPS))


def test_the_nearest_micro_batch_in_ratio_is_taken():
    runs = [calibration_train(4, 1.0), calibration_train(16, 2.0), calibration_train(64, 3.0)]
    assert compute_rates([result(runs)], WANTED, 12).micro_batch == 16  # 16/12 is nearer than 12/4
    assert compute_rates([result(runs)], WANTED, 8).micro_batch == 16   # a tie in ratio: the larger one
    assert compute_rates([result(runs)], WANTED, 2).micro_batch == 4


DP2 = {"name": "dp=2", "dp": 2, "tp": 1, "pp": 1, "zero": 0, "sync": "allreduce", "overlap": True}


def test_a_plain_data_parallel_run_calibrates_per_rank_and_is_preferred_at_its_world_size():
    """Its FLOPs are the world's: each rank's forward phase did half of them, under the other rank's contention."""
    one, two = calibration_train(8), calibration_train(8, 2.0, world_size=2, layout=DP2)
    r = compute_rates([result([one, two])], WANTED, 8, ranks=2)
    assert r.ranks == 2 and r.forward_us_per_flop == pytest.approx(2 * FORWARD_US / (FORWARD_FLOPS / 2))
    assert compute_rates([result([one, two])], WANTED, 8, ranks=1).ranks == 1
    assert compute_rates([result([calibration_train(16), two])], WANTED, 16, ranks=2).micro_batch == 16  # size first


def test_of_several_ranks_the_rates_are_the_slowest_ranks_with_its_host_time():
    """The measured step waited for the rank whose compute took longest: its phases' compute alone (each less the
    communication calls made inside it: the backward phases held 150 and 100 us of a bucket's issue) are the rates, and its
    data wait and idle time (the step less compute, data and sync) the host time each predicted step holds."""
    def row(rank, forward, backward, data, idle, backward_phase=None):
        return {"rank": rank, "forward_us": forward, "backward_us": backward_phase or backward, "optimizer_us": 40.0,
                "forward_compute_us": forward, "backward_compute_us": backward, "data_us": data, "idle_us": idle}
    rows = [row(0, 300.0, 500.0, 10.0, 30.0, backward_phase=650.0), row(1, 360.0, 600.0, 20.0, 40.0, backward_phase=700.0)]
    r = compute_rates([result([calibration_train(8, world_size=2, layout=DP2, ranks=rows)])], WANTED, 8, ranks=2)
    assert (r.rank, r.host_us) == (1, 60.0)
    assert r.forward_us_per_flop == pytest.approx(360 / (FORWARD_FLOPS / 2))
    assert r.backward_us_per_flop == pytest.approx(600 / FORWARD_FLOPS)
    assert "2-rank data-parallel train (rank 1: its compute the longest)" in r.describe()
    assert "outside the phases 60.0 us per step" in r.describe()
    # A record whose rows predate the phases: process 0's phases_us, and its own row's host time; no rows, none.
    legacy = calibration_train(8, world_size=2, layout=DP2, ranks=[{"rank": 0, "data_us": 10.0, "idle_us": 15.0}])
    r = compute_rates([result([legacy])], WANTED, 8, ranks=2)
    assert (r.rank, r.host_us, r.forward_us_per_flop) == (0, 25.0, pytest.approx(FORWARD_US / (FORWARD_FLOPS / 2)))
    assert compute_rates([result([calibration_train()])], WANTED, 8).host_us == 0


TP2 = DP2 | {"name": "tp=2", "dp": 1, "tp": 2}


def tp_rows(forward, forward_flops, recompute_flops=0.0):
    """A tensor-parallel run's two rows: each rank computed `forward_flops` (its slices' share) in `forward` us and
    updated 0.55 of the parameters (its slices' and the layers no slice splits) in 40 us."""
    return [{"rank": rank, "forward_us": forward, "backward_us": 2 * forward, "optimizer_us": 40.0,
             "forward_compute_us": forward, "backward_compute_us": 2 * forward, "data_us": 0.0, "idle_us": 0.0,
             "forward_flops": forward_flops, "recompute_flops": recompute_flops, "optimizer_elements": 0.55 * PARAMETERS}
            for rank in (0, 1)]


def test_a_tensor_parallel_run_calibrates_per_its_ranks_own_flops():
    """Each rank computed 0.6 of the model's forward (its slices, and the layers no slice splits, whole): its rates are
    its phases over those, not over the model's FLOPs halved; its backward ran its recomputation too; its optimizer
    is per the elements it updated, not the model's parameters."""
    run = calibration_train(8, world_size=2, layout=TP2, ranks=tp_rows(240.0, 0.6 * FORWARD_FLOPS, 0.1 * FORWARD_FLOPS))
    r = compute_rates([result([run])], WANTED, 8, ranks=2, tp=2)
    assert (r.tp, r.ranks) == (2, 2)
    assert r.forward_us_per_flop == pytest.approx(240 / (0.6 * FORWARD_FLOPS))
    assert r.backward_us_per_flop == pytest.approx(480 / (1.3 * FORWARD_FLOPS))
    assert r.optimizer_us_per_element == pytest.approx(40 / (0.55 * PARAMETERS))
    assert "2-rank tensor-parallel (tp 2) train (rank 0: its compute the longest)" in r.describe()


def test_a_tensor_parallel_run_without_its_ranks_flops_calibrates_nothing():
    """A record written before the rows carried FLOPs: the model's over the ranks is not a slice's."""
    rows = [{k: v for k, v in row.items() if not k.endswith("_flops")} for row in tp_rows(240.0, 0.0)]
    with pytest.raises(InputError, match="no completed one-process"):
        compute_rates([result([calibration_train(8, world_size=2, layout=TP2, ranks=rows)])], WANTED, 8, tp=2)


@pytest.mark.parametrize("micro_batch, tp, chosen", [(16, 2, ("tp2", 16)), (16, 1, ("one", 16)), (16, 4, ("tp2", 16)),
                                                     (4, 2, ("one", 4)), (8, 2, ("tp2", 16))])
def test_a_layout_takes_the_run_nearest_its_micro_batch_and_tensor_parallel_degree(micro_batch, tp, chosen):
    """The GEMMs' rows (the micro-batch) and columns (the slice): the two distances in ratio added. A tp 2 layout at
    micro-batch 4 is nearer the one-process run at 4 (a factor 2 away) than the tp 2 run at 16 (a factor 4); at 8 the
    tp 2 run at 16 (a factor 2) is nearer than either one-process run (2 x 2)."""
    runs = [calibration_train(4), calibration_train(16),
            calibration_train(16, world_size=2, layout=TP2, ranks=tp_rows(240.0, 0.6 * FORWARD_FLOPS))]
    r = compute_rates([result(runs)], WANTED, micro_batch, ranks=2 if tp > 1 else 1, tp=tp)
    assert ("tp2" if r.tp == 2 else "one", r.micro_batch) == chosen


@pytest.mark.parametrize("other", [dict(world_size=2), dict(world_size=2, layout=DP2 | {"zero": 1}), dict(preset="small"),
                                   dict(precision="bfloat16"), dict(backend="cuda"), dict(completed=False)])
def test_a_calibration_without_a_matching_one_process_run_is_one_line(other):
    with pytest.raises(InputError, match=r"no completed one-process \(or plain data- or tensor-parallel\) train run of mlp tiny "
                                         r"in float32 on cpu: run "
                                         r"`trainscope train --model mlp --preset tiny --batch 8"):
        compute_rates([result([calibration_train(**other)])], WANTED, 8)


# A plan of dp 2: each rank one layer's forward and backward, the gradients' all-reduce, the update. Costs chosen so
# that every figure is exact: forward 1e5 FLOPs x 3e-4 us = 30 us, backward 2e5 x 2.5e-4 = 50 us, the optimizer
# 1000 elements x 0.02 us = 20 us, the all-reduce of 40000 B on the line 10 us + 1e-3 us/B = 50 us: a step of 150 us.
LAYER_FLOPS, BUCKET, ELEMENTS = 100_000, 40_000, 1000
MIB = 1 << 20  # the plan's memory per rank: states 4 MiB + 0.5 in flight, activations 1.5, total 6.5 (0.5 of transfers)
AR_ALPHA, AR_BETA = 10.0, 1e-3
STEP = 30 + 50 + 50 + 20


def schedule(extra_bytes=0):
    return {"events": [{"compute": "forward", "layer": 0, "micro_batch": 0, "flops": LAYER_FLOPS},
                       {"compute": "backward", "layer": 0, "micro_batch": 0, "flops": 2 * LAYER_FLOPS},
                       {"issue": 1, "op": "all_reduce", "group": "dp", "group_size": 2, "members": [0, 1],
                        "bytes": BUCKET + extra_bytes},
                       {"wait": 1}, {"compute": "optimizer", "elements": ELEMENTS}]}


def plan_record(rank, ranks=2, sched=None, unsupported=None):
    rec = {"kind": "train_plan", "ranks": ranks, "rank": rank, "layout": "dp=2", "model": "mlp", "preset": "tiny",
           "coordinates": {"dp_rank": rank, "pp_rank": 0, "tp_rank": 0}, "stage": 0, "stages": 1, "layers_from": 0,
           "layers_to": 1, "layers": [{"index": 0, "forward_flops": float(LAYER_FLOPS), "parameters": ELEMENTS}],
           "micro_batch": 8, "micro_batches": 1, "parameters": ELEMENTS, "leading_parameters": 0,
           "forward_flops_per_micro_batch": float(LAYER_FLOPS), "flops_per_step": 3.0 * LAYER_FLOPS,
           "formula_bytes": {"gradients": MIB, "in_flight": {"gradients": 0.0, "parameters": MIB / 2}, "master_weights": 0.0,
                             "model_states": 4 * MIB, "optimizer": 2 * MIB, "parameters": MIB},
           "activation_bytes": 1.5 * MIB, "pipeline_comm_buffer_bytes": MIB // 2, "total_bytes": 6.5 * MIB,
           "memory_limit_bytes": None, "fits": None}
    if unsupported:
        rec.update(schedule=None, schedule_unsupported=unsupported)
    else:
        rec["schedule"] = sched or schedule()
    return rec


def plan_doc(records):
    doc = make_doc(records)
    doc["run"]["subcommand"] = "train"
    doc["run"]["config"].update(batch=16, precision="float32", device="cpu")
    return doc


def sweep_records(op="all_reduce", issue=None, scale=1.0):
    """The op's records on the exact line (alpha and beta times `scale`); `issue`: the MPI calls' form they say (none:
    a record written before the field, a blocking call)."""
    recs = []
    for n in (1024, 65536, 1 << 20):
        r = make_record(op=op, nbytes=n, samples=[scale * (AR_ALPHA + n * AR_BETA)] * 5)
        r["ranks"] = r["processes"] = 2
        if issue:
            r["issue"] = issue
        recs.append(r)
    return recs


@pytest.fixture
def files(write_doc):
    cal = write_doc("cal.json", make_doc([calibration_train()] + sweep_records()))
    plan = write_doc("plan.json", plan_doc([plan_record(0), plan_record(1)]))
    return str(cal), str(plan)


def predict(args, capsys):
    code = main(["predict", "train", *args])
    return code, capsys.readouterr()


def prediction(path):
    """The one train_prediction record of a `predict train --json` result, read as report and compare read it (the
    schema validated)."""
    (res,) = load_results([str(path)])
    (rec,) = res.records
    assert rec["kind"] == "train_prediction" and res.run["subcommand"] == "predict"
    return rec


def test_a_plan_replayed_over_known_costs_gives_the_exact_step(files, capsys, tmp_path):
    cal, plan = files
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", cal, "--plan", plan, "--json", str(out)], capsys)
    assert code == 0, got.err
    doc = prediction(out)
    assert doc["step_us"] == pytest.approx(STEP)
    for row in doc["per_rank"]:
        assert row["compute_us"] == pytest.approx(80) and row["transfer_us"] == pytest.approx(50)
        assert row["optimizer_us"] == pytest.approx(20) and row["idle_us"] == 0
        assert row["waiting_us"] == pytest.approx(0) and row["pipeline_wait_us"] == 0
    # The band: compute at the calibration's fastest (-10%) and p95 (+10%) steps; the exact line's band is 0.
    assert doc["band_us"] == pytest.approx([STEP - 0.1 * 100, STEP + 0.1 * 100])
    assert f"# step: {STEP:.1f} us" in got.out and "throughput 106666.7 samples/s" in got.out


def averaging_window():
    """Model averaging every 2 steps: the step of schedule() twice, its all-reduce only after the second update."""
    compute, (ar, wait, optimizer) = schedule()["events"][:2], schedule()["events"][2:]
    return {"events": compute + [optimizer] + compute + [optimizer, ar, wait], "steps": 2}


def test_a_window_of_steps_is_predicted_as_its_mean_step(capsys, write_doc, tmp_path):
    """Two steps of 30 + 50 + 20 us and one all-reduce of 50 us: a window of 250 us, a mean step of 125 us."""
    cal = write_doc("cal.json", make_doc([calibration_train()] + sweep_records()))
    plan = write_doc("plan.json", plan_doc([plan_record(r, sched=averaging_window()) for r in (0, 1)]))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", str(cal), "--plan", str(plan), "--json", str(out)], capsys)
    assert code == 0, got.err
    doc = prediction(out)
    assert doc["step_us"] == pytest.approx(125)
    for row in doc["per_rank"]:
        assert (row["compute_us"], row["optimizer_us"], row["transfer_us"]) == pytest.approx((80, 20, 25))
    assert doc["band_us"] == pytest.approx([125 - 0.1 * 100, 125 + 0.1 * 100])
    assert "# step: 125.0 us" in got.out
    assert "# the plan's steps differ: each figure is the mean step of its window of 2 steps (250.0 us)" in got.out


HOST = 25.0  # a calibration whose one rank spent 10 us waiting for data and 15 us idle per step


def test_the_calibrations_host_time_starts_every_ranks_step(write_doc, capsys, tmp_path):
    """The data wait and the host's work outside the phases are in no event of the plan: every rank spends the
    calibration's before its step's first event, so the step is the replay's plus it, a column of its own; neither
    compute's what-if nor a fabric's scales it."""
    rows = [{"rank": 0, "dp_rank": 0, "tp_rank": 0, "pp_rank": 0, "step_us": 1000.0, "compute_us": 840.0,
             "communication_us": 0.0, "exposed_communication_us": 0.0, "waiting_for_peers_us": 0.0,
             "exposed_transfer_us": 0.0, "pipeline_wait_us": 0.0, "data_us": 10.0, "idle_us": 15.0}]
    cal = write_doc("cal.json", make_doc([calibration_train(ranks=rows)] + sweep_records()))
    plan = write_doc("plan.json", plan_doc([plan_record(0), plan_record(1)]))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", str(cal), "--plan", str(plan), "--compute-speedup", "2", "--json", str(out)],
                        capsys)
    assert code == 0, got.err
    doc = prediction(out)
    assert doc["step_us"] == pytest.approx(STEP + HOST) and doc["compute"]["host_us"] == pytest.approx(HOST)
    for row in doc["per_rank"]:
        assert row["host_us"] == pytest.approx(HOST) and row["compute_us"] == pytest.approx(80)
    # The band: the host time at the calibration's fastest and p95 steps too.
    assert doc["band_us"] == pytest.approx([STEP + HOST - 0.1 * (100 + HOST), STEP + HOST + 0.1 * (100 + HOST)])
    (faster,) = doc["what_if"]  # compute twice as fast: 80 + 20 us halved, the all-reduce and the host time kept
    assert faster["step_us"] == pytest.approx(50 + 50 + HOST)
    assert "host(us)" in got.out and "outside the phases 25.0 us per step" in got.out


def test_a_fabric_what_if_swaps_the_bandwidth_and_keeps_the_latency(files, capsys, tmp_path):
    cal, plan = files
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", cal, "--plan", plan, "--fabric", "ib-ndr", "--json", str(out)], capsys)
    assert code == 0, got.err
    (what_if,) = prediction(out)["what_if"]
    assert (what_if["name"], what_if["kind"]) == ("ib-ndr", "fabric")
    # ib-ndr: 50 GB/s per direction = 2e-5 us/B per step; all_reduce at 2 ranks: 2 steps of alpha (5 us each on the
    # fitted line 10 us = 2 alpha), 1 x n x beta.
    assert what_if["step_us"] == pytest.approx(100 + AR_ALPHA + BUCKET * 2e-5)


def test_a_measured_run_is_put_beside_with_its_error(files, capsys, write_doc, tmp_path):
    cal, plan = files
    run = make_train(backend="cpu", device="cpu", precision="float32", world_size=2, preset="tiny",
                     layout={"name": "dp=2", "dp": 2, "tp": 1, "pp": 1, "zero": 0, "sync": "allreduce", "overlap": True},
                     step_time_us=stats([200.0] * 3),
                     ranks=[{"rank": r, "dp_rank": r, "tp_rank": 0, "pp_rank": 0, "step_us": 200.0, "compute_us": 100.0,
                             "communication_us": 70.0, "exposed_communication_us": 70.0, "waiting_for_peers_us": 10.0,
                             "exposed_transfer_us": 60.0, "pipeline_wait_us": 0.0, "data_us": 12.0, "idle_us": 18.0}
                            for r in (0, 1)])
    measured = write_doc("run.json", make_doc([run]))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", cal, "--plan", plan, "--measured", str(measured), "--json", str(out)], capsys)
    assert code == 0, got.err
    m = prediction(out)["measured"]
    assert m["error"] == pytest.approx((STEP - 200) / 200) and m["within_band"] is False
    assert (m["step_us"], m["source"]) == (200.0, str(measured))
    assert m["ranks"][0] == {"rank": 0, "step_us": 200.0, "compute_us": None, "host_us": 30.0, "blocked_us": 70.0,
                             "waiting_us": 10.0, "pipeline_wait_us": 0.0, "model_states_bytes": None,
                             "activation_bytes": None, "total_bytes": None}
    # no account, no compute alone (a record before it); the host time the data wait and idle time
    assert m["mfu"] == dict.fromkeys(("measured_ceiling_tflops", "vs_measured", "datasheet_gpu", "datasheet_peak_tflops",
                                      "vs_datasheet"))  # the record states no MFU
    assert "error (predicted - measured) / measured -25.0%\n# the measured step lies outside the band" in got.out


def test_errors_are_one_line(files, capsys, write_doc):
    cal, plan = files
    cases = [
        (["--plan", str(write_doc("async.json", plan_doc([plan_record(0, unsupported="asynchronous: no step"),
                                                          plan_record(1, unsupported="asynchronous: no step")])))],
         "rank 0 has no schedule to replay: asynchronous: no step"),
        (["--plan", str(write_doc("one.json", plan_doc([plan_record(1)])))], "its ranks are not 0..1, once each"),
        (["--plan", cal], "holds no train_plan record"),
        (["--plan", plan, "--measured", cal], "no completed train run of mlp tiny, dp=2 at 2 ranks (micro-batch 8 x 1) "
                                              "on cpu in float32 (it has: mlp tiny single at 1 (cpu, float32))"),
    ]
    for extra, message in cases:
        code, got = predict(["--calibration", cal, *extra], capsys)
        assert code == 2 and message in got.err and len(got.err.strip().splitlines()) == 1, got.err
    nosweep = write_doc("nosweep.json", make_doc([calibration_train()] + sweep_records("all_gather")))
    code, got = predict(["--calibration", str(nosweep), "--plan", plan], capsys)
    assert code == 2 and "holds no usable all_reduce record (it has: all_gather)" in got.err


def test_search_tries_every_split_of_the_ranks_each_zero_stage_and_micro_batch_count():
    got = {(c.dp, c.tp, c.pp, c.zero, c.micro_batches) for c in candidates(4)}
    splits = {(4, 1, 1), (2, 2, 1), (2, 1, 2), (1, 4, 1), (1, 2, 2), (1, 1, 4)}
    want = {(dp, tp, pp, z, m * pp) for dp, tp, pp in splits for z in (range(4) if dp > 1 else (0,))
            for m in ((1, 2, 4) if pp > 1 else (1,))}
    assert got == want and len(candidates(4)) == len(want)


@pytest.mark.parametrize("flags, message", [
    ([], "give the model's train flags after --"),
    (["--", "--model", "mlp", "--dp", "2"], "--dp is set by each candidate"),
    (["--", "--model", "mlp", "--zero=3"], "--zero=3 is set by each candidate"),
])
def test_search_refuses_flags_it_sets_in_one_line(files, capsys, flags, message, monkeypatch):
    cal, _ = files
    monkeypatch.setenv("TRAINSCOPE_BIN", "/nonexistent")
    code = main(["predict", "search", "--calibration", cal, "--ranks", "2", *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_search_without_the_binary_says_how_to_run_it(files, capsys, monkeypatch):
    cal, _ = files
    monkeypatch.delenv("TRAINSCOPE_BIN", raising=False)
    code = main(["predict", "search", "--calibration", cal, "--ranks", "2", "--", "--model", "mlp"])
    assert code == 2 and "run it as `trainscope predict search`" in capsys.readouterr().err


@pytest.mark.parametrize("script, message", [
    ("echo 'first line' >&2; echo 'Segfault-ish: the last line' >&2; exit 1", "exit 1: Segfault-ish: the last line"),
    ("kill -SEGV $$", "killed by SIGSEGV"),
    ("exec sleep 30", "made no plan in 1 s (stopped)"),
])
def test_a_candidate_whose_plan_fails_otherwise_than_refusing_stops_the_search_in_one_line(
        files, capsys, monkeypatch, tmp_path, script, message):
    """Exit 2 is the trainer refusing a layout (listed as skipped); any other failure, a signal, or a plan that does
    not come is a fault of the trainer's, named in one line with the command."""
    cal, _ = files
    fake = tmp_path / "trainscope"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TRAINSCOPE_BIN", str(fake))
    monkeypatch.setattr("reports.predict.search.PLAN_TIMEOUT_S", 1)
    code = main(["predict", "search", "--calibration", cal, "--ranks", "2", "--", "--model", "mlp"])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("# plan ")]
    assert code == 2 and len(err) == 1 and err[0].endswith(message) and str(fake) in err[0], err


def test_what_a_target_needs_and_a_compute_what_if(files, capsys, tmp_path):
    """150 us = compute 100 (forward, backward, optimizer) + an all-reduce of 10 us latency and 40 us of bytes."""
    cal, plan = files
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", cal, "--plan", plan, "--target-ms", "0.13", "--compute-speedup", "2",
                         "--json", str(out)], capsys)
    assert code == 0, got.err
    doc = prediction(out)
    bandwidth, compute = doc["target"]["needs"]
    assert bandwidth["factor"] == pytest.approx(2.0, rel=1e-6)  # 100 + 10 + 40/2
    assert compute["factor"] == pytest.approx(1.25, rel=1e-6)  # 100/1.25 + 50
    assert doc["what_if"] == [{"name": "compute 2x", "kind": "compute", "detail": "compute 2 times the calibration's speed",
                               "step_us": pytest.approx(100.0)}]
    assert doc["fastest"] == "compute 2x" and doc["target"]["step_us"] == pytest.approx(130.0)
    assert "# to reach 0.13 ms: every collective's bandwidth 2.00x faster" in got.out
    code, got = predict(["--calibration", cal, "--plan", plan, "--target-ms", "0.1"], capsys)
    assert "every collective's bandwidth alone cannot reach 0.100 ms: even 1e+06x leaves 0.110 ms" in got.out
    assert "# to reach 0.1 ms: compute 2.00x faster" in got.out
    for flag in ("--target-ms", "--compute-speedup"):
        for bad in ("0", "nan", "-1"):
            code, got = predict(["--calibration", cal, "--plan", plan, flag, bad], capsys)
            assert code == 2 and "a finite number above 0" in got.err


def test_the_prediction_is_a_trainscope_result_naming_what_it_was_made_from(files, capsys, tmp_path):
    """--json writes one train_prediction record in a result document the schema validates (prediction() loads it
    as report and compare do): the job, the inputs, the compute rates and each collective's fit, the breakdown."""
    cal, plan = files
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", cal, "--plan", plan, "--fabric", "ib-ndr", "--json", str(out)], capsys)
    assert code == 0, got.err
    rec = prediction(out)
    assert {k: rec[k] for k in ("model", "preset", "layout", "ranks", "backend", "precision", "batch", "micro_batch",
                                "micro_batches", "plan", "calibration", "transport")} == {
        "model": "mlp", "preset": "tiny", "layout": "dp=2", "ranks": 2, "backend": "cpu", "precision": "float32",
        "batch": 16, "micro_batch": 8, "micro_batches": 1, "plan": plan, "calibration": [cal], "transport": None}
    compute = rec["compute"]
    assert (compute["source"], compute["micro_batch"]) == (cal, 8)
    assert compute["forward_us_per_flop"] == pytest.approx(FORWARD_US / FORWARD_FLOPS)
    assert compute["description"].startswith("one-process train at micro-batch 8")
    (ar,) = rec["collectives"]
    assert (ar["op"], ar["group_size"], ar["fitted_ranks"], ar["points"], ar["measured_bytes"]) == \
        ("all_reduce", 2, [2], 3, [1024, 1 << 20])
    assert ar["series"]["op"] == "all_reduce" and ar["description"][0].startswith("fitted at 2 ranks from 3 record(s)")
    (regime,) = ar["regimes"]  # the exact line: one regime, 2 steps of 5 us at 2 ranks
    assert regime == {"measured_bytes": [1024, 1 << 20], "alpha_us": pytest.approx(AR_ALPHA),
                      "beta_us_per_byte": pytest.approx(AR_BETA), "per_step_alpha_us": pytest.approx(AR_ALPHA / 2),
                      "per_step_beta_us_per_byte": pytest.approx(AR_BETA), "band_relative": pytest.approx(0, abs=1e-9)}
    assert [r["coordinates"] for r in rec["per_rank"]] == [{"dp_rank": r, "pp_rank": 0, "tp_rank": 0} for r in (0, 1)]
    assert rec["throughput_per_s"] == pytest.approx(16 / STEP * 1e6)
    assert rec["target"] is None and rec["measured"] is None and rec["fastest"] == "ib-ndr"
    run = json.loads(out.read_text())["run"]
    assert run["command_line"] == ["trainscope", "predict", "train", "--calibration", cal, "--plan", plan, "--issue",
                                   "nonblocking", "--cache", "cold", "--fabric", "ib-ndr", "--fabric-link", "auto", "--json",
                                   str(out)]
    assert run["config"]["label"] == "prediction: mlp tiny, dp=2 at 2 ranks (micro-batch 8 x 1)"
    assert [h["hostname"] for h in run["hosts"]] == ["node-a"]  # the calibration's: the cluster it is of


def test_progress_decides_whether_an_issued_collective_hides_behind_compute(write_doc, files, capsys, tmp_path):
    """The all-reduce issued before the backward (50 us each): independent, it runs beside it (100 us); in-waits, as
    MPI's do, it moves only once waited for (150 us). auto follows the calibration's backend: MPI here."""
    cal, _ = files
    overlapped = {"events": [{"compute": "forward", "layer": 0, "micro_batch": 0, "flops": LAYER_FLOPS},
                             {"issue": 1, "op": "all_reduce", "group": "dp", "group_size": 2, "members": [0, 1],
                              "bytes": BUCKET},
                             {"compute": "backward", "layer": 0, "micro_batch": 0, "flops": 2 * LAYER_FLOPS},
                             {"wait": 1}, {"compute": "optimizer", "elements": ELEMENTS}]}
    plan = write_doc("overlapped.json", plan_doc([plan_record(0, sched=overlapped), plan_record(1, sched=overlapped)]))
    steps = {}
    for progress in ("independent", "in-waits", "auto"):
        out = tmp_path / f"{progress}.json"
        code, got = predict(["--calibration", cal, "--plan", str(plan), "--progress", progress, "--json", str(out)], capsys)
        assert code == 0, got.err
        record = next(r for r in json.loads(out.read_text())["records"] if r["kind"] == "train_prediction")
        steps[progress] = (record["step_us"], record["progress"])
    assert steps == {"independent": (pytest.approx(100.0), "independent"), "in-waits": (pytest.approx(150.0), "in-waits"),
                     "auto": (pytest.approx(150.0), "in-waits")}


def test_the_schema_names_the_replays_modes_of_progress():
    """The record's `progress` enum is the replay's Progress, declared there once."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("progress"), dict) and "enum" in node["progress"]:
                found.append(node["progress"]["enum"])
            node = list(node.values())
        if isinstance(node, list):
            for v in node:
                walk(v)
    walk(json.loads((ROOT / "reports" / "schema" / "result-v1.schema.json").read_text()))
    assert found == [[p.value for p in Progress]]


# ---- MFU and memory per rank ----

# Peaks per rank in TFLOP/s: the step's model FLOPs 2 x (1e5 + 2e5) = 6e5 in 150 us on 2 ranks are 2 GFLOP/s per rank,
# half the 4 GFLOP/s ceiling and a quarter of the 8 GFLOP/s datasheet peak.
PEAKS = {"measured_ceiling_tflops": 4e-3, "vs_measured": 0.4, "datasheet_gpu": "H100 SXM", "datasheet_peak_tflops": 8e-3,
         "vs_datasheet": 0.2, "clock_mhz": None, "ceiling_suspect": False, "datasheet": None,
         "measured": {"tflops": 4e-3, "precision": "float32", "source": "gemm square 512", "clock_mhz": None, "mfu": 0.4,
                      "rechecked": False, "ceiling_suspect": False}}


def test_mfu_is_the_model_flops_over_the_step_the_ranks_and_each_peak_of_the_calibration(write_doc, capsys, tmp_path):
    cal = write_doc("cal.json", make_doc([calibration_train(mfu=PEAKS)] + sweep_records()))
    plan = write_doc("plan.json", plan_doc([plan_record(0), plan_record(1)]))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", str(cal), "--plan", str(plan), "--json", str(out)], capsys)
    assert code == 0, got.err
    m = prediction(out)["mfu"]
    assert m == {"model_flops_per_step": 6e5, "source": str(cal), "measured_ceiling_tflops": 4e-3,
                 "vs_measured": pytest.approx(0.5), "vs_measured_band": pytest.approx([6e5 / 1.28e6, 6e5 / 1.12e6]),
                 "no_measured_ceiling": None, "datasheet_gpu": "H100 SXM", "datasheet_peak_tflops": 8e-3,
                 "vs_datasheet": pytest.approx(0.25)}
    assert ("# MFU: 50.0% of the measured GEMM ceiling (band 46.9%..53.6%; 0.004 TFLOP/s per rank, float32, the "
            "calibration run's); 25.0% of the H100 SXM datasheet peak (0.008 TFLOP/s at the calibration run's clock); "
            "model FLOPs per step 6e+05 (forward + backward, recomputation not counted, as a train record's)\n") in got.out


def test_without_a_measured_ceiling_mfu_is_a_dash_and_why(write_doc, capsys, tmp_path):
    """A calibration run with --no-ceiling states an MFU block of nulls; one without a block (untimed, older) none."""
    nulls = {k: None for k in PEAKS} | {"ceiling_suspect": False}
    nc = calibration_train(mfu=nulls, config={"resolved": {"micro_batch": 8}, "ceiling": False})
    plan = write_doc("plan.json", plan_doc([plan_record(0), plan_record(1)]))
    for rec, why in ((nc, "ran with --no-ceiling (calibrate without it for this figure)"),
                     (calibration_train(), "states no MFU (its steps untimed, or written before MFU was)")):
        cal = write_doc("cal.json", make_doc([rec] + sweep_records()))
        out = tmp_path / "p.json"
        code, got = predict(["--calibration", str(cal), "--plan", str(plan), "--json", str(out)], capsys)
        assert code == 0, got.err
        assert f"# MFU: - against a measured GEMM ceiling: {cal}'s train run {why}; model FLOPs per step 6e+05" in got.out
        m = prediction(out)["mfu"]
        assert m["no_measured_ceiling"] == f"{cal}'s train run {why}"
        assert m["vs_measured"] is m["vs_measured_band"] is m["vs_datasheet"] is None
    # A measured run with a ceiling of its own: its figure stands beside the dash.
    run = write_doc("run.json", make_doc([measured_run()]))
    code, got = predict(["--calibration", str(cal), "--plan", str(plan), "--measured", str(run)], capsys)
    assert code == 0 and f"# MFU: - against a measured GEMM ceiling: {cal}'s train run {why}, measured 40.0% of its " \
                         "own 0.004; model FLOPs per step 6e+05" in got.out


def plan_of(events_per_rank, tp):
    """A PlanDoc of len(events_per_rank) ranks, rank r at tensor-parallel coordinate r % tp."""
    records = [plan_record(r, ranks=len(events_per_rank), sched={"events": ev}) for r, ev in enumerate(events_per_rank)]
    for r in records:
        r["coordinates"]["tp_rank"] = r["rank"] % tp
    return PlanDoc("plan.json", records, 16, "float32", "cpu")


def test_the_model_flops_are_the_plans_flops_per_step_once_per_tensor_parallel_slice():
    """Every tensor-parallel slice's record counts its layers whole (flops_per_step, as the trainer's forwardFlops
    does), while its events carry its own share: 2 slices of a layer of 3e5 model FLOPs a step, each computing forward
    5e4 + backward 1e5 (and a recomputation), are the model's 3e5 (a train record's flops_per_step), not the events'."""
    events = [{"compute": "forward", "layer": 0, "micro_batch": 0, "flops": LAYER_FLOPS / 2},
              {"compute": "recompute", "layer": 0, "micro_batch": 0, "flops": LAYER_FLOPS / 2},
              {"compute": "backward", "layer": 0, "micro_batch": 0, "flops": LAYER_FLOPS},
              {"compute": "optimizer", "elements": 5}]
    assert model_flops(plan_of([events, events], tp=2)) == 3 * LAYER_FLOPS
    assert model_flops(plan_of([events, events], tp=1)) == 6 * LAYER_FLOPS  # two replicas: each its own micro-batches


def measured_memory():
    """A dp=2 train record's memory account: each rank's model states peaked at 5 MiB, activations at 1.5 MiB, in all
    8 MiB."""
    peaks = dict.fromkeys(("parameters", "gradients", "optimizer", "master_weights", "comm_buffers", "workspace"), MIB)
    return {"limit_bytes": None, "ranks": [{"rank": r, "model_states_bytes": 5 * MIB, "total_peak_bytes": 8 * MIB,
                                            "setup_peak_bytes": 5 * MIB, "formula_bytes": plan_record(0)["formula_bytes"],
                                            "peak_bytes": peaks | {"activations": 1.5 * MIB}} for r in (0, 1)]}


def measured_run():
    """A dp=2 run of the plan's job, 200 us a step, with its memory account and MFU (40% of its ceiling)."""
    return make_train(backend="cpu", device="cpu", precision="float32", world_size=2, preset="tiny", layout=DP2,
                      step_time_us=stats([200.0] * 3), memory=measured_memory(), mfu=PEAKS,
                      ranks=[{"rank": r, "dp_rank": r, "tp_rank": 0, "pp_rank": 0, "step_us": 200.0, "compute_us": 100.0,
                              "communication_us": 70.0, "exposed_communication_us": 70.0, "waiting_for_peers_us": 10.0,
                              "exposed_transfer_us": 60.0, "pipeline_wait_us": 0.0} for r in (0, 1)])


def test_memory_per_rank_and_the_exposed_communication_per_group_beside_the_measured(files, capsys, write_doc, tmp_path):
    """The plan's states (4 MiB of formula + 0.5 in flight), activations and total per rank, each beside the measured
    run's peaks; the all-reduce's 50 us are dp's. The measured run's MFU stands beside the predicted one."""
    cal, plan = files
    cal_mfu = write_doc("cal-mfu.json", make_doc([calibration_train(mfu=PEAKS)] + sweep_records()))
    measured = write_doc("run.json", make_doc([measured_run()]))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", str(cal_mfu), "--plan", plan, "--measured", str(measured), "--json", str(out)],
                        capsys)
    assert code == 0, got.err
    rec = prediction(out)
    for row in rec["per_rank"]:
        assert row["exposed_by_group_us"] == {"dp": pytest.approx(50.0)}
        assert (row["model_states_bytes"], row["activation_bytes"], row["total_bytes"]) == (4.5 * MIB, 1.5 * MIB, 6.5 * MIB)
    assert {k: rec["measured"]["ranks"][1][k] for k in ("model_states_bytes", "activation_bytes", "total_bytes")} == {
        "model_states_bytes": 5 * MIB, "activation_bytes": 1.5 * MIB, "total_bytes": 8 * MIB}
    assert rec["measured"]["mfu"]["vs_measured"] == 0.4
    lines = got.out.splitlines()
    head = next(i for i, x in enumerate(lines) if "states(MiB)" in x)
    assert lines[head].split() == ["#", "rank", "coordinates", "states(MiB)", "activations(MiB)", "total(MiB)", "dp(us)",
                                   "(memory:", "the", "plan's", "formulas;", "then", "the", "exposed", "communication",
                                   "per", "group,", "predicted", "alone;", "measured", "memory", "beside:", "predicted", "/",
                                   "measured)"]
    rows = [[str(r), f"dp{r}", "4.5/5.0", "1.5/1.5", "6.5/8.0", "50.0"] for r in (0, 1)]
    assert [x.split() for x in lines[head + 1:head + 3]] == rows
    assert "50.0% of the measured GEMM ceiling (band 46.9%..53.6%; 0.004 TFLOP/s per rank, float32, the calibration " \
           "run's), measured 40.0% of its own 0.004; 25.0% of the H100 SXM datasheet peak (0.008 TFLOP/s at the " \
           "calibration run's clock), measured 20.0% of its own 0.008; model FLOPs" in got.out


# The nonblocking calls' series at 1.5 times the blocking line: the all-reduce of the plan 75 us instead of 50.
NONBLOCKING_STEP = 30 + 50 + 1.5 * 50 + 20


@pytest.mark.parametrize(("forms", "args", "step", "costed"), [
    # Both measured: the nonblocking series by default (the trainer's calls), the blocking one when asked.
    (("blocking", "nonblocking"), [], NONBLOCKING_STEP, "nonblocking for all_reduce (--issue nonblocking)"),
    (("blocking", "nonblocking"), ["--issue", "blocking"], STEP, "blocking for all_reduce (--issue blocking)"),
    # A calibration of records written before the field (blocking calls): those, and the line says so.
    ((None,), [], STEP, "blocking for all_reduce (--issue nonblocking; the calibration measured all_reduce in the "
                        "other form only: collectives --issue both measures both)"),
    (("nonblocking",), ["--issue", "blocking"], NONBLOCKING_STEP, "nonblocking for all_reduce (--issue blocking; the "
                                                                  "calibration measured all_reduce in the other form only"),
])
def test_the_step_is_costed_from_the_calls_form_the_trainer_issues_where_measured(write_doc, capsys, tmp_path, forms,
                                                                                  args, step, costed):
    sweeps = [r for form in forms for r in sweep_records(issue=form, scale=1.5 if form == "nonblocking" else 1.0)]
    cal = str(write_doc("cal.json", make_doc([calibration_train()] + sweeps)))
    plan = str(write_doc("plan.json", plan_doc([plan_record(0), plan_record(1)])))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", cal, "--plan", plan, *args, "--json", str(out)], capsys)
    assert code == 0, got.err
    rec = prediction(out)
    assert rec["step_us"] == pytest.approx(step)
    assert rec["issue"] == (args[1] if args else "nonblocking")
    assert rec["collectives"][0]["series"]["issue"] == ("nonblocking" if step == NONBLOCKING_STEP else "blocking")
    assert f"# MPI calls costed as measured {costed}" in got.out


def cached_records(cache, scale):
    recs = sweep_records(scale=scale)
    for r in recs:
        if cache:
            r["cache"] = cache
    return recs


@pytest.mark.parametrize(("caches", "step", "described"), [
    # Both measured: the cold series (a step's collectives find their buffers evicted), named on the fit's line.
    (("hot", "cold"), STEP + 25, "all_reduce float32 out-of-place, cold caches"),
    ((None,), STEP, "all_reduce float32 out-of-place"),  # records before the field: hot, as they are
    (("cold",), STEP + 25, "all_reduce float32 out-of-place, cold caches"),
])
def test_the_step_is_costed_from_cold_cache_series_where_measured(write_doc, capsys, tmp_path, caches, step, described):
    sweeps = [r for cache in caches for r in cached_records(cache, 1.5 if cache == "cold" else 1.0)]
    cal = str(write_doc("cal.json", make_doc([calibration_train()] + sweeps)))
    plan = str(write_doc("plan.json", plan_doc([plan_record(0), plan_record(1)])))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", cal, "--plan", plan, "--json", str(out)], capsys)
    assert code == 0, got.err
    rec = prediction(out)
    assert rec["step_us"] == pytest.approx(step)
    assert rec["collectives"][0]["series"]["cache"] == ("cold" if step != STEP else "hot")
    line = "# collectives costed from cold caches for all_reduce (--cache cold)"
    assert (line in got.out) is (step != STEP), got.out  # a calibration from before --cache: no line
    assert f"# {described} on 2 ranks" in got.out or f"# all_reduce on 2 ranks, intra-host ({described}" in got.out, got.out


def test_an_op_measured_hot_only_is_costed_so_and_named(write_doc, capsys):
    cal = str(write_doc("cal.json", make_doc([calibration_train()] + cached_records("hot", 1.0))))
    plan = str(write_doc("plan.json", plan_doc([plan_record(0), plan_record(1)])))
    code, got = predict(["--calibration", cal, "--plan", plan, "--cache", "cold"], capsys)
    assert code == 0, got.err
    assert "# collectives costed from" not in got.out, got.out  # nothing cold at all: nothing chosen, no line
    cold_other = cached_records("cold", 1.0)
    for r in cold_other:
        r["op"] = "all_gather"  # cold series of another op: this calibration knows --cache
    cal = str(write_doc("cal2.json", make_doc([calibration_train()] + cached_records("hot", 1.0) + cold_other)))
    code, got = predict(["--calibration", cal, "--plan", plan], capsys)
    assert code == 0, got.err
    assert "# collectives costed from hot caches for all_reduce (--cache cold; the calibration measured all_reduce from the " \
        "other caches only: collectives --cache both measures both)" in got.out, got.out


def test_predict_collectives_predicts_the_hot_sweep_where_both_were_measured(write_doc, capsys):
    cal = str(write_doc("cal.json", make_doc(cached_records("hot", 1.0) + cached_records("cold", 1.5))))
    code = main(["predict", "collectives", "--calibration", cal, "--op", "all_reduce", "--ranks", "2", "--bytes", "1M"])
    got = capsys.readouterr()
    assert code == 0, got.err
    assert "# trainscope predict collectives: all_reduce float32 out-of-place on 2 ranks" in got.out, got.out


def alltoallv_records(pattern, weights, scale=1.0):
    """sweep_records' line for alltoallv, of these per-pair counts (collectives --alltoallv-counts)."""
    recs = sweep_records("alltoallv", scale=scale)
    for r in recs:
        r["alltoallv_counts"] = {"pattern": pattern, "weights": weights}
    return recs


def exchange_schedule():
    """schedule()'s step with its collective a mixture's exchange over the ep group (train --plan --ep 2: balanced
    routing's uniform exchange, as the plan takes it)."""
    events = schedule()["events"]
    events[2] = events[2] | {"op": "alltoallv", "group": "ep"}
    return {"events": events}


UNIFORM, SKEWED = [[1, 1], [1, 1]], [[2, 0], [2, 1]]  # ExchangeMatrix::uniform(2), ::skewed(2)


def test_an_expert_parallel_plans_exchanges_are_costed_from_the_uniform_alltoallv_series(capsys, write_doc, tmp_path):
    """Beside a skewed series three times slower, the uniform one (the plan's balanced exchange) costs the alltoallv:
    the step is schedule()'s exactly."""
    cal = write_doc("cal.json", make_doc([calibration_train()] + alltoallv_records("uniform", UNIFORM)
                                         + alltoallv_records("skewed", SKEWED, scale=3.0)))
    plan = write_doc("plan.json", plan_doc([plan_record(r, sched=exchange_schedule()) for r in (0, 1)]))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", str(cal), "--plan", str(plan), "--json", str(out)], capsys)
    assert code == 0, got.err
    doc = prediction(out)
    assert doc["step_us"] == pytest.approx(STEP)
    assert [row["exposed_by_group_us"] for row in doc["per_rank"]] == [{"ep": pytest.approx(50)}] * 2
    (costed,) = doc["collectives"]
    assert (costed["op"], costed["series"]["counts"]) == ("alltoallv", "uniform")
    assert "# alltoallv on 2 ranks, intra-host (alltoallv float32 out-of-place, uniform counts): fitted" in got.out


def test_an_expert_parallel_plan_over_skewed_alltoallv_records_only_is_one_line(capsys, write_doc):
    cal = write_doc("cal.json", make_doc([calibration_train()] + alltoallv_records("skewed", SKEWED)))
    plan = write_doc("plan.json", plan_doc([plan_record(r, sched=exchange_schedule()) for r in (0, 1)]))
    code, got = predict(["--calibration", str(cal), "--plan", str(plan)], capsys)
    assert code == 2 and len(got.err.strip().splitlines()) == 1, got.err
    assert "the calibration holds no alltoallv records with counts uniform (it has: skewed): `collectives --ops alltoallv " \
           "--alltoallv-counts uniform` measures them" in got.err


def in_place_schedule(in_place):
    """schedule()'s step with its all-reduce as the trainer's plan writes it now: called in place or not."""
    events = schedule()["events"]
    events[2] = events[2] | {"in_place": in_place}
    return {"events": events}


def placed_records(in_place, scale):
    recs = sweep_records(scale=scale)
    for r in recs:
        r["in_place"] = in_place
    return recs


@pytest.mark.parametrize("in_place,placements,step,fell_back", [
    # The trainer's all-reduce in place: costed from the in-place series (twice the line: the all-reduce 100 us).
    (True, (False, True), STEP + 50, False),
    (False, (False, True), STEP, False),  # an op called out of place: the out-of-place series, as before
    (True, (False,), STEP, True),  # no in-place series: the out-of-place one, and the console names the op
])
def test_an_op_is_costed_from_the_series_of_the_placement_the_trainer_calls_it_in(write_doc, capsys, tmp_path, in_place,
                                                                                 placements, step, fell_back):
    sweeps = [r for p in placements for r in placed_records(p, 2.0 if p else 1.0)]
    cal = str(write_doc("cal.json", make_doc([calibration_train()] + sweeps)))
    plan = str(write_doc("plan.json", plan_doc([plan_record(r, sched=in_place_schedule(in_place)) for r in (0, 1)])))
    out = tmp_path / "p.json"
    code, got = predict(["--calibration", cal, "--plan", plan, "--json", str(out)], capsys)
    assert code == 0, got.err
    rec = prediction(out)
    assert rec["step_us"] == pytest.approx(step)
    assert rec["collectives"][0]["series"]["placement"] == ("in" if in_place and not fell_back else "out")
    line = "# called in place, costed from out-of-place series (the calibration measured none in place"
    assert (line in got.out) is fell_back, got.out
    assert ("all_reduce float32 in place" in got.out) is (in_place and not fell_back), got.out


def test_in_place_series_that_cannot_be_told_apart_are_one_line_not_a_fallback(write_doc, capsys):
    """The out-of-place series stand in only where no in-place one was measured: in-place series of two algorithms
    are the user's choice to make, one line, not silently replaced by the out-of-place costs."""
    algos = [r | {"algo": algo} for algo in ("ring", "tree") for r in placed_records(True, 2.0)]
    cal = str(write_doc("cal.json", make_doc([calibration_train()] + placed_records(False, 1.0) + algos)))
    plan = str(write_doc("plan.json", plan_doc([plan_record(r, sched=in_place_schedule(True)) for r in (0, 1)])))
    code, got = predict(["--calibration", cal, "--plan", plan], capsys)
    lines = [line for line in got.err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, got.err
    assert "holds all_reduce records of several algos (ring, tree)" in lines[0], lines


def test_an_op_whose_placement_is_not_a_boolean_is_one_line(write_doc, capsys):
    sched = schedule()
    sched["events"][2]["in_place"] = "yes"
    cal = str(write_doc("cal.json", make_doc([calibration_train()] + sweep_records())))
    plan = str(write_doc("plan.json", plan_doc([plan_record(r, sched=sched) for r in (0, 1)])))
    code, got = predict(["--calibration", cal, "--plan", plan], capsys)
    lines = [line for line in got.err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "'in_place': 'yes'" in lines[0], got.err  # the result schema's word
