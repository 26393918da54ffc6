"""`train --mllog` read by MLPerf's own training compliance checker (issue #36): mlcommons/logging's
`python3 -m mlperf_logging.compliance_checker --usage training --ruleset 6.0.0`, carried unchanged in
tests/data/mlperf_logging (its README names the commit). A closed-division run of each model states its
submission fields and the checker applies the 6.0.0 rules common to every benchmark (common.yaml,
closed_common.yaml): every one passes but the one no trainscope run can pass, that submission_benchmark is one of
MLPerf's benchmarks. The checker then reads the benchmark's own rules file, which MLPerf has only for its
benchmarks (for any other name it stops with a FileNotFoundError), so the test gives it an empty one: MLPerf has
no rules for mlp_tiny. Every key logged is one of mllog's constants, and epoch_num an integer (which the checker
does not check)."""
import json
import re
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT, run_trainscope

CHECKER = ROOT / "tests" / "data" / "mlperf_logging"
SEPARATOR = "\n" + "-" * 30 + "\n"  # between the checker's messages (mlp_compliance.py log_messages)
NOT_AN_MLPERF_BENCHMARK = ("CHECK for 'submission_benchmark' failed",
                           "failed test:  v['value'] in ['flux1', 'dlrm_dcnv2', 'llama31_8b', 'llama2_70b_lora', "
                           "'llama31_405b', 'gpt_oss_20b', 'deepseekv3_671b']")
MODELS = {
    "mlp": ["--model", "mlp", "--batch", 16, "--lr", 3e-3, "--optimizer", "adamw"],
    "cnn": ["--model", "cnn", "--batch", 8, "--lr", 0.05, "--optimizer", "sgd"],
    "transformer": ["--model", "transformer", "--batch", 8, "--lr", 3e-3, "--micro-batches", 2],
}
# Two evaluations over 4 steps, each on 2 batches of 2048 synthetic samples' held-out split: seconds.
RUN = ["train", "--preset", "tiny", "--synthetic-size", 2048, "--eval-every", 2, "--eval-batches", 2, "--steps", 4,
       "--no-ceiling", "--warmup-steps", 1]
CLOSED = ["--mllog-org", "TestOrg", "--mllog-platform", "vm", "--mllog-division", "closed"]
# eval_accuracy holds the run's quality metric: top-1, or the loss with --target-loss (never reached here).
METRIC = {"mlp": ("accuracy", []), "cnn": ("accuracy", []), "transformer": ("loss", ["--target-loss", 1e-6])}
CLEARED = {"cnn"}  # runs whose launcher says it dropped the page cache (--mllog-caches-cleared): cache_clear true


def mllog(tmp_path, args):
    log = tmp_path / "run.mllog"
    r = run_trainscope(RUN + args + ["--mllog", log, "--json", tmp_path / "run.json"], timeout=300)
    assert r.rc == 0, r.err
    return log


def check(tmp_path, log, benchmark):
    """The checker's messages on log (one per failed rule, as it prints them) and its full output."""
    checker = tmp_path / "checker"
    shutil.copytree(CHECKER, checker)
    if benchmark:
        (checker / "mlperf_logging" / "compliance_checker" / "training_6.0.0" / f"closed_{benchmark}.yaml").write_text("")
    out = tmp_path / "checker.log"
    r = subprocess.run([sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training", "--ruleset",
                        "6.0.0", "--log_output", str(out), str(log)], env={"PYTHONPATH": str(checker), "PATH": "/usr/bin"},
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    text = out.read_text()
    assert "Found parsing errors" not in text, text
    if r.returncode == 0:
        assert "INFO - SUCCESS" in text
        return [], text
    assert r.returncode == 1 and text.rstrip().endswith("ERROR - FAILED"), r.stderr + text
    body = text.split("WARNING - ", 1)[1].rsplit("ERROR - FAILED", 1)[0]
    return [m.strip() for m in body.split(SEPARATOR) if m.strip()], text


def events(log):
    lines = log.read_text().splitlines()
    assert all(line.startswith(":::MLLOG {") for line in lines)
    return [json.loads(line[len(":::MLLOG "):]) for line in lines]


def mllog_keys():
    text = (CHECKER / "mlperf_logging" / "mllog" / "constants.py").read_text()
    return set(re.findall(r'^[A-Z0-9_]+ = "([a-z0-9_]+)"$', text, re.M))


@pytest.mark.parametrize("model", list(MODELS))
def test_a_closed_division_run_passes_every_rule_but_the_benchmarks_name(tmp_path, model):
    metric, target = METRIC[model]
    log = mllog(tmp_path, MODELS[model] + CLOSED + target + (["--mllog-caches-cleared"] if model in CLEARED else []))
    messages, text = check(tmp_path, log, f"{model}_tiny")
    assert "Compliance checks: training_6.0.0/closed_common.yaml" in text
    assert len(messages) == 1 and all(part in messages[0] for part in NOT_AN_MLPERF_BENCHMARK), text
    got = events(log)
    assert {e["key"] for e in got} <= mllog_keys()
    assert [e["value"] for e in got if e["key"] == "cache_clear"] == [model in CLEARED]
    loop = [e for e in got if "samples_count" in e["metadata"]]
    assert [e["key"] for e in loop] == ["block_start", "block_stop", "eval_start", "eval_stop", "eval_accuracy"] * 2
    batch = MODELS[model][MODELS[model].index("--batch") + 1]
    for e in loop:
        m = e["metadata"]
        assert type(m["epoch_num"]) is int and m["epoch_num"] == 1 and m["samples_count"] == m["step"] * batch
    (rec,) = [r for r in json.loads((tmp_path / "run.json").read_text())["records"] if r["kind"] == "train"]
    assert [e["value"] for e in loop if e["key"] == "eval_accuracy"] == [p[metric] for p in rec["eval"]["points"]]


def test_epochs_are_counted_by_the_data_and_change_at_its_end(tmp_path):
    """64 training samples, 4 a step, an evaluation every 16 steps: the first block ends on the epoch's last sample
    (epoch 1), the next starts on the second epoch's first (epoch 2); eval_samples is what each evaluation reads."""
    log = tmp_path / "epochs.mllog"
    r = run_trainscope(["train", "--model", "mlp", "--preset", "tiny", "--batch", 4, "--synthetic-size", 64,
                        "--eval-every", 16, "--eval-batches", 1, "--steps", 32, "--no-ceiling", "--warmup-steps", 1,
                        "--mllog", log], timeout=300)
    assert r.rc == 0, r.err
    got = events(log)
    points = {e["key"]: e["value"] for e in got if e["key"] in ("train_samples", "eval_samples")}
    assert points == {"train_samples": 64, "eval_samples": 4}
    loop = [(e["key"], e["metadata"]["samples_count"], e["metadata"]["epoch_num"]) for e in got
            if e["key"] in ("block_start", "block_stop", "eval_stop")]
    assert loop == [("block_start", 0, 1), ("block_stop", 64, 1), ("eval_stop", 64, 1),
                    ("block_start", 64, 2), ("block_stop", 128, 2), ("eval_stop", 128, 2)]


def test_a_log_without_the_submission_options_names_what_is_missing(tmp_path):
    """Nothing is made up: without --mllog-org, --mllog-platform and --mllog-division those lines are not logged,
    and the checker says so (without a division it allows initialisation no time at all)."""
    messages, text = check(tmp_path, mllog(tmp_path, MODELS["mlp"]), None)
    firsts = sorted(re.sub(r"line \d+", "line N", m.splitlines()[0]) for m in messages)
    assert firsts == ["CHECK for 'init_stop' failed in line N:"] + [
        f"Required EXACTLY_ONE occurrence of 'submission_{f}' but found 0" for f in ("division", "org", "platform")], text


@pytest.mark.parametrize("args,line", [
    (["--mllog-division", "closd"], "--mllog-division closd: expected none, closed or open"),
    (["--mllog-org", "  "], "--mllog-org '  ': blank; give the submitting organization's name"),
    (["--mllog-platform", "\t"], "--mllog-platform '\\x09': blank; give the name of the system the run trained on"),
])
def test_bad_submission_fields_are_one_line(tmp_path, args, line):
    r = run_trainscope(RUN + MODELS["mlp"] + ["--mllog", tmp_path / "run.mllog"] + args)
    (error,) = r.error_lines()
    assert r.rc == 2 and error.startswith(f"trainscope: error: {line}"), r.err
    assert not (tmp_path / "run.mllog").exists()


def test_a_submission_field_without_a_log_is_one_line():
    r = run_trainscope(RUN + MODELS["mlp"] + ["--mllog-org", "TestOrg"])
    line = "trainscope: error: --mllog-org says what the --mllog log states: give --mllog FILE"
    assert r.rc == 2 and r.error_lines() == [line], r.err
