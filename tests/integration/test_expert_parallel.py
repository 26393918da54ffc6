"""Expert parallelism (--ep, issue #42): the mixture's experts divided among the expert-parallel ranks, tokens moved
to them and back by alltoallvs, trains as one process does (same routing, same experts, the same loss curve and
weights within test_parallel's float32 tolerance), alone and with data, tensor and pipeline parallelism; checkpoints
written by each expert's owner load on any layout; the routing counts are exact under the planted router skew with
the capacity per rank's micro-batch; layouts it cannot make are one line before any work.

The one-process reference runs the same function: no capacity limit and no aux loss, both of which are per rank's
micro-batch (as Megatron's), so any split of the batch changes them (test_moe.py says the same of the dense layouts)."""
import json
import math
import shutil

import pytest

from helpers import run_trainscope

B, T, E, K = 8, 32, 4, 2  # moe-tiny (presets.cpp): 4 experts, top-2
TRAIN = ["--model", "transformer", "--lr", 3e-3, "--clip-norm", 1.0, "--warmup-steps", 0, "--no-ceiling"]
MODEL = [*TRAIN, "--preset", "moe-tiny", "--batch", B]
SAME_FUNCTION = ["--capacity-factor", 0, "--aux-loss-coef", 0]
STEPS = 5
RTOL = 1e-5  # test_parallel's: the same float32 gradients summed in another order
# The parameters' norms: Adam turns float32 noise in a near-zero gradient (another summation order) into a step of lr,
# and moe-tiny's h.0.attn.proj.bias has such elements. Without --ep, 5 steps of --tp 2 end with its norm 1.6e-5 from one
# process's and --dp 4 --micro-batches 2 with 1.5e-5 (--zero 2 too: 1.3e-5); --ep 2 --tp 2 ends 1.1e-5, --ep 2 --dp 2
# --micro-batches 2 1.8e-5 (--zero 2: 1.5e-5). The losses stay within RTOL; experts summed over every replica
# (dp x ep, mixing different experts) put the first step's gradient norm 18% off (tried once, at ep2-dp2).
PARAM_RTOL = 5e-5

# name: (processes, layout flags, micro-batches)
LAYOUTS = {
    "ep1": (1, ["--ep", 1], 1),
    "ep2": (2, ["--ep", 2], 1),
    "ep4": (4, ["--ep", 4], 1),
    "ep2-accumulating": (2, ["--ep", 2, "--micro-batches", 2], 2),
    "ep2-dp2": (4, ["--ep", 2, "--dp", 2], 1),
    "ep2-tp2": (4, ["--ep", 2, "--tp", 2], 1),
    "ep2-pp2": (4, ["--ep", 2, "--pp", 2, "--micro-batches", 2], 2),
    # ZeRO over each group: the dense weights' shards over dp x ep, an expert's over its dp copies.
    "ep2-zero1": (2, ["--ep", 2, "--zero", 1], 1),
    "ep2-dp2-zero2": (4, ["--ep", 2, "--dp", 2, "--zero", 2, "--micro-batches", 2], 2),
    # ZeRO-3: a mixture's dense parameters gathered over dp x ep, its experts over their dp copies (alone at ep2: no
    # copies, so they stay whole), each layer's next ones prefetched.
    "ep2-zero3": (2, ["--ep", 2, "--zero", 3], 1),
    "ep2-dp2-zero3": (4, ["--ep", 2, "--dp", 2, "--zero", 3, "--prefetch", 2, "--micro-batches", 2], 2),
    "ep2-tp2-zero3": (4, ["--ep", 2, "--tp", 2, "--zero", 3], 1),
    "ep2-pp2-zero3": (4, ["--ep", 2, "--pp", 2, "--zero", 3, "--micro-batches", 2], 2),
    # LAMB's whole-tensor norms from ZeRO's pieces: the dense ones' over dp x ep, an expert's over its dp copies.
    "ep2-dp2-zero1-lamb": (4, ["--ep", 2, "--dp", 2, "--zero", 1, "--optimizer", "lamb"], 1),
    "ep2-dp2-zero3-lamb": (4, ["--ep", 2, "--dp", 2, "--zero", 3, "--optimizer", "lamb"], 1),
}


def train(where, name, args, np=None, env=None):
    out = where / f"{name}.json"
    r = run_trainscope(["train", *MODEL, *args, "--json", out], np=np, env=env, timeout=600)
    assert r.rc == 0, (name, r.err)
    doc = json.loads(out.read_text())
    (rec,) = [x for x in doc["records"] if x["kind"] == "train"]
    return rec, r.out, doc


_references = {}


def reference(tmp_path_factory, micro, optimizer=()):
    key = (micro, *optimizer)
    if key not in _references:
        _references[key] = train(tmp_path_factory.mktemp(f"ep-ref{micro}"), "ref",
                                 ["--steps", STEPS, "--micro-batches", micro, *optimizer, *SAME_FUNCTION])[0]
    return _references[key]


@pytest.mark.parametrize("name", LAYOUTS)
def test_expert_parallel_trains_like_one_process(tmp_path, tmp_path_factory, validate, name):
    np, flags, micro = LAYOUTS[name]
    rec, _, doc = train(tmp_path, name, ["--steps", STEPS, *flags, *SAME_FUNCTION], np=np if np > 1 else None)
    validate(doc)
    optimizer = flags[flags.index("--optimizer"):][:2] if "--optimizer" in flags else []
    ref = reference(tmp_path_factory, micro, tuple(optimizer))
    for a, b in zip(rec["loss_curve"], ref["loss_curve"], strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=RTOL), (a, b)
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=RTOL), (a, b)
    # Every parameter, experts included, whichever rank holds it: the record's norms are the whole model's.
    assert rec["parameter_norms"].keys() == ref["parameter_norms"].keys()
    for key, norm in ref["parameter_norms"].items():
        assert rec["parameter_norms"][key] == pytest.approx(norm, rel=PARAM_RTOL, abs=1e-7), key
    ep = flags[flags.index("--ep") + 1]
    assert rec["layout"]["ep"] == ep and {a["name"]: a["size"] for a in rec["mesh"]}["ep"] == ep
    ops = {(c["op"], c["group"]) for c in rec["collectives"]}
    if ep > 1:
        # The counts' all-gather and the exchanges ride the expert-parallel group, and the exchanges nothing else.
        assert {("all_gather", "ep"), ("alltoallv", "ep")} <= ops
        assert {group for op, group in ops if op == "alltoallv"} == {"ep"}
        if "--zero" in flags:  # the dense weights' shards over every replica (named by the axes of more than one rank)
            assert ("reduce_scatter", "-".join(a for a in ("dp", "ep") if rec["layout"][a] > 1)) in ops
        # The model is the one process's; a rank holds its own experts only (E / ep of them per mixture).
        assert rec["parameters"] == ref["parameters"] and rec["owned_parameters"] < rec["parameters"]
    else:
        assert rec["loss_curve"] == ref["loss_curve"]  # one rank: the same computation exactly
        assert not {op for op, _ in ops if op in ("all_gather", "alltoallv")}


def test_ep_ranks_are_nested_inside_data_parallel_as_megatrons(tmp_path):
    """rank = ((pp dp + dp_rank) ep + ep_rank) tp + tp_rank: the all-to-alls' ranks next to each other."""
    rec, _, _ = train(tmp_path, "mesh", ["--steps", 1, "--ep", 2, "--dp", 2, *SAME_FUNCTION], np=4)
    strides = {a["name"]: a["stride"] for a in rec["mesh"]}
    assert strides["ep"] == 1 and strides["dp"] == 2
    assert [(r["dp_rank"], r["ep_rank"]) for r in sorted(rec["ranks"], key=lambda r: r["rank"])] == [
        (k // 2, k % 2) for k in range(4)]


def test_a_skewed_router_under_ep_reports_its_drops_exactly(tmp_path):
    """Rank 0's router ranks the experts 0, 1, 2, 3 for every token: top-2 sends its N = B T / 2 tokens (its share of
    the batch) to experts 0 and 1, both on expert-parallel rank 0, each keeping ceil(1.25 N 2 / 4) of them."""
    steps, tokens = 3, B * T // 2
    capacity = math.ceil(1.25 * tokens * K / E)
    rec, out, _ = train(tmp_path, "skewed", ["--steps", steps, "--ep", 2], np=2,
                        env={"TRAINSCOPE_FAULT": "router:rank=0:scale=100"})
    for layer in rec["moe"]["layers"]:
        assert layer["capacity"] == capacity
        assert layer["tokens_per_expert"] == [steps * tokens, steps * tokens, 0, 0]
        assert layer["imbalance"] == E / K
        assert layer["dropped"] == steps * K * (tokens - capacity)
        assert f"# moe {layer['layer']}: tokens per expert {steps * tokens} {steps * tokens} 0 0" in out


SAVED = 2


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    return train(tmp_path_factory.mktemp("ep-whole"), "whole", ["--steps", STEPS, *SAME_FUNCTION])[0]


@pytest.mark.parametrize("source,target", [("ep2", "single"), ("single", "ep4"), ("ep2", "ep2-tp2"),
                                           ("ep2-dp2-zero3", "single"), ("single", "ep2-dp2-zero3")])
def test_a_checkpoint_of_the_experts_owners_loads_on_any_layout(tmp_path, whole, source, target):
    layouts = {**LAYOUTS, "single": (1, [], 1)}
    np, flags, _ = layouts[source]
    ckpt = tmp_path / "ckpt"
    train(tmp_path, "first", ["--steps", SAVED, "--checkpoint-dir", ckpt, *flags, *SAME_FUNCTION], np=np if np > 1 else None)
    index = json.loads((ckpt / f"step-{SAVED:08d}" / "index.json").read_text())
    # Every expert once, whichever rank wrote it.
    assert {f"h.{layer}.moe.experts.{e}.fc.weight" for layer in range(2) for e in range(E)} <= set(index["tensors"])
    np, flags, _ = layouts[target]
    work = tmp_path / "work"
    shutil.copytree(ckpt, work)
    rest, _, _ = train(tmp_path, "rest", ["--steps", STEPS, "--checkpoint-dir", work, "--resume", *flags, *SAME_FUNCTION],
                       np=np if np > 1 else None)
    assert rest["first_step"] == SAVED
    expected = [s["loss"] for s in whole["loss_curve"]][SAVED:]
    assert [s["loss"] for s in rest["loss_curve"]] == pytest.approx(expected, rel=RTOL)


MOE = ["--preset", "moe-tiny", "--batch", B]


@pytest.mark.parametrize("np,args,line", [
    (2, ["--preset", "tiny", "--batch", B, "--ep", 2], "--ep 2: the transformer model has no experts to divide"),
    (3, ["--preset", "moe-tiny", "--batch", 12, "--ep", 3], "--ep 3 does not divide the 4 experts of each mixture"),
    (2, [*MOE, "--ep", 2, "--sync", "ps"], "--ep 2: expert parallelism trains with --sync allreduce (not yet --sync ps)"),
    (2, [*MOE, "--ep", 0], "--ep 0: must be at least 1"),
    (2, [*MOE, "--ep", 4], "--tp 1 x --pp 1 x --ep 4 does not divide the 2 process(es) of this run"),
])
def test_layouts_expert_parallelism_cannot_make_are_one_line(tmp_path, np, args, line):
    r = run_trainscope(["train", *TRAIN, "--steps", 1, *args, "--json", tmp_path / "x.json"], np=np, timeout=120)
    assert r.rc == 2 and line in r.err, r.err
    assert not (tmp_path / "x.json").exists()


def test_recomputation_and_evaluation_exchange_too_and_change_nothing(tmp_path):
    """--recompute full runs each mixture's forward again in the backward (its all-to-alls too, on every ep rank alike),
    and an evaluation's forwards exchange as training's do: neither changes the losses."""
    common = ["--steps", 4, "--ep", 2, "--eval-every", 2, "--eval-batches", 2, *SAME_FUNCTION]
    plain, out, _ = train(tmp_path, "plain", common, np=2)
    again, out_again, _ = train(tmp_path, "recompute", [*common, "--recompute", "full"], np=2)
    assert again["loss_curve"] == plain["loss_curve"]
    assert again["moe"]["layers"][0]["tokens_per_expert"] == plain["moe"]["layers"][0]["tokens_per_expert"]
    evals = [line for line in out.splitlines() if line.startswith("# eval after step")]
    assert len(evals) == 2
    assert [e.split(" (")[0] for e in evals] == [line.split(" (")[0] for line in out_again.splitlines()
                                                 if line.startswith("# eval after step")]


def test_a_runs_routing_is_the_alltoallv_sweeps_counts(tmp_path):
    """The record's exchange_counts (rows each rank's dispatches sent each rank's experts) are what the sweep measures
    with `--alltoallv-counts RESULT` (summed over the layers); a result without them is one line before any work."""
    rec, _, _ = train(tmp_path, "routed", ["--steps", 3, "--ep", 2], np=2)
    layers = rec["moe"]["layers"]
    assert rec["warmup_steps"] == 0  # so the timed exchanges are every training forward's, as exchange_counts
    for layer in layers:
        rows = layer["exchange_counts"]
        assert len(rows) == 2 and all(len(r) == 2 for r in rows)
        # Process 0's row is what its dispatches sent, to itself too.
        assert sum(rows[0]) == layer["all_to_all"]["dispatch"]["rows_sent"]
    summed = [[sum(layer["exchange_counts"][s][d] for layer in layers) for d in range(2)] for s in range(2)]
    busiest = max(max(sum(row) for row in summed), max(summed[0][d] + summed[1][d] for d in range(2)))
    sweep = tmp_path / "sweep.json"
    sweep_of = ["collectives", "--backend", "mpi", "--ops", "alltoallv", "--alltoallv-counts", tmp_path / "routed.json",
                "-w", "1", "-n", "2"]
    r = run_trainscope([*sweep_of, "-b", 4 * busiest, "-e", 16 * busiest, "--json", sweep], np=2, timeout=120)
    assert r.rc == 0, r.err
    recs = [x for x in json.loads(sweep.read_text())["records"] if x["kind"] == "collective"]
    assert [x["count"] for x in recs] == [1, 2, 4]  # one, two and four elements per unit of the busiest rank's
    assert recs and all(x["alltoallv_counts"]["weights"] == summed for x in recs)
    assert all(x["check"]["passed"] for x in recs)
    # A sweep that ends below one element per unit measures nothing: one line before any work.
    r = run_trainscope([*sweep_of, "-b", 8, "-e", 4 * busiest - 4, "--json", tmp_path / "small.json"], np=2, timeout=120)
    assert r.rc == 2 and f"per call in float32 (its busiest rank's {busiest} units of one element); raise -e" in r.err, r.err
    assert not (tmp_path / "small.json").exists()
    # A result whose layers' matrices are not alike is one line too.
    doc = json.loads((tmp_path / "routed.json").read_text())
    (record,) = [x for x in doc["records"] if x["kind"] == "train"]
    record["moe"]["layers"][1]["exchange_counts"] = [[1, 2, 3]]
    (tmp_path / "bent.json").write_text(json.dumps(doc))
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "alltoallv", "--alltoallv-counts", tmp_path / "bent.json",
                        "--json", tmp_path / "no.json"], np=2, timeout=120)
    assert r.rc == 2 and "layer h.1.moe's exchange_counts is not an n x n matrix" in r.err, r.err
    dense, _, _ = train(tmp_path, "dense", ["--steps", 2])
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "alltoallv", "--alltoallv-counts", tmp_path / "dense.json",
                        "--json", tmp_path / "no.json"], np=2, timeout=120)
    assert r.rc == 2 and "a result without a mixture of experts trained with --ep" in r.err, r.err
    assert not (tmp_path / "no.json").exists()
