"""--dropout (issue #21): masks keyed by each element's sample and feature, so data, tensor and pipeline
parallel training with dropout follows the one-process run; dropout changes the training (the masks are
applied) and bad values are one error line."""
import json

import pytest

from helpers import run_trainscope

STEPS = 4
RTOL = 1e-5
MODELS = {
    "mlp": ["--model", "mlp", "--preset", "tiny", "--batch", 16, "--lr", 3e-3],
    "transformer": ["--model", "transformer", "--preset", "tiny", "--batch", 8, "--lr", 3e-3],
    "cnn": ["--model", "cnn", "--preset", "tiny", "--batch", 8, "--lr", 0.01, "--optimizer", "sgd"],
}


def train(tmp_path, name, args, np=None):
    out = tmp_path / f"{name}.json"
    r = run_trainscope(["train", "--no-ceiling", "--steps", STEPS, "--warmup-steps", 1, "--json", out] + [str(a) for a in args],
                       np=np, timeout=600)
    assert r.rc == 0, r.err
    (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
    return rec


def losses(rec):
    return [p["loss"] for p in rec["loss_curve"]]


@pytest.mark.parametrize("model,np,flags,micro", [
    ("mlp", 2, [], 1),
    ("mlp", 2, ["--tp", 2], 1),
    ("transformer", 2, [], 1),
    ("transformer", 2, ["--tp", 2], 1),
    ("transformer", 2, ["--pp", 2, "--micro-batches", 2], 2),
    ("cnn", 2, [], 1),
])
def test_every_layout_draws_the_one_process_masks(tmp_path, model, np, flags, micro):
    args = MODELS[model] + ["--dropout", 0.2]
    one = train(tmp_path, "one", args + ["--micro-batches", micro])
    rec = train(tmp_path, "layout", args + flags, np=np)
    assert rec["config"]["dropout"] == 0.2
    # The CNN's SyncBatchNorm and channels-last kernels sum in other orders (test_parallel.py's CNN_TOLERANCE).
    rtol = 3e-4 if model == "cnn" else RTOL
    for a, b in zip(losses(rec), losses(one)):
        assert a == pytest.approx(b, rel=rtol)


@pytest.mark.parametrize("model", list(MODELS))
def test_dropout_changes_the_training_and_nothing_else(tmp_path, model):
    """The first step's loss differs with dropout (its masks are applied to the same weights and batch); with
    p = 0 the run is the run without the flag, bit for bit."""
    plain = train(tmp_path, "plain", MODELS[model])
    zero = train(tmp_path, "zero", MODELS[model] + ["--dropout", 0])
    dropped = train(tmp_path, "dropped", MODELS[model] + ["--dropout", 0.3])
    assert losses(zero) == losses(plain)
    assert losses(dropped)[0] != pytest.approx(losses(plain)[0], rel=1e-4)


@pytest.mark.parametrize("value,message", [
    ("1", "--dropout: 1 is not in [0, 1)"),
    ("-0.1", "--dropout: -0.1 is not in [0, 1)"),
    ("nan", "--dropout: nan is not a finite number"),
])
def test_a_bad_dropout_is_one_error_line(tmp_path, value, message):
    r = run_trainscope(["train", "--no-ceiling", "--steps", 3, "--dropout", value, "--json", tmp_path / "x.json"])
    assert r.rc == 2 and len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
    assert not (tmp_path / "x.json").exists()
