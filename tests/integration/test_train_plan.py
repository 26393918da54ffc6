"""`trainscope train ... --plan N` (issue #41's first slice): what each rank of a layout at N ranks holds, planned in one
process by the trainer's own placement, is what the real run at N ranks records, rank by rank: the layout's
model-state formula exactly, and the activation buffers. Plus its refusals, one line each."""
import json

import pytest

from helpers import run_trainscope

MLP = ["--model", "mlp", "--preset", "tiny", "--batch", 8]
TRANSFORMER = ["--model", "transformer", "--preset", "tiny", "--batch", 8]
RUN = ["--steps", 2, "--warmup-steps", 1, "--no-ceiling"]
# name: (model, layout flags, ranks)
LAYOUTS = {
    "dp2-zero3": (MLP, ["--zero", 3], 2),
    "tp2": (TRANSFORMER, ["--tp", 2], 2),
    "pp2": (TRANSFORMER, ["--pp", 2, "--micro-batches", 2], 2),
    "dp2xpp2": (MLP, ["--pp", 2, "--micro-batches", 2], 4),
    "ps": (MLP, ["--sync", "ps"], 2),
}


def records(path, kind):
    return [r for r in json.loads(path.read_text())["records"] if r["kind"] == kind]


@pytest.fixture(scope="module", params=list(LAYOUTS))
def pair(request, tmp_path_factory, validate):
    """The layout planned for N ranks in one process, and trained for real at N ranks."""
    model, layout, ranks = LAYOUTS[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    plan_path, run_path = tmp / "plan.json", tmp / "run.json"
    r = run_trainscope(["train", *model, *layout, "--plan", ranks, "--json", plan_path])
    assert r.rc == 0, r.err
    plan_doc = json.loads(plan_path.read_text())
    validate(plan_doc)
    r = run_trainscope(["train", *model, *layout, *RUN, "--json", run_path], np=ranks, timeout=300)
    assert r.rc == 0, r.err
    (train,) = records(run_path, "train")
    return records(plan_path, "train_plan"), train


def test_one_record_per_rank(pair):
    plan, train = pair
    assert [p["rank"] for p in plan] == list(range(train["world_size"]))
    assert all(p["layout"] == train["layout"]["name"] for p in plan)


def test_model_state_formula_is_the_runs_rank_by_rank(pair):
    plan, train = pair
    assert [p["formula_bytes"] for p in plan] == [m["formula_bytes"] for m in train["memory"]["ranks"]]


def test_activations_are_the_runs_rank_by_rank(pair):
    """The plan counts the buffers the run allocates before its first step (its stage model's, the pipeline's kept
    inputs); the steps hold no other activation buffer, so the run's peak is the plan's."""
    plan, train = pair
    assert [p["activation_bytes"] for p in plan] == [m["peak_bytes"]["activations"] for m in train["memory"]["ranks"]]


def test_flops_add_up_to_the_runs(pair):
    """Each rank computes its stage's layers, of its tensor-parallel slice: over the ranks that is the run's count
    (the whole model's, 3 forwards per micro-batch, per data-parallel rank) once per slice."""
    plan, train = pair
    assert sum(p["flops_per_step"] for p in plan) == pytest.approx(train["flops_per_step"] * train["layout"]["tp"])


@pytest.mark.parametrize("args,line", [
    (["--plan", -1], "--plan"),
    (["--tp", 3, "--plan", 2], "--tp"),
])
def test_refusals_are_one_line(args, line):
    r = run_trainscope(["train", *MLP, *args])
    assert r.rc == 2, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1 and line in r.err


def test_refused_under_mpirun():
    r = run_trainscope(["train", *MLP, "--plan", 2], np=2)
    assert r.rc != 0
    assert "without mpirun" in r.err
