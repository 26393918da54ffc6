"""Nothing measured is lost (issue #17, docs/reliability.md "Lost results"): a training run killed (kill -9,
SIGTERM, Ctrl-C) or hung under mpirun keeps every step it trained in its stream, and the error line says
what was kept; a scale point or a suite step the same; the readers take such a stream and mark it
incomplete; a string that is not UTF-8 is written as U+FFFD instead of ending the run; a run that diverges
stops with one line and keeps the steps before it."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from helpers import base_env, read_jsonl, run_trainscope, trainscope_path
from reports.common.load import load_result, validate as validate_result


def progress(stream):
    return [r["train_step"] for r in read_jsonl(stream) if r["kind"] == "train_progress"]


def start_train(tmp_path, name, extra=(), env=None):
    """A long single-process training run whose steps take at least 20 ms each (a planted delay), so that a
    signal can come mid-run; returns the process and its stream's path."""
    out = tmp_path / f"{name}.json"
    cmd = [trainscope_path(), "train", "--model", "mlp", "--steps", "100000", "--no-ceiling", "--json", str(out), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=base_env({"TRAINSCOPE_FAULT": "delay:rank=0:ms=20", **(env or {})}))
    return proc, tmp_path / f"{name}.jsonl"


def wait_for_steps(proc, stream, steps):
    """Until the stream holds `steps` trained steps (a deadline, not a timing: the test waits for an event)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if stream.exists() and len(progress(stream)) >= steps:
            return
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"the run did not stream {steps} steps: {proc.communicate()[1]}")


def check_incomplete_report(tmp_path, stream, steps_done):
    """The readers take the stream of a run that did not finish and say so."""
    result = load_result(stream)
    assert result.incomplete.startswith("the run did not finish")
    (train,) = result.records_of("train")
    validate_result({"schema": "trainscope/result/v1", "run": result.run, "records": [train]}, "made")
    assert not train["completed"] and train["steps_done"] == steps_done
    assert [p["step"] for p in train["loss_curve"]] == list(range(steps_done))
    assert "without writing its train record" in train["error"]
    r = run_trainscope(["report", stream, "-o", tmp_path / "rep"])
    assert r.rc == 0, r.err
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "incomplete: the run did not finish" in html and f"stopped after {steps_done} step(s)" in html
    assert "**incomplete**" in (tmp_path / "rep" / "summary.md").read_text()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["kill-9", "SIGTERM", "SIGINT"])
def test_a_killed_train_keeps_every_step_it_trained(tmp_path, sig):
    proc, stream = start_train(tmp_path, "killed")
    wait_for_steps(proc, stream, 5)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == (-sig if sig == signal.SIGKILL else 128 + sig), err
    steps = progress(stream)
    assert len(steps) >= 5 and steps == list(range(len(steps)))  # every step trained, in order
    if sig != signal.SIGKILL:  # the line says what is there, and it is
        records = len(read_jsonl(stream)) - 1  # the run line is no record
        # the step in flight (or, signalled just as a step ended, the one before, not yet called done)
        assert any(f"stopped by signal {int(sig)} during train step {n};" in err for n in (len(steps), len(steps) - 1)), err
        assert f"records measured so far are in {stream} ({records} records)" in err, err
    check_incomplete_report(tmp_path, stream, len(steps))


def start_hung(tmp_path, extra):
    """A training run that hangs at the start of its first step; returns once it is there: its banner reaches the
    pipe only with the flush right before the training loop (after the ceiling's records are streamed)."""
    out = tmp_path / "early.json"
    proc = subprocess.Popen([trainscope_path(), "train", "--model", "mlp", "--steps", "5", "--json", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=base_env({"TRAINSCOPE_FAULT": "hang:rank=0:step=0"}))
    for line in proc.stdout:
        if line.startswith("# train mlp"):
            return proc, out, tmp_path / "early.jsonl"
    pytest.fail(f"no banner: {proc.communicate()[1]}")


def test_a_stopped_run_says_what_it_kept_even_when_no_step_was_trained(tmp_path):
    proc, _, stream = start_hung(tmp_path, [])
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    kept = len(read_jsonl(stream)) - 1  # the GEMM ceiling's records: measurements too
    assert kept > 0 and f"records measured so far are in {stream} ({kept} records)" in err, err
    assert progress(stream) == []


def test_a_stopped_run_that_measured_nothing_says_so_and_leaves_no_file(tmp_path):
    proc, out, stream = start_hung(tmp_path, ["--no-ceiling"])
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert err.rstrip().endswith("; nothing was measured, so nothing was kept"), err
    assert not stream.exists() and not out.exists()  # no empty stream left to pretend otherwise


@pytest.mark.parametrize("hung", [1, 0], ids=["stage-1", "rank-0"])
def test_a_hung_pipeline_under_mpirun_keeps_the_steps_before_the_hang(tmp_path, hung):
    out = tmp_path / "hang.json"
    r = run_trainscope(["train", "--model", "transformer", "--pp", 2, "--micro-batches", 4, "--steps", 30, "--timeout", 3,
                        "--no-ceiling", "--json", out], np=2, env={"TRAINSCOPE_FAULT": f"hang:rank={hung}:step=4"}, timeout=120)
    assert r.rc == 3, r.err
    stream = tmp_path / "hang.jsonl"
    assert progress(stream) == [0, 1, 2, 3]  # streamed by process 0 as each step ended
    (train,) = load_result(stream).records_of("train")  # its own record, or made from the steps when it wrote none
    assert not train["completed"] and train["steps_done"] == 4
    lies = [line for line in r.err.splitlines() if "records measured so far" in line and "(" not in line.split("so far")[1]]
    assert not lies, r.err  # a claim about the records always carries the count that backs it


def test_a_killed_scale_point_keeps_its_steps_in_the_study(tmp_path, validate):
    out = tmp_path / "scale.json"
    r = run_trainscope(["scale", "--ranks", 1, "--launcher", "none", "--json", out, "--model", "mlp", "--steps", 6,
                        "--warmup-steps", 1, "--no-ceiling"], env={"TRAINSCOPE_FAULT": "die:rank=0:step=3"}, timeout=300)
    assert r.rc == 1, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    assert [p["train_step"] for p in doc["records"] if p["kind"] == "train_progress"] == [0, 1, 2]
    (point,) = [x for x in doc["records"] if x["kind"] == "scaling"]
    assert not point["completed"] and point["model"] == "mlp"  # what ran is known from the steps' description
    (train,) = load_result(out).records_of("train")
    assert train["steps_done"] == 3 and train["timed_steps"] == 2 and train["step_time_us"]["n"] == 2


def test_a_killed_suite_keeps_its_finished_steps_and_the_trained_ones(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('[[step]]\nkind = "collectives"\nname = "small"\nops = "all_reduce"\nmax_bytes = "4K"\niters = 2\n\n'
                     '[[step]]\nkind = "train"\nname = "long"\nmodel = "mlp"\nsteps = 100000\nceiling = false\n')
    proc = subprocess.Popen([trainscope_path(), "suite", str(suite), "--json", str(tmp_path / "s.json")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=base_env({"TRAINSCOPE_FAULT": "delay:rank=0:ms=20"}))
    stream = tmp_path / "s.jsonl"
    wait_for_steps(proc, stream, 3)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    result = load_result(stream)
    assert result.incomplete and len(result.records_of("collective")) > 0
    (train,) = result.records_of("train")
    assert train["step"] == "long" and train["steps_done"] >= 3


def test_compare_takes_a_crashed_run_and_cannot_pass_it(tmp_path):
    proc, stream = start_train(tmp_path, "cand")
    wait_for_steps(proc, stream, 12)
    proc.kill()
    proc.communicate()
    # The baseline: the same measurements, as a finished run's document; so nothing but the candidate's end decides.
    crashed = load_result(stream)
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"schema": "trainscope/result/v1", "run": dict(crashed.run, ended_at=crashed.run["started_at"]),
                                "records": crashed.records}))
    r = run_trainscope(["compare", base, stream, "--json", tmp_path / "cmp.json"])
    assert r.rc == 3, (r.out, r.err)  # inconclusive at best: what it never measured cannot pass
    verdict = r.out.strip().splitlines()[-1]
    assert verdict.startswith("verdict: inconclusive") and f"incomplete: candidate {stream}: the run did not finish" in verdict
    cmp = json.loads((tmp_path / "cmp.json").read_text())
    assert cmp["outcome"] == "inconclusive" and cmp["incomplete"][0].startswith(f"candidate {stream}")


def test_strings_that_are_not_utf8_are_written_as_replacement_characters(tmp_path):
    data = os.fsencode(tmp_path) + b"/donn\xe9es.txt"  # a Latin-1 file name
    with open(data, "wb") as f:
        f.write(bytes(range(32, 127)) * 40)
    out = tmp_path / "utf8.json"
    env = {os.fsencode(k): os.fsencode(v) for k, v in base_env().items()}
    env[b"NCCL_DEBUG"] = b"INFO\xff"
    cmd = [os.fsencode(trainscope_path()), b"train", b"--model", b"transformer", b"--steps", b"3", b"--batch", b"2",
           b"--warmup-steps", b"1", b"--no-ceiling", b"--data", b"text:" + data, b"--label", b"caf\xe9", b"--json", os.fsencode(out)]
    r = subprocess.run(cmd, capture_output=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_bytes().decode("utf-8"))  # strict: every byte is UTF-8
    (train,) = [x for x in doc["records"] if x["kind"] == "train"]
    assert train["label"] == "caf\ufffd"
    assert doc["run"]["environment"]["NCCL_DEBUG"] == "INFO\ufffd"
    assert train["config"]["data"] == "text:" + str(tmp_path) + "/donn\ufffdes.txt"
    for line in (tmp_path / "utf8.jsonl").read_bytes().decode("utf-8").splitlines():
        json.loads(line)
    assert run_trainscope(["report", out, "-o", tmp_path / "rep"]).rc == 0


def test_a_diverging_gradient_stops_with_one_line_and_keeps_the_steps_before(tmp_path, validate):
    out = tmp_path / "diverge.json"
    r = run_trainscope(["train", "--model", "cnn", "--optimizer", "sgd", "--lr", "1e6", "--steps", 12, "--batch", 4,
                        "--warmup-steps", 0, "--no-ceiling", "--json", out])
    assert r.rc == 1, r.err
    (line,) = r.error_lines()
    # The step and the value (which step blows up first depends on the kernels' rounding: 3 or 4 here).
    diverged = re.search(r"step (\d+): the gradient norm is \S*nan", line)
    assert diverged and int(diverged.group(1)) >= 1, line
    doc = json.loads(out.read_text())
    validate(doc)
    (train,) = [x for x in doc["records"] if x["kind"] == "train"]
    assert not train["completed"] and train["steps_done"] == int(diverged.group(1))  # the steps before it, kept
    assert train["error"] == line.split("(vm): ")[-1]
    assert "parameter_norms" not in train or all(v >= 0 for v in train["parameter_norms"].values())


@pytest.mark.parametrize("env,message", [
    ({"TRAINSCOPE_FAULT": "hang:rank=abc"}, "TRAINSCOPE_FAULT: rank='abc' must be a whole number"),
    ({"TRAINSCOPE_FAULT": "delay:rank=0:ms=-1"}, "TRAINSCOPE_FAULT: ms='-1' must be a whole number"),
    ({"RANK": "0", "WORLD_SIZE": "1", "TRAINSCOPE_BOOTSTRAP_TIMEOUT": "abc"},
     "TRAINSCOPE_BOOTSTRAP_TIMEOUT='abc' is not a number of seconds above 0"),
    ({"RANK": "0", "WORLD_SIZE": "1", "TRAINSCOPE_BOOTSTRAP_TIMEOUT": "nan"},
     "TRAINSCOPE_BOOTSTRAP_TIMEOUT='nan' is not a number of seconds above 0"),
])
def test_numbers_in_the_environment_are_numbers_or_one_line(tmp_path, env, message):
    out = tmp_path / "env.json"
    r = run_trainscope(["train", "--model", "mlp", "--steps", 3, "--no-ceiling", "--json", out], env=env, timeout=120)
    assert r.rc == 2, (r.rc, r.err)
    assert len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
    assert not out.exists() and not (tmp_path / "env.jsonl").exists()


@pytest.mark.parametrize("args,message", [
    (["--straggler-ms", "nan"], "--straggler-ms nan: must be a finite number of milliseconds, 0 or more"),
    (["--straggler-ms", "-1"], "--straggler-ms -1.0: must be a finite number of milliseconds, 0 or more"),
    (["--check-kernel-coverage", "inf"], "--check-kernel-coverage must be a positive percentage"),
])
def test_analyze_numbers_are_finite(tmp_path, args, message):
    r = run_trainscope(["analyze", tmp_path] + args)
    assert r.rc == 2 and len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
