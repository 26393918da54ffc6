"""Parallel layouts on the CPU backend under mpirun: every data-parallel layout (all-reduce with and
without overlap, ZeRO 1, 2 and 3, the parameter server) trains each model along the same loss trajectory,
to the same weights, as one process does on the same global batch; the record explains where the step
went (per-rank compute and communication, the collectives issued); bad layouts are one line.

Tolerance: the layouts sum the same float32 gradients in another order (a rank's partial sum, then the
group's), so losses and the parameters' norms agree to 1e-5 relative, not bit for bit. The CNN's batch
norm is SyncBatchNorm under data parallel (--sync-bn auto): it normalises over the whole batch, so its
reference is the same one-process run. With micro-batches too, a rank's micro-batch i would be normalised
with the other ranks' micro-batch i, a grouping no one-process run makes; those layouts run with
--sync-bn off, each rank normalising its own samples (as PyTorch DDP without SyncBatchNorm does), against
the one-process run with one micro-batch per rank's micro-batch: the same sample groups. The CNN trains
with SGD: Adam turns float32 noise in a near-zero gradient into a full-size step, which no layout can avoid."""
import json
import re

import pytest

from helpers import read_jsonl, run_trainscope
from reports.common.collective_facts import bus_factor, collective

RTOL = 1e-5
# The CNN: a ReLU whose input lies within float32 rounding of 0 goes either way under two summation orders
# (channels-last oneDNN sums a weight gradient in an order that depends on the threads and the batch per rank),
# moving that step's gradient norm by ~1e-5 and, at lr 0.05, the next steps' losses by up to ~1e-4 and
# parameters by ~1e-4 (absolute; relative to bn1.bias's norm of 0.016, 4e-3). A layout that got the training
# wrong is off by far more (dp2 without SyncBatchNorm: 5e-3 at the first step).
CNN_TOLERANCE = {"rtol": 3e-4, "atol": 2e-4}
STEPS = 6

MODELS = {
    "mlp": ["--model", "mlp", "--preset", "tiny", "--batch", 16, "--lr", 3e-3, "--optimizer", "adamw", "--weight-decay", 0.1],
    "cnn": ["--model", "cnn", "--preset", "tiny", "--batch", 8, "--lr", 0.05, "--optimizer", "sgd"],
    "transformer": ["--model", "transformer", "--preset", "tiny", "--batch", 8, "--lr", 3e-3, "--clip-norm", 1.0],
}

# (name, ranks, flags, micro-batches, data-parallel ranks, tensor-parallel ranks)
LAYOUTS = [
    ("dp2", 2, [], 1, 2, 1),
    ("dp4", 4, [], 1, 4, 1),
    ("dp2-no-overlap-small-buckets", 2, ["--overlap", "off", "--bucket-mb", 0.01], 1, 2, 1),
    ("zero1", 2, ["--zero", 1], 1, 2, 1),
    ("zero2-accumulating", 2, ["--zero", 2, "--micro-batches", 2], 2, 2, 1),
    ("zero1-dp4", 4, ["--zero", 1, "--bucket-mb", 0.05], 1, 4, 1),
    ("zero3", 2, ["--zero", 3], 1, 2, 1),
    ("zero3-dp4-accumulating", 4, ["--zero", 3, "--micro-batches", 2], 2, 4, 1),
    ("zero3-no-prefetch", 2, ["--zero", 3, "--prefetch", 0], 1, 2, 1),
    ("dp2-pp2-zero3-prefetch2", 4, ["--pp", 2, "--micro-batches", 2, "--zero", 3, "--prefetch", 2], 2, 2, 1),
    ("ps2-of-4", 4, ["--sync", "ps", "--ps-shards", 2], 1, 4, 1),
    ("ps1", 2, ["--sync", "ps"], 1, 2, 1),
    ("tp2", 2, ["--tp", 2], 1, 1, 2),
    ("tp4", 4, ["--tp", 4], 1, 1, 4),
    ("pp2-1f1b", 2, ["--pp", 2, "--micro-batches", 4], 4, 1, 1),
    ("pp2-gpipe", 2, ["--pp", 2, "--micro-batches", 4, "--pp-schedule", "gpipe"], 4, 1, 1),
    ("pp4-1f1b", 4, ["--pp", 4, "--micro-batches", 2], 2, 1, 1),
    ("dp2-tp2", 4, ["--tp", 2], 1, 2, 2),
    ("dp2-pp2", 4, ["--pp", 2, "--micro-batches", 2], 2, 2, 1),
    ("tp2-pp2", 4, ["--tp", 2, "--pp", 2, "--micro-batches", 2, "--pp-schedule", "gpipe"], 2, 1, 2),
    ("dp2-pp2-zero1", 4, ["--pp", 2, "--micro-batches", 2, "--zero", 1], 2, 2, 1),
    ("dp2-tp2-zero3", 4, ["--tp", 2, "--zero", 3], 1, 2, 2),
    ("dp2-tp2-ps", 4, ["--tp", 2, "--sync", "ps"], 1, 2, 2),
    ("dp2-pp2-ps", 4, ["--pp", 2, "--micro-batches", 2, "--sync", "ps"], 2, 2, 1),
]


def train(tmp_path, name, args, np=None):
    out = tmp_path / f"{name}.json"
    r = run_trainscope(["train", "--no-ceiling", "--steps", STEPS, "--warmup-steps", 1, "--json", out] + list(args), np=np, timeout=600)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    (rec,) = [x for x in doc["records"] if x["kind"] == "train"]
    return doc, rec


_references = {}


def reference(tmp_path_factory, model, micro):
    key = (model, micro)
    if key not in _references:
        _references[key] = train(tmp_path_factory.mktemp("ref"), f"{model}-{micro}", MODELS[model] + ["--micro-batches", micro])[1]
    return _references[key]


def assert_same_training(rec, ref, rtol=RTOL, atol=1e-7):
    assert len(rec["loss_curve"]) == len(ref["loss_curve"]) == STEPS
    for a, b in zip(rec["loss_curve"], ref["loss_curve"]):
        assert a["loss"] == pytest.approx(b["loss"], rel=rtol), (a, b)
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=rtol), (a, b)
    assert rec["parameter_norms"].keys() == ref["parameter_norms"].keys()
    for name, norm in ref["parameter_norms"].items():
        assert rec["parameter_norms"][name] == pytest.approx(norm, rel=rtol, abs=atol), name


def assert_rows_per_group(rec):
    """Each group's collectives are rows of their own, with that group's size and bus factor: a tensor-parallel
    all-reduce is not counted with the data-parallel group's, and its busbw uses the tp size (so it is not 0
    when dp is 1)."""
    layout = rec["layout"]
    rows = rec["collectives"]
    assert {c["group"] for c in rows} == {g for g in ("dp", "tp", "pp") if layout[g] > 1}
    assert len({(c["group"], c["op"], c["bytes"]) for c in rows}) == len(rows)
    for c in rows:
        n = layout[c["group"]]
        assert c["group_size"] == n, c
        factor = 1.0 if c["op"] in ("send", "recv") else bus_factor(c["op"], n)  # a pipeline transfer crosses one link
        assert c["busbw_gbps"] == pytest.approx(c["algbw_gbps"] * factor, rel=1e-12), c
        assert c["busbw_gbps"] > 0, c  # every group that communicates has 2 ranks or more


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("name,np,flags,micro,dp,tp", LAYOUTS, ids=[l[0] for l in LAYOUTS])
def test_layout_trains_like_one_process(tmp_path, tmp_path_factory, validate, model, name, np, flags, micro, dp, tp):
    per_rank_bn = model == "cnn" and dp > 1 and micro > 1
    doc, rec = train(tmp_path, name, MODELS[model] + flags + (["--sync-bn", "off"] if per_rank_bn else []), np=np)
    validate(doc)
    assert rec["layout"]["sync_bn"] == ("on" if model == "cnn" and dp > 1 and not per_rank_bn else "off")
    ref_micro = micro * dp if per_rank_bn else micro
    ref = reference(tmp_path_factory, model, ref_micro)
    assert_same_training(rec, ref, **(CNN_TOLERANCE if model == "cnn" else {}))
    assert rec["parameters"] == ref["parameters"]  # the whole model's, whatever each rank holds
    layout = rec["layout"]
    pp = np // (dp * tp)
    assert rec["world_size"] == np and layout["dp"] == dp and layout["pp"] == pp and layout["tp"] == tp
    sharded = "--zero" in flags or "ps" in flags
    shards = layout["ps_shards"] if layout["sync"] == "ps" else dp
    # Process 0 owns every parameter's update, or its shard: a 1/shards part, give or take the padding;
    # with tensor or pipeline parallelism, less (its slices, its stage).
    owned = rec["owned_parameters"]
    if tp > 1 or pp > 1:
        assert 0 < owned < rec["parameters"]
    elif not sharded:
        assert owned == rec["parameters"]
    else:
        assert abs(owned - rec["parameters"] / shards) <= 4 * len(rec["parameter_norms"])
    if pp > 1:
        stages = rec["pipeline"]["layers"]
        assert rec["pipeline"]["stages"] == pp == len(stages) and stages[0][0] == 0
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(stages, stages[1:]))
        assert rec["pipeline"]["theoretical_bubble"] == pytest.approx((pp - 1) / (micro + pp - 1))
        assert 0 <= rec["pipeline"]["measured_bubble"] < 1
    # Every rank reports its breakdown; the step time is the slowest rank's.
    assert sorted(r["rank"] for r in rec["ranks"]) == list(range(np))
    # Megatron's order: rank = (pp_rank * dp + dp_rank) * tp + tp_rank
    assert ([(r["pp_rank"], r["dp_rank"], r["tp_rank"]) for r in sorted(rec["ranks"], key=lambda r: r["rank"])]
            == [(k // (dp * tp), k // tp % dp, k % tp) for k in range(np)])
    # The mesh names the axes and how a rank's coordinates make its number.
    sizes = {a["name"]: a["size"] for a in rec["mesh"]}
    assert [a["name"] for a in rec["mesh"]][:3] == ["dp", "tp", "pp"]  # any other axis after them, of one rank
    assert sizes == {**{name: 1 for name in sizes}, "dp": dp, "tp": tp, "pp": pp}
    assert all(sum(r[f"{a['name']}_rank"] * a["stride"] for a in rec["mesh"]) == r["rank"] for r in rec["ranks"])
    assert rec["step_time_us"]["median"] >= max(r["step_us"] for r in rec["ranks"]) * 0.999
    ops = {c["op"] for c in rec["collectives"]}
    expected = ({"all_reduce"} | ({"reduce_scatter", "all_gather"} if "--zero" in flags else set()) | ({"reduce", "broadcast"} if "ps" in flags else set())
                | ({"send", "recv"} if pp > 1 else set()))
    assert ops == expected
    assert_rows_per_group(rec)
    if pp > 1 or tp > 1 or rec["layout"]["sync_bn"] == "on":
        # The gradient volume below is the whole model's: a stage or a slice sends its own part, and
        # SyncBatchNorm's statistics are all-reduces too (the models without it check the volume).
        return
    steps_timed = rec["timed_steps"]
    grads = [c for c in rec["collectives"] if c["op"] not in ("send", "recv") and collective(c["op"]).reduces and c["bytes"] > 8]
    # Each timed step moves every gradient once per communicating micro-batch (the buckets, padded).
    communicating = micro if layout["zero"] >= 2 else 1  # ZeRO 2 and 3 reduce every micro-batch
    per_step = sum(c["bytes"] * c["count"] for c in grads) / steps_timed
    if layout["sync"] == "ps":
        per_step *= 1  # reduce: each shard its own op, the shards together one padded copy
    assert 4 * rec["parameters"] * communicating <= per_step <= 4 * rec["parameters"] * communicating + 64 * len(rec["parameter_norms"]) * communicating * np


@pytest.mark.parametrize("zero,pp", [(1, 1), (3, 1), (3, 2)])
def test_data_parallel_matches_with_gradient_accumulation_and_mixed_precision(tmp_path, zero, pp):
    # bfloat16 rounds the weights' compute copy each step, so the float32 reorder noise in the master
    # weights can flip an element by one bfloat16 unit (2^-8 relative): the tolerance is bfloat16's.
    # ZeRO-3 keeps the float32 masters of its shards only and gathers the rounded copies.
    args = MODELS["transformer"] + ["--micro-batches", 2, "--precision", "bfloat16"]
    _, one = train(tmp_path, "one", args)
    _, dp = train(tmp_path, "dp", args + ["--zero", zero, "--pp", pp], np=2 * pp)
    assert_same_training(dp, one, rtol=4e-3)


@pytest.mark.parametrize("np,flags", [(2, ["--zero", 1]), (2, ["--zero", 3]), (2, ["--sync", "ps"]), (2, ["--tp", 2]),
                                      (4, ["--tp", 2, "--zero", 2])], ids=["zero1", "zero3", "ps", "tp2", "tp2-zero2"])
def test_lamb_trust_ratio_is_the_whole_tensors_in_every_layout(tmp_path, np, flags):
    """LAMB scales each tensor's step by ||p|| / ||u|| of the whole tensor: a rank that holds a ZeRO piece or a
    tensor-parallel slice adds its part's sums with the other holders', so every layout follows one process."""
    args = MODELS["mlp"][:-4] + ["--optimizer", "lamb", "--weight-decay", 0.1]
    _, one = train(tmp_path, "one", args)
    _, rec = train(tmp_path, "layout", args + flags, np=np)
    assert_same_training(rec, one)


def test_float16_loss_scaling_decides_alike_on_every_rank(tmp_path):
    args = ["--model", "mlp", "--preset", "tiny", "--batch", 8, "--precision", "float16", "--loss-scale", 1e7, "--loss-scale-interval", 2]
    _, one = train(tmp_path, "one", args)
    _, dp = train(tmp_path, "z2", args + ["--zero", 2], np=2)
    assert [p["skipped"] for p in one["loss_curve"]] == [p["skipped"] for p in dp["loss_curve"]]
    assert any(p["skipped"] for p in one["loss_curve"]) and not all(p["skipped"] for p in one["loss_curve"])
    assert_same_training(dp, one)


def test_overlap_on_and_off_both_report_exposed_communication(tmp_path):
    for overlap in ("on", "off"):
        _, rec = train(tmp_path, overlap, MODELS["transformer"] + ["--overlap", overlap, "--bucket-mb", 0.1], np=2)
        c = rec["communication"]
        assert rec["layout"]["overlap"] == (overlap == "on")
        assert c["communication_us"]["n"] == c["exposed_us"]["n"] == rec["timed_steps"]
        assert c["communication_us"]["median"] > 0 and c["exposed_us"]["median"] > 0
        assert 0 <= c["overlap"] <= 1 and c["rank_spread"] >= 0
        assert all(r["communication_us"] > 0 for r in rec["ranks"])


def test_zero3_prefetch_changes_when_layers_are_gathered_not_what_is_computed(tmp_path):
    """--prefetch K issues the next K layers' all-gathers ahead (forward and backward): the same values arrive, the
    same reduce-scatters run in the same order, so the training is the same bit for bit at every K."""
    runs = {k: train(tmp_path, f"prefetch{k}", MODELS["transformer"] + ["--zero", 3, "--prefetch", k], np=2)[1]
            for k in (0, 1, 3)}
    assert [r["config"]["prefetch"] for r in runs.values()] == [0, 1, 3]
    curves = {k: [(p["loss"], p["grad_norm"]) for p in r["loss_curve"]] for k, r in runs.items()}
    assert curves[0] == curves[1] == curves[3]
    assert runs[0]["parameter_norms"] == runs[1]["parameter_norms"] == runs[3]["parameter_norms"]
    # Each layer is still gathered twice a step (forward and backward; the last layer once: it stays from its
    # forward to its backward) and its gradients reduce-scattered once.
    gathers = {k: sum(c["count"] for c in r["collectives"] if c["op"] == "all_gather") for k, r in runs.items()}
    assert gathers[1] == gathers[3] == gathers[0]


def test_checkpoints_under_data_parallel_resume_on_one_process(tmp_path):
    args = MODELS["mlp"] + ["--steps", STEPS]
    ckpt = tmp_path / "ckpt"
    out = tmp_path / "first.json"
    r = run_trainscope(["train", "--no-ceiling", "--warmup-steps", 0, "--json", out, "--checkpoint-dir", ckpt, "--steps", 3] + MODELS["mlp"], np=2)
    assert r.rc == 0, r.err
    _, rest = train(tmp_path, "rest", MODELS["mlp"] + ["--checkpoint-dir", ckpt, "--resume"])
    _, whole = train(tmp_path, "whole", MODELS["mlp"])
    assert rest["first_step"] == 3
    for a, b in zip(rest["loss_curve"], whole["loss_curve"][3:]):
        assert a["loss"] == pytest.approx(b["loss"], rel=RTOL)


@pytest.mark.parametrize("np,args,message", [
    (2, ["--dp", 3], "= 3 processes, but this run has 2"),  # "--dp 3 x --tp 1 x --pp 1", and any other axis
    (None, ["--dp", 2], "launch with mpirun"),
    (2, ["--zero", 4], "--zero 4: expected 0, 1, 2 or 3"),
    (2, ["--sync", "gossip"], "--sync gossip: expected allreduce, ps, ps-async or average"),
    (2, ["--sync", "ps", "--ps-shards", 3], "--ps-shards 3: must be between 1 and the 2"),
    (2, ["--sync", "ps", "--zero", 1], "does not combine with --zero"),
    (2, ["--pp", 2, "--set", "depth=0"], "--pp 2: the model has only 1 layers to cut into stages"),
    (2, ["--pp", 2, "--pp-split", "1,1"], "--pp-split adds up to 2 layers, but the model has 5"),
    (2, ["--pp", 2, "--pp-split", "5"], "--pp-split gives 1 stage(s), but --pp is 2"),
    (2, ["--pp", 2, "--pp-schedule", "zigzag"], "--pp-schedule zigzag: expected gpipe or 1f1b"),
    (3, ["--tp", 3], "--tp 3 does not divide the 64 hidden features (width) of the mlp model"),
    (2, ["--batch", 3], "--batch 3 does not split into 2 data-parallel rank(s) x 1 micro-batch(es)"),
    (2, ["--bucket-mb", 0], "--bucket-mb: 0 is not in (0, 1048576]"),
    (2, ["--overlap", "maybe"], "--overlap"),
    (2, ["--zero", 3, "--prefetch", -1], "--prefetch: must be a non-negative integer, got -1"),
    (2, ["--zero", 2, "--prefetch", 2], "--prefetch is --zero 3's"),
    (2, ["--zero", 3, "--prefetch", 65], "--prefetch: 65 is out of range (at most 64)"),
])
def test_bad_layouts_are_one_line(tmp_path, np, args, message):
    r = run_trainscope(["train", "--no-ceiling", "--steps", 2, "--model", "mlp"] + args, np=np)
    assert r.rc == 2, (r.out, r.err)
    lines = r.error_lines()
    assert len(lines) == 1 and message in lines[0], r.err


def test_scale_writes_efficiency_records_that_the_report_plots(tmp_path, validate):
    out = tmp_path / "scale.json"
    r = run_trainscope(["scale", "--ranks", "1,2,4", "--mode", "weak", "--batch", 8, "--launcher-args", "--oversubscribe", "--json", out,
                        "--model", "mlp", "--preset", "tiny", "--steps", 5, "--warmup-steps", 1, "--no-ceiling"], timeout=600)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    trains = [x for x in doc["records"] if x["kind"] == "train"]
    points = [x for x in doc["records"] if x["kind"] == "scaling"]
    assert [x["ranks"] for x in points] == [1, 2, 4] and [t["world_size"] for t in trains] == [1, 2, 4]
    assert [x["global_batch"] for x in points] == [8, 16, 32]  # weak: the batch per rank is fixed
    for p, t in zip(points, trains):
        assert p["completed"] and p["baseline_ranks"] == 1
        assert p["throughput_per_s"] == t["throughput_per_s"]
        assert p["efficiency"] == pytest.approx(t["throughput_per_s"] / (p["ranks"] * trains[0]["throughput_per_s"]))
        assert p["speedup"] == pytest.approx(t["throughput_per_s"] / trains[0]["throughput_per_s"])
    assert points[0]["efficiency"] == pytest.approx(1.0)
    rep = tmp_path / "rep"
    assert run_trainscope(["report", out, "-o", rep]).rc == 0
    html = (rep / "index.html").read_text()
    assert "Scaling points" in html and (rep / "scaling_efficiency.png").exists() and (rep / "scaling_breakdown.png").exists()
    assert "Per rank, median per step" in html and "Collectives the training issued" in html


def test_scale_keeps_the_points_that_ran_when_one_fails(tmp_path, validate):
    out = tmp_path / "scale.json"
    r = run_trainscope(["scale", "--ranks", "1,3", "--mode", "strong", "--batch", 4, "--launcher-args", "--oversubscribe", "--json", out,
                        "--model", "mlp", "--steps", 3, "--warmup-steps", 1, "--no-ceiling"], timeout=600)
    assert r.rc == 1
    assert r.error_lines() == [l for l in r.err.splitlines() if "1 of 2 scaling point(s) failed" in l]
    doc = json.loads(out.read_text())
    validate(doc)
    points = [x for x in doc["records"] if x["kind"] == "scaling"]
    assert points[0]["completed"] and not points[1]["completed"]
    assert "--batch 4 does not split into 3 data-parallel rank(s)" in points[1]["error"]


@pytest.mark.parametrize("args,message", [
    (["--ranks", "0"], "--ranks: 0 is not a rank count"),
    (["--launcher", "none", "--ranks", "1,2"], "--launcher none runs one process"),
    (["--json", "x.json", "--dp", "2"], "--dp: scale sets it for each point"),
    (["--lr", "inf"], "train flags: --lr: inf is not a finite number"),
    (["--modle"], "train flags: train: unknown option --modle (did you mean --model?)"),
])
def test_bad_scale_input_is_one_line(tmp_path, args, message):
    r = run_trainscope(["scale", "--model", "mlp"] + args)
    assert r.rc == 2, (r.out, r.err)
    lines = r.error_lines()
    assert len(lines) == 1 and message in lines[0], r.err


def train_records(path):
    return [r for r in read_jsonl(path) if r.get("kind") == "train"]


def test_a_rank_that_dies_mid_run_ends_the_job_and_the_steps_are_kept(tmp_path):
    out = tmp_path / "die.json"
    r = run_trainscope(["train", "--no-ceiling", "--steps", 8, "--warmup-steps", 1, "--json", out] + MODELS["mlp"], np=2,
                       env={"TRAINSCOPE_FAULT": "die:rank=1:step=3"}, timeout=120)
    assert r.rc != 0
    assert "rank 1 of 2" in r.err and "dies at the start of train step 3" in r.err  # the rank is named
    (rec,) = train_records(tmp_path / "die.jsonl")  # process 0 kept the steps it measured
    assert not rec["completed"] and rec["steps_done"] == 3 and len(rec["loss_curve"]) == 3
    assert re.fullmatch(r"rank 1 of 2 \(.+\) ended without a word \(killed, or crashed\)", rec["error"]), rec["error"]


def test_a_hung_rank_ends_the_job_within_the_timeout_and_the_steps_are_kept(tmp_path):
    out = tmp_path / "hang.json"
    r = run_trainscope(["train", "--no-ceiling", "--steps", 8, "--warmup-steps", 1, "--timeout", 3, "--json", out] + MODELS["mlp"], np=2,
                       env={"TRAINSCOPE_FAULT": "hang:rank=1:step=3"}, timeout=60)
    assert r.rc != 0
    assert "rank 1 of 2" in r.err and "timeout: train step 3 made no progress" in r.err
    (rec,) = train_records(tmp_path / "hang.jsonl")
    assert not rec["completed"] and rec["steps_done"] == 3
    # process 0 waited in the all-reduce until the hung rank, which alone reports the timeout, told it so
    assert re.fullmatch(r"rank 1 of 2 \(.+\) ended the run with its own line \(a timeout\)", rec["error"]), rec["error"]


def test_a_suite_trains_a_layout_scales_and_sets_the_collectives_against_the_sweep(tmp_path, validate):
    suite = tmp_path / "s.toml"
    suite.write_text("""
[suite]
name = "layouts"
[[step]]
kind = "train"
name = "zero1"
model = "mlp"
steps = 5
batch = 16
warmup_steps = 1
ceiling = false
zero = 1
[[step]]
kind = "scale"
name = "scale"
ranks = "1,2"
batch = 8
launcher_args = "--oversubscribe"
train_args = "--model mlp --steps 5 --warmup-steps 1 --no-ceiling"
[[step]]
kind = "collectives"
name = "sweep"
ops = "reduce_scatter,all_gather"
min_bytes = "64K"
max_bytes = "1M"
step_factor = 2
iters = 3
""")
    out = tmp_path / "s.json"
    r = run_trainscope(["suite", suite, "--json", out, "--report", tmp_path / "rep"], np=2, timeout=600)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    (zero1,) = [x for x in doc["records"] if x["kind"] == "train" and x["step"] == "zero1"]
    assert zero1["layout"]["zero"] == 1 and zero1["world_size"] == 2
    points = [x for x in doc["records"] if x["kind"] == "scaling"]
    assert [p["ranks"] for p in points] == [1, 2] and all(p["step"] == "scale" and p["completed"] for p in points)
    html = (tmp_path / "rep" / "index.html").read_text()
    # the training's 220200-byte reduce-scatter and all-gather, against the sweep's 256 KiB ones
    assert "transfer / attainable" in html and "at 262144 B" in html
