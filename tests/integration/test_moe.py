"""The mixture-of-experts transformer (workloads/layers/moe.h) end to end, one process unless a layout says otherwise:
the routing counts the record and the console report, exact under the planted router skew (TRAINSCOPE_FAULT=router);
bad MoE values refused in one line before any work; checkpoints that save and load the experts, resuming bit for bit on
the same layout and resharded onto the dense layouts (tensor parallel replicates the experts, ZeRO-3 shards them like
any weight, a pipeline stage holds its blocks')."""
import json
import math
import shutil

import pytest

from helpers import run_trainscope

B, T, E, K, FACTOR = 4, 32, 4, 2, 1.25  # moe-tiny (presets.cpp), --capacity-factor's default
MODEL = ["--model", "transformer", "--preset", "moe-tiny", "--batch", B, "--lr", 1e-3, "--warmup-steps", 0, "--no-ceiling"]


def train(where, name, args, np=None, env=None):
    out = where / f"{name}.json"
    r = run_trainscope(["train", *MODEL, *args, "--json", out], np=np, env=env, timeout=300)
    assert r.rc == 0, (name, r.err)
    (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
    return rec, r.out, json.loads(out.read_text())


def losses(rec):
    return [s["loss"] for s in rec["loss_curve"]]


def test_a_skewed_router_reports_its_imbalance_and_drops_exactly(tmp_path, validate):
    """A logit step of 100 ranks the experts 0, 1, 2, 3 for every token: top-2 sends all N = B T tokens to experts 0
    and 1 (max/mean E / K = 2), each keeps its capacity ceil(1.25 N 2 / 4) and drops the rest, every micro-batch."""
    steps = 3
    rec, out, doc = train(tmp_path, "skewed", ["--steps", steps], env={"TRAINSCOPE_FAULT": "router:rank=0:scale=100"})
    validate(doc)
    tokens = B * T
    capacity = math.ceil(FACTOR * tokens * K / E)
    moe = rec["moe"]
    assert (moe["experts"], moe["top_k"], moe["capacity_factor"], moe["router_skew"]) == (E, K, FACTOR, 100)
    assert [layer["layer"] for layer in moe["layers"]] == ["h.0.moe", "h.1.moe"]
    for layer in moe["layers"]:
        assert layer["capacity"] == capacity and layer["micro_batches"] == steps
        assert layer["tokens_per_expert"] == [steps * tokens, steps * tokens, 0, 0]
        assert layer["assignments"] == steps * tokens * K
        assert layer["imbalance"] == E / K and layer["worst_micro_batch_imbalance"] == E / K
        assert layer["dropped"] == steps * K * (tokens - capacity)
        assert layer["aux_loss"] == pytest.approx(0.01 * E * 0.5, rel=1e-4)  # f = (1/2, 1/2, 0, 0), P ~ (1, 0, 0, 0)
        line = (f"# moe {layer['layer']}: tokens per expert {steps * tokens} {steps * tokens} 0 0; imbalance max/mean 2.000 "
                f"(worst micro-batch 2.000); dropped {layer['dropped']} of {layer['assignments']}")
        assert line in out, out


def test_an_unskewed_run_counts_every_assignment(tmp_path):
    rec, _, _ = train(tmp_path, "plain", ["--steps", 2, "--capacity-factor", 0])
    for layer in rec["moe"]["layers"]:
        assert sum(layer["tokens_per_expert"]) == layer["assignments"] == 2 * B * T * K
        assert layer["dropped"] == 0 and layer["capacity"] == B * T  # no limit: an expert can take every token
        assert 1 <= layer["imbalance"] <= E / K and layer["aux_loss"] > 0
    assert rec["moe"]["capacity_factor"] is None
    assert rec["config"]["resolved"]["model"]["experts"] == E


def test_recomputation_neither_changes_the_losses_nor_counts_twice(tmp_path):
    """The backward's second forward (--recompute) runs with training off: the same routing, not counted again."""
    runs = {r: train(tmp_path, r, ["--steps", 3, "--recompute", r])[0] for r in ("none", "full", "selective")}
    for r in ("full", "selective"):
        assert losses(runs[r]) == losses(runs["none"])
        assert runs[r]["moe"]["layers"] == runs["none"]["moe"]["layers"]


@pytest.mark.parametrize("args,line", [
    (["--set", "top_k=3"], "--set top_k=3: out of range (at most 2)"),
    (["--set", "experts=1"], "transformer: top_k 2 with 1 experts: 1 or 2, and at most the experts"),
    (["--capacity-factor", "-1"], "--capacity-factor"),
    (["--set", "experts=0"], "transformer: top_k 2 without experts"),
    (["--aux-loss-coef", "-0.5"], "--aux-loss-coef"),
])
def test_bad_moe_values_are_one_line_before_any_work(tmp_path, args, line):
    r = run_trainscope(["train", *MODEL, "--steps", 1, *args, "--json", tmp_path / "x.json"])
    assert r.rc == 2 and len(r.error_lines()) == 1 and line in r.err, r.err
    assert not (tmp_path / "x.json").exists()


# name: (processes, layout flags)
LAYOUTS = {"single": (None, []), "tp2": (2, ["--tp", 2]), "zero3": (2, ["--zero", 3]),
           "pp2": (2, ["--pp", 2, "--micro-batches", 2])}
STEPS, SAVED = 4, 2
# Capacity and the aux loss are per micro-batch on each rank (as Megatron's): data parallelism and micro-batches split
# the batch, so only without drops and aux loss is a layout's step the one process's (within rounding).
SAME_FUNCTION = ["--capacity-factor", 0, "--aux-loss-coef", 0]


def save(tmp, extra):
    whole, _, _ = train(tmp, "whole", ["--steps", STEPS, *extra])
    ckpt = tmp / "ckpt"
    train(tmp, "first", ["--steps", SAVED, "--checkpoint-dir", ckpt, *extra])
    return tmp, whole, ckpt


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return save(tmp_path_factory.mktemp("moe-ckpt"), [])


@pytest.fixture(scope="module")
def saved_undropped(tmp_path_factory):
    return save(tmp_path_factory.mktemp("moe-ckpt-undropped"), SAME_FUNCTION)


def test_a_checkpoint_holds_the_experts_and_resumes_bit_for_bit(saved):
    tmp, whole, ckpt = saved
    index = json.loads((ckpt / f"step-{SAVED:08d}" / "index.json").read_text())
    names = set(index["tensors"])
    assert "h.0.moe.router.weight" in names and "h.1.moe.experts.3.proj.bias" in names
    assert not any(".mlp." in n for n in names)
    assert index["tensors"]["h.0.moe.experts.2.fc.weight"]["shape"] == [256, 64]
    work = tmp / "resume"
    shutil.copytree(ckpt, work)
    rest, _, _ = train(tmp, "resume", ["--steps", STEPS, "--checkpoint-dir", work, "--resume"])
    assert rest["first_step"] == SAVED and losses(rest) == losses(whole)[SAVED:]


@pytest.mark.parametrize("layout", [n for n in LAYOUTS if n != "single"])
def test_a_checkpoint_reshards_onto_the_dense_layouts(saved_undropped, layout):
    tmp, whole, ckpt = saved_undropped
    np, flags = LAYOUTS[layout]
    work = tmp / f"to-{layout}"
    shutil.copytree(ckpt, work)
    rest, _, _ = train(tmp, f"to-{layout}", ["--steps", STEPS, "--checkpoint-dir", work, "--resume", *flags, *SAME_FUNCTION],
                       np=np)
    assert rest["first_step"] == SAVED
    assert losses(rest) == pytest.approx(losses(whole)[SAVED:], rel=1e-5)
