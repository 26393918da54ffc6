"""Large-batch learning-rate rules and the cyclic schedule (issue #21), as a run applies and records them:
--lr-scaling scales the given --lr by the global batch over --base-batch (linear or sqrt), every step's
rate is the scaled one, and the record keeps both; a bad combination is one line."""
import json

import pytest

from helpers import run_trainscope


def train(tmp_path, args):
    out = tmp_path / "run.json"
    r = run_trainscope(["train", "--model", "mlp", "--steps", 6, "--warmup-steps", 1, "--no-ceiling", "--json", out] + args)
    assert r.rc == 0, r.err
    (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
    return rec


@pytest.mark.parametrize("rule,factor", [("linear", 4.0), ("sqrt", 2.0)])
def test_the_rule_scales_every_steps_rate(tmp_path, rule, factor):
    rec = train(tmp_path, ["--batch", 32, "--lr", 0.01, "--lr-scaling", rule, "--base-batch", 8])
    scaling = rec["config"]["resolved"]["schedule"]["scaling"]
    assert scaling == {"rule": rule, "base_batch": 8, "given_lr": 0.01, "factor": pytest.approx(factor)}
    assert all(p["lr"] == pytest.approx(0.01 * factor) for p in rec["loss_curve"])


def test_the_cyclic_rate_rises_and_falls(tmp_path):
    rec = train(tmp_path, ["--schedule", "cyclic", "--lr", 0.01, "--min-lr", 0.001, "--lr-step-size", 2])
    assert [p["lr"] for p in rec["loss_curve"]] == pytest.approx([0.001, 0.0055, 0.01, 0.0055, 0.001, 0.0055])


def test_a_scaling_rule_without_its_base_is_one_line():
    r = run_trainscope(["train", "--model", "mlp", "--steps", 2, "--no-ceiling", "--lr-scaling", "linear"])
    assert r.rc == 2 and len(r.error_lines()) == 1, r.err
    assert "--lr-scaling linear needs --base-batch" in r.error_lines()[0]
