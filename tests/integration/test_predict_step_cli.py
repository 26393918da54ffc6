"""`trainscope predict train` and `predict search` end to end on this machine's own calibration (issue #41): a
collectives sweep at 2 ranks and one-process runs of the model, then plans the trainer makes. What is checked is
exact arithmetic against the inputs, never how close a prediction comes to a timing (that is the benchmark,
scripts/bench-predict-train.sh): each rank's predicted compute is its schedule's FLOPs at the calibration run's
rates; the search plans every candidate and ranks what it predicted."""
import json
import re
import subprocess

import pytest

from helpers import ROOT, base_env, run_trainscope

MODEL = ["--model", "mlp", "--preset", "tiny", "--batch", 8]


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("calibration")
    sweep = tmp / "sweep.json"
    r = run_trainscope(["collectives", "--backend", "mpi",
                        "--ops", "all_reduce,all_gather,reduce_scatter,broadcast,reduce,sendrecv,send",
                        "-b", 8, "-e", "256K", "-f", 16, "-n", 5, "-w", 1, "--placement", "out", "--json", sweep],
                       np=2, timeout=300)
    assert r.rc == 0, r.err
    files = [sweep]
    for batch in (2, 4, 8):  # the micro-batches the candidates run at: 8 over dp 2 or 1..4 micro-batches
        path = tmp / f"train-{batch}.json"
        r = run_trainscope(["train", "--model", "mlp", "--preset", "tiny", "--batch", batch, "--steps", 4,
                            "--warmup-steps", 1, "--no-ceiling", "--json", path], env={"TRAINSCOPE_THREADS": "1"})
        assert r.rc == 0, r.err
        files.append(path)
    return tmp, [str(f) for f in files]


def plan(tmp, name, layout, ranks=2, model=MODEL):
    path = tmp / f"{name}.json"
    r = run_trainscope(["train", *model, *layout, "--plan", ranks, "--json", path])
    assert r.rc == 0, r.err
    return path


def predict_train(files, plan_path, out):
    """`predict train` of the plan over the calibration: its train_prediction record."""
    r = run_trainscope(["predict", "train", "--calibration", *files, "--plan", plan_path, "--json", out])
    assert r.rc == 0, r.err
    (predicted,) = json.loads(out.read_text())["records"]  # a result of one train_prediction record
    return r, predicted


def train_record(path):
    return next(r for r in json.loads(open(path).read())["records"] if r["kind"] == "train")


@pytest.mark.parametrize("name, layout", [("zero3", ["--zero", 3]), ("pp2", ["--pp", 2, "--micro-batches", 4]),
                                          ("tp2", ["--tp", 2])])
def test_each_ranks_compute_is_its_schedules_flops_at_the_calibrations_rates(calibration, name, layout):
    tmp, files = calibration
    plan_path = plan(tmp, name, layout)
    r, predicted = predict_train(files, plan_path, tmp / f"{name}-predicted.json")
    records = [x for x in json.loads(plan_path.read_text())["records"] if x["kind"] == "train_plan"]
    micro = records[0]["micro_batch"]
    cal = train_record(next(f for f in files if f.endswith(f"train-{micro}.json")))
    forward = cal["flops_per_step"] / 3  # the model's, recomputation not in it (none here)
    rate = {"forward": cal["phases_us"]["forward"]["median"] / forward,
            "backward": cal["phases_us"]["backward"]["median"] / (2 * forward)}
    rate["recompute"] = rate["forward"]  # a forward run again (a stage that no longer holds a micro-batch's input)
    (mine,) = cal["ranks"]  # one process: its row's phases are phases_us, and its data wait and idle time the host's
    assert (mine["forward_us"], mine["backward_us"]) == (cal["phases_us"]["forward"]["median"],
                                                         cal["phases_us"]["backward"]["median"])
    for rec, row in zip(records, predicted["per_rank"]):
        events = [e for e in rec["schedule"]["events"] if e.get("compute") in rate]
        assert row["compute_us"] == pytest.approx(sum(e["flops"] * rate[e["compute"]] for e in events), rel=1e-9)
        assert row["host_us"] == pytest.approx(mine["data_us"] + mine["idle_us"], rel=1e-9)
        parts = row["compute_us"] + row["optimizer_us"] + row["host_us"] + row["waiting_us"] + row["transfer_us"]
        assert parts + row["pipeline_wait_us"] + row["idle_us"] == pytest.approx(predicted["step_us"], rel=1e-9)
    assert predicted["band_us"][0] <= predicted["step_us"] <= predicted["band_us"][1]
    # MFU's numerator is a train record's flops_per_step: the plan's flops_per_step (the model's) summed over one
    # tensor-parallel slice, every slice counting the same (tests/integration/test_train_plan.py); the calibration ran
    # with --no-ceiling, so no MFU against a ceiling.
    tp = len({rec["coordinates"]["tp_rank"] for rec in records})
    mfu = predicted["mfu"]
    assert mfu["model_flops_per_step"] == pytest.approx(sum(rec["flops_per_step"] for rec in records) / tp, rel=1e-12)
    assert mfu["vs_measured"] is None and "ran with --no-ceiling" in mfu["no_measured_ceiling"]
    assert "# MFU: - against a measured GEMM ceiling:" in r.out
    for rec, row in zip(records, predicted["per_rank"]):  # the plan's memory, and every blocked time under its group
        assert (row["activation_bytes"], row["total_bytes"]) == (rec["activation_bytes"], rec["total_bytes"])
        blocked = row["waiting_us"] + row["transfer_us"] + row["pipeline_wait_us"]
        assert sum(row["exposed_by_group_us"].values()) == pytest.approx(blocked, rel=1e-9, abs=1e-9)


def test_a_tensor_parallel_ranks_compute_is_half_the_one_process_one(calibration):
    """The mlp with its Linears in pairs (--set depth=3: 4 of them, column then row) at tp 2: each rank's schedule
    carries half of every layer's FLOPs (its slice's), so its predicted compute is half the one-process plan's at the
    same micro-batch and rates, while the model's FLOPs, MFU's, are the same."""
    tmp, files = calibration
    model = [*MODEL, "--set", "depth=3"]
    _, one = predict_train(files, plan(tmp, "paired-1", [], ranks=1, model=model), tmp / "paired-1-predicted.json")
    _, tp2 = predict_train(files, plan(tmp, "paired-tp2", ["--tp", 2], model=model), tmp / "paired-tp2-predicted.json")
    (alone,) = one["per_rank"]
    assert [row["compute_us"] for row in tp2["per_rank"]] == pytest.approx([alone["compute_us"] / 2] * 2, rel=1e-12)
    assert tp2["mfu"]["model_flops_per_step"] == pytest.approx(one["mfu"]["model_flops_per_step"], rel=1e-12)


def test_a_data_parallel_calibration_gives_the_rates_of_its_slowest_rank(calibration):
    """A 2-rank run's record has each rank's phase medians (compute_us their sum) and its forward and backward less
    the communication calls made inside them (a bucket issued in the backward); the prediction takes the rates (of
    those) and the host time of the rank whose compute took longest, and says which."""
    tmp, files = calibration
    dp2 = tmp / "train-dp2.json"
    r = run_trainscope(["train", *MODEL, "--dp", 2, "--steps", 4, "--warmup-steps", 1, "--no-ceiling", "--json", dp2],
                       np=2, env={"TRAINSCOPE_THREADS": "1"})
    assert r.rc == 0, r.err
    cal = train_record(dp2)
    rows = cal["ranks"]
    for row in rows:
        assert row["compute_us"] == pytest.approx(row["forward_us"] + row["backward_us"] + row["optimizer_us"], rel=1e-9)
        assert 0 < row["forward_compute_us"] <= row["forward_us"] and 0 < row["backward_compute_us"] <= row["backward_us"]
        assert (row["forward_flops"], row["recompute_flops"]) == (cal["flops_per_step"] / 2 / 3, 0)  # a replica's half
        assert row["optimizer_elements"] == cal["parameters"]  # every replica updates the whole model
    assert rows[0]["forward_us"] == cal["phases_us"]["forward"]["median"]  # process 0's, as phases_us
    slowest = max(rows, key=lambda k: (k["forward_compute_us"] + k["backward_compute_us"] + k["optimizer_us"], -k["rank"]))
    r, predicted = predict_train([*files, str(dp2)], plan(tmp, "dp2", ["--dp", 2]), tmp / "dp2-predicted.json")
    compute = predicted["compute"]
    assert compute["source"] == str(dp2) and compute["rank"] == slowest["rank"]
    forward = cal["flops_per_step"] / 2 / 3  # one rank's share
    assert compute["forward_us_per_flop"] == pytest.approx(slowest["forward_compute_us"] / forward, rel=1e-9)
    assert compute["host_us"] == pytest.approx(slowest["data_us"] + slowest["idle_us"], rel=1e-9)
    assert f"(rank {slowest['rank']}: its compute the longest)" in r.out


@pytest.mark.parametrize("name, layout", [("tp2-run", ["--tp", 2]),
                                          ("pp2-run", ["--pp", 2, "--micro-batches", 2, "--recompute", "full"]),
                                          ("gpipe-run", ["--pp", 2, "--micro-batches", 2, "--pp-schedule", "gpipe"])])
def test_a_train_records_rank_flops_are_what_its_plan_says_the_rank_computes(calibration, name, layout):
    """Each rank's row carries the FLOPs it computed per step (its tensor-parallel slices of its stage's layers over its
    micro-batches, and what its backward recomputed): the trainer's count and the plan's schedule (the FLOPs a
    prediction costs) agree, rank by rank, and the stages' add up to the model's (flops_per_step: 3 forwards)."""
    tmp, _ = calibration
    run = tmp / f"{name}.json"
    r = run_trainscope(["train", *MODEL, *layout, "--steps", 2, "--warmup-steps", 1, "--no-ceiling", "--json", run], np=2)
    assert r.rc == 0, r.err
    cal = train_record(run)
    records = [x for x in json.loads(plan(tmp, name + "-plan", layout).read_text())["records"] if x["kind"] == "train_plan"]
    for rec, row in zip(records, cal["ranks"], strict=True):
        events = rec["schedule"]["events"]
        for kind, key in (("forward", "forward_flops"), ("recompute", "recompute_flops")):
            assert row[key] == pytest.approx(sum(e["flops"] for e in events if e.get("compute") == kind), rel=1e-12)
        assert row["optimizer_elements"] == sum(e["elements"] for e in events if e.get("compute") == "optimizer")
    assert sum(row["optimizer_elements"] for row in cal["ranks"]) >= cal["parameters"]  # slices and stages cover it
    # The slices cover the model (a layer tensor parallelism does not split is computed by every slice), the stages
    # are it; a stage also recomputes the forwards of the micro-batches its layers no longer hold, beyond --recompute's.
    total = 3 * sum(row["forward_flops"] for row in cal["ranks"])
    if "--tp" in layout:
        assert cal["flops_per_step"] < total < 2 * cal["flops_per_step"]
    else:
        assert total == pytest.approx(cal["flops_per_step"], rel=1e-12)
        assert sum(row["recompute_flops"] for row in cal["ranks"]) > cal["recompute_flops_per_step"]


def test_a_tensor_parallel_calibration_costs_the_layouts_of_its_degree(calibration):
    """A `--tp 2` run calibrates compute per its ranks' own FLOPs (a slice's): a tp 2 plan takes it (the nearest in
    micro-batch and degree), a data-parallel plan keeps the one-process runs; the console says which."""
    tmp, files = calibration
    run = tmp / "train-tp2.json"
    r = run_trainscope(["train", *MODEL, "--tp", 2, "--steps", 4, "--warmup-steps", 1, "--no-ceiling", "--json", run],
                       np=2, env={"TRAINSCOPE_THREADS": "1"})
    assert r.rc == 0, r.err
    rows = train_record(run)["ranks"]
    slowest = max(rows, key=lambda k: (k["forward_compute_us"] + k["backward_compute_us"] + k["optimizer_us"], -k["rank"]))
    r, predicted = predict_train([*files, str(run)], plan(tmp, "tp2-cal", ["--tp", 2]), tmp / "tp2-cal-predicted.json")
    compute = predicted["compute"]
    assert (compute["source"], compute["tp"], compute["rank"]) == (str(run), 2, slowest["rank"])
    assert compute["forward_us_per_flop"] == pytest.approx(slowest["forward_compute_us"] / slowest["forward_flops"],
                                                          rel=1e-9)
    assert compute["backward_us_per_flop"] == pytest.approx(slowest["backward_compute_us"] / (2 * slowest["forward_flops"]),
                                                           rel=1e-9)
    assert compute["optimizer_us_per_element"] == pytest.approx(slowest["optimizer_us"] / slowest["optimizer_elements"],
                                                               rel=1e-9)
    assert "2-rank tensor-parallel (tp 2) train" in r.out
    _, dp = predict_train([*files, str(run)], plan(tmp, "dp2-cal", ["--dp", 2]), tmp / "dp2-cal-predicted.json")
    one_process = next(f for f in files if f.endswith("train-4.json"))  # at dp 2's micro-batch
    assert (dp["compute"]["source"], dp["compute"]["tp"]) == (one_process, 1)


@pytest.mark.parametrize("staleness", [0, 2])
def test_a_ps_async_plan_is_predicted_as_its_steady_state(calibration, staleness):
    """2 workers and a dedicated server: each worker's compute at the rates, the server's update its shard's elements
    at the optimizer's, one shard the send fit at its bytes (the one-way op the shard's transfer is), and the step
    the larger of the busiest rank's work and the staleness chain over S + 1 steps (reports/predict/ps_async.py; exact on known costs in
    tests/reports/test_predict_ps_async.py)."""
    tmp, files = calibration
    layout = ["--sync", "ps-async", "--ps-servers", 1, "--staleness", staleness]
    plan_path = plan(tmp, f"ps-async-{staleness}", layout, ranks=3)
    r, predicted = predict_train(files, plan_path, tmp / f"ps-async-{staleness}-predicted.json")
    records = [x for x in json.loads(plan_path.read_text())["records"] if x["kind"] == "train_plan"]
    cal = train_record(next(f for f in files if f.endswith(f"train-{records[0]['micro_batch']}.json")))
    update = records[2]["ps_async"]["shard_elements"] * cal["phases_us"]["optimizer"]["median"] / cal["parameters"]
    rows = predicted["per_rank"]
    assert [row["optimizer_us"] for row in rows] == pytest.approx([0, 0, update], rel=1e-9)
    assert rows[0]["compute_us"] > 0 and rows[2]["compute_us"] == 0
    ps = predicted["ps_async"]
    t = ps["transfer_us"]
    host = cal["ranks"][0]["data_us"] + cal["ranks"][0]["idle_us"]  # a worker's, before each step; a server loads no data
    assert [row["host_us"] for row in rows] == pytest.approx([host, host, 0], rel=1e-9)
    assert ps["chain_us"] == pytest.approx((rows[0]["compute_us"] + host + 2 * t + update) / (staleness + 1), rel=1e-9)
    # in-waits (MPI): a worker sends one shard, the server two and updates
    work = [rows[0]["compute_us"] + host + t, rows[1]["compute_us"] + host + t, update + 2 * t]
    assert ps["rank_us"] == pytest.approx(max(work), rel=1e-9)
    assert predicted["step_us"] == pytest.approx(max(max(work), ps["chain_us"]), rel=1e-9)
    assert all(row["step_us"] == predicted["step_us"] for row in rows)
    assert "# ps-async steady state: the step is " in r.out and "send on 2 ranks" in r.out


@pytest.fixture(scope="module")
def search(calibration):
    tmp, files = calibration
    out = tmp / "search.json"
    r = run_trainscope(["predict", "search", "--calibration", *files, "--ranks", 2, "--json", out, "--", *MODEL])
    assert r.rc == 0, r.err
    return r, json.loads(out.read_text())


def test_search_plans_every_candidate_and_ranks_its_predictions(search):
    r, doc = search
    # At 2 ranks: dp2 with ZeRO 0-3, tp2, pp2 with 2, 4 and 8 micro-batches; the mlp has no experts: no ep split.
    assert len(doc["candidates"]) == 8 and all(c["ep"] == 1 for c in doc["candidates"])
    predicted = [c for c in doc["candidates"] if "step_us" in c]
    assert predicted and all(c["fits"] for c in predicted)
    for c in predicted:  # every rank's memory as its plan counts it; the peak column is the largest rank's total
        assert [m["rank"] for m in c["memory_per_rank"]] == [0, 1]
        assert c["peak_bytes"] == max(m["total_bytes"] for m in c["memory_per_rank"])
    rows = [float(m.group(1)) for m in re.finditer(r"^\s+\d+\s+([0-9.]+)\s+[0-9.]+\.\.[0-9.]+", r.out, re.M)]
    assert len(rows) == len(predicted) and rows == sorted(rows)
    assert f"# {len(predicted)} layout(s) predicted" in r.out


def test_search_under_a_memory_limit_ranks_what_fits_first(calibration, search):
    tmp, files = calibration
    out = tmp / "search-limited.json"
    peaks = sorted(c["peak_bytes"] for c in search[1]["candidates"] if "peak_bytes" in c)
    limit = int((peaks[0] + peaks[-1]) / 2)  # between the least and the most a candidate's rank holds
    r = run_trainscope(["predict", "search", "--calibration", *files, "--ranks", 2, "--memory-limit", limit,
                        "--json", out, "--", *MODEL])
    assert r.rc == 0, r.err
    fits = [c["fits"] for c in json.loads(out.read_text())["candidates"] if "step_us" in c]
    assert any(fits) and not all(fits), fits
    shown = re.findall(r"^\s+\d+\s.+\s(yes|no)  \S", r.out, re.M)
    assert shown == sorted(shown, key=lambda f: f == "no")


# Expert parallelism (issue #42): a mixture's exchanges are alltoallvs over the ep group, costed from the sweep's
# alltoallv series of uniform counts (the plan takes the routing balanced: layers/moe.h), the counts' all-gather and
# the gradients' all-reduces from theirs.
MOE = ["--model", "transformer", "--preset", "moe-tiny", "--batch", 8]


@pytest.fixture(scope="module")
def moe_calibration(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("moe-calibration")
    sweep = tmp / "sweep.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,all_gather,alltoallv", "-b", 8, "-e", "256K",
                        "-f", 16, "-n", 5, "-w", 1, "--placement", "out", "--json", sweep], np=2, timeout=300)
    assert r.rc == 0, r.err
    one = tmp / "train-4.json"  # ep 2 of a batch of 8: 4 sequences a rank
    r = run_trainscope(["train", "--model", "transformer", "--preset", "moe-tiny", "--batch", 4, "--steps", 4,
                        "--warmup-steps", 1, "--no-ceiling", "--json", one], env={"TRAINSCOPE_THREADS": "1"})
    assert r.rc == 0, r.err
    return tmp, [str(sweep), str(one)]


def test_an_expert_parallel_plan_replays_its_exchanges_from_the_alltoallv_sweep(moe_calibration):
    tmp, files = moe_calibration
    plan_path = plan(tmp, "ep2", ["--ep", 2], model=MOE)
    r, predicted = predict_train(files, plan_path, tmp / "ep2-predicted.json")
    records = [x for x in json.loads(plan_path.read_text())["records"] if x["kind"] == "train_plan"]
    planned = {e["op"] for rec in records for e in rec["schedule"]["events"] if e.get("group") == "ep"}
    assert {"all_gather", "alltoallv", "all_reduce"} <= planned
    costed = {c["op"]: c for c in predicted["collectives"]}
    assert costed["alltoallv"]["group_size"] == 2 and costed["alltoallv"]["series"]["counts"] == "uniform"
    assert "# alltoallv on 2 ranks, " in r.out and "uniform counts" in r.out
    for row in predicted["per_rank"]:  # every blocked time under the one group the rank communicates on
        assert set(row["exposed_by_group_us"]) == {"ep"}
        blocked = row["waiting_us"] + row["transfer_us"] + row["pipeline_wait_us"]
        assert row["exposed_by_group_us"]["ep"] == pytest.approx(blocked, rel=1e-9, abs=1e-9)


def test_a_sweep_without_alltoallv_cannot_cost_an_expert_parallel_plan_one_line(moe_calibration):
    tmp, files = moe_calibration
    plan_path = plan(tmp, "ep2-again", ["--ep", 2], model=MOE)
    sweep = json.loads(open(files[0]).read())
    sweep["records"] = [x for x in sweep["records"] if x.get("op") != "alltoallv"]
    without = tmp / "sweep-without-alltoallv.json"
    without.write_text(json.dumps(sweep))
    r = run_trainscope(["predict", "train", "--calibration", without, files[1], "--plan", plan_path])
    assert r.rc == 2
    (line,) = r.error_lines()
    assert "holds no usable alltoallv record (it has: all_gather, all_reduce)" in line, line


def test_a_mixtures_search_plans_and_ranks_its_expert_parallel_splits(moe_calibration):
    """At 4 ranks the mixture's ep splits are planned beside the others, ep carved out of dp (dp2 x ep2, ep4) and
    beside tp (tp2 x ep2), and ranked with them; this sweep has no reduce_scatter nor sendrecv, so ZeRO and the
    pipelines are listed as not predicted."""
    tmp, files = moe_calibration
    out = tmp / "search-moe.json"
    r = run_trainscope(["predict", "search", "--calibration", *files, "--ranks", 4, "--top", 100, "--json", out, "--",
                        *MOE])
    assert r.rc == 0, r.err
    got = json.loads(out.read_text())["candidates"]
    predicted = [c for c in got if "step_us" in c]
    assert {c["layout"] for c in predicted if c["ep"] > 1} == {"dp2 x ep2", "ep4", "tp2 x ep2"}
    assert {c["layout"] for c in predicted if c["ep"] == 1} == {"dp4", "dp2 x tp2", "tp4"}
    assert {(c["dp"], c["ep"]) for c in got if c["layout"] == "dp2 x ep2"} == {(2, 2)}
    rows = re.findall(r"^\s+\d+\s+([0-9.]+)\s+[0-9.]+\.\.[0-9.]+\s.*?\s(?:yes|no)  (.+)$", r.out, re.M)
    assert sorted(name for _, name in rows) == sorted(c["layout"] for c in predicted)
    assert [float(step) for step, _ in rows] == sorted(float(step) for step, _ in rows)


@pytest.mark.parametrize("script, args, env, kept, line", [
    ("bench-predict-train.sh", [], {"TS_BENCH_FROM": "{tmp}"}, [],
     "bench-predict-train: error: TS_BENCH_FROM={tmp} holds no sweep.json (a folder TS_BENCH_KEEP kept?)"),
    ("bench-predict-netns.sh", ["off", "2", "mlp:tiny", "", "3"], {}, [],
     "bench-predict-netns: error: ranks 3: 2 or 4 (one rank per host)"),
    ("bench-predict-netns.sh", ["100mbit off", "2", "mlp:tiny"], {"TS_BENCH_FROM": "{tmp}"}, [],
     "bench-predict-netns: error: TS_BENCH_FROM={tmp} holds no rate-100mbit/sweep.json (a folder TS_BENCH_KEEP kept?)"),
    ("bench-predict-netns.sh", ["off", "2", "mlp:tiny"], {"TS_BENCH_FROM": "{tmp}"}, ["rate-off/sweep.json"],
     "bench-predict-netns: error: TS_BENCH_FROM={tmp} holds no mlp-tiny-cal.list (not measured for mlp:tiny)"),
])
def test_a_prediction_benchmark_refuses_bad_input_in_one_line_before_any_work(tmp_path, script, args, env, kept, line):
    """Checked before the build, the cluster or any run: an empty folder to predict again (or one with a sweep and no
    calibration), a rank count the netns cluster does not lay out. (TS_BUILD names a folder that holds no build:
    reaching for it would fail otherwise.)"""
    for name in kept:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    before = sorted(tmp_path.rglob("*"))
    env = {k: v.format(tmp=tmp_path) for k, v in env.items()}
    r = subprocess.run([str(ROOT / "scripts" / script), *args], capture_output=True, text=True, timeout=60,
                       env=base_env({"TS_BUILD": str(tmp_path / "no-build"), **env}))
    assert r.returncode == 2 and r.stderr.strip() == line.format(tmp=tmp_path), r.stderr
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, nothing built
