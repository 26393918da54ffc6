"""Model averaging, or local SGD (issue #21): under --sync average each data-parallel rank steps on its own
gradients and the parameters are averaged every --average-every K steps. With K = 1 and SGD (momentum and
weight decay, linear in the gradients) it is synchronous all-reduce data parallel to float rounding; with
larger K it communicates K times less, and the record shows both sides (bytes per step, the losses).
Bad uses are one line, exit 2, before any step."""
import json

import pytest

from helpers import run_trainscope

STEPS = 8
MODELS = {
    "mlp": ["--model", "mlp", "--preset", "tiny", "--batch", 16],
    "transformer": ["--model", "transformer", "--preset", "tiny", "--batch", 8],
}
SGD = ["--optimizer", "sgd", "--lr", 0.05, "--momentum", 0.9, "--weight-decay", 0.01]


def train(tmp_path, name, args, np=2):
    out = tmp_path / f"{name}.json"
    r = run_trainscope(["train", "--steps", STEPS, "--warmup-steps", 1, "--no-ceiling", "--json", out] + args, np=np, timeout=600)
    assert r.rc == 0, r.err
    (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
    return rec


def losses(rec):
    return [p["loss"] for p in rec["loss_curve"]]


def moved_bytes(rec):
    """The all-reduce bytes of the timed steps beyond the loss's (one float64 per step)."""
    return sum(c["bytes"] * c["count"] for c in rec["collectives"] if c["op"] == "all_reduce" and c["bytes"] > 8)


@pytest.mark.parametrize("model", list(MODELS))
def test_averaging_every_step_with_sgd_is_synchronous_data_parallel(tmp_path, model):
    sync = train(tmp_path, "allreduce", MODELS[model] + SGD)
    avg = train(tmp_path, "average", MODELS[model] + SGD + ["--sync", "average"])
    assert avg["layout"]["sync"] == "average" and avg["layout"]["average_every"] == 1
    assert losses(avg) == pytest.approx(losses(sync), rel=1e-5)
    norms, ref = avg["parameter_norms"], sync["parameter_norms"]
    assert norms.keys() == ref.keys() and all(norms[k] == pytest.approx(ref[k], rel=1e-5) for k in ref)
    # The same bytes per step (every parameter once), now after the update instead of during the backward.
    assert moved_bytes(avg) == pytest.approx(moved_bytes(sync), rel=0.01)


def test_averaging_every_fourth_step_communicates_a_quarter_and_drifts(tmp_path):
    args = MODELS["mlp"] + SGD
    sync = train(tmp_path, "allreduce", args)
    avg = train(tmp_path, "average4", args + ["--sync", "average", "--average-every", 4])
    assert avg["layout"]["name"].endswith("average(4)")
    timed = avg["timed_steps"]  # steps 1..7: averaged after steps 3 and 7 (the 4th and 8th updates)
    per_step = moved_bytes(avg) / timed
    assert 0 < per_step < 0.35 * moved_bytes(sync) / sync["timed_steps"]
    assert not losses(avg) == pytest.approx(losses(sync), rel=1e-5), "replicas that drift train otherwise"
    assert losses(avg)[-1] < losses(avg)[0]


def test_the_optimizer_state_can_be_averaged_too(tmp_path):
    args = MODELS["mlp"] + ["--optimizer", "adamw", "--lr", 3e-3]
    params = train(tmp_path, "params", args + ["--sync", "average"])
    both = train(tmp_path, "both", args + ["--sync", "average", "--average-optimizer"])
    assert both["layout"]["average_optimizer"] is True
    # AdamW keeps two moments per parameter: three times the bytes.
    assert moved_bytes(both) == pytest.approx(3 * moved_bytes(params), rel=0.01)


@pytest.mark.parametrize("args,line", [
    (["--sync", "average", "--average-every", 0], "--average-every 0: must be at least 1"),
    (["--average-every", 2], "--average-every and --average-optimizer are --sync average's: give --sync average"),
    (["--sync", "average", "--zero", 1], "--sync average: every rank keeps and steps the whole model"),
    (["--sync", "average", "--precision", "bfloat16"], "--sync average with --precision bfloat16: not yet"),
])
def test_bad_averaging_is_one_line(args, line):
    r = run_trainscope(["train", "--model", "mlp", "--steps", 2, "--no-ceiling"] + args, np=2)
    assert r.rc == 2, r.err
    lines = r.error_lines()
    assert len(lines) == 1 and line in lines[0], r.err
