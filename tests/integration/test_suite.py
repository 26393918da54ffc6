"""`trainscope suite`: the shipped suites parse, a suite runs into one document, and bad suite files are
rejected before anything runs, naming the file, the line and the key."""
import json
import os
from pathlib import Path

import pytest

from helpers import ROOT, measurements, run_trainscope

from reports.common.option_facts import command_line

SUITES = ROOT / "bench" / "suites"


def test_a_suite_runs_every_step_into_one_document(tmp_path, validate):
    suite = tmp_path / "two.toml"
    suite.write_text('[suite]\nname = "two"\n\n[[step]]\nkind = "env"\n\n'
                     '[[step]]\nkind = "collectives"\nname = "small"\nops = ["all_reduce", "broadcast"]\nmax_bytes = "4K"\nstep_factor = 4\niters = 3\n\n'
                     '[[step]]\nkind = "collectives"\nname = "ints"\nops = "all_reduce"\ndtype = "int32"\nredop = ["max"]\nmin_bytes = 64\nmax_bytes = 256\niters = 3\n')
    out = tmp_path / "two.json"
    r = run_trainscope(["suite", suite, "--json", out, "--report", tmp_path / "rep"], np=2)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    assert {rec["step"] for rec in measurements(doc)} == {"small", "ints"}
    assert [l["step"] for l in doc["run"]["layouts"]] == ["small", "ints"]
    assert doc["run"]["subcommand"] == "suite" and [s["name"] for s in doc["run"]["config"]["steps"]] == ["env", "small", "ints"]
    assert "cpu " in r.out  # the env step printed the inventory
    assert (tmp_path / "rep" / "index.html").exists()


@pytest.mark.parametrize("name", ["quick.toml", "ci.toml", "cluster.toml", "ci-train.toml", "ci-train-cuda.toml"])
def test_shipped_suites_are_valid(name, tmp_path):
    """Parsed and checked in full: a bad key would fail here, before a user's long run."""
    r = run_trainscope(["suite", SUITES / name, "--json", tmp_path / "x.json", "--check-only"])
    assert r.rc == 0, r.err
    assert "steps" in r.out


BAD = [
    ('[[step]]\nkind = "collectivs"\n', "bad.toml:1: unknown step kind 'collectivs'"),
    ('[[step]]\nkind = "collectives"\nmax_byte = "4M"\n', "bad.toml:3: unknown key 'max_byte'"),
    ('[[step]]\nkind = "collectives"\niters = "ten"\n', "bad.toml:3: 'iters' must be an integer"),
    ('[[step]]\nkind = "collectives"\ncheck = 1\n', "bad.toml:3: 'check' must be true or false"),
    ('[[step]]\nkind = "collectives"\nops = ["all_reduce", 3]\n', "bad.toml:3: 'ops' must be a string or an array of strings"),
    ('[[step]]\nkind = "collectives"\nmax_bytes = "4Q"\n', "bad.toml:1: step 'collectives': -e/--max-bytes: '4Q' is not a size"),
    ('[[step]]\nkind = "collectives"\nops = "all_reduce"\n[[step]]\nkind = "collectives"\ndtype = "float8"\n', "bad.toml:4: step 'collectives': unknown dtype 'float8'"),
    ('[[step]]\nkind = "collectives"\nstep_factor = nan\n', "bad.toml:3: 'step_factor': nan is not a finite number"),
    ('[[step]]\nkind = "train"\nmodel = "mlp"\nlr = -inf\n', "bad.toml:4: 'lr': -inf is not a finite number"),
    ('[[step]]\nkind = "scale"\ntrain_args = "--model mlp --clip-norm nan"\n', "bad.toml:1: step 'scale': train flags: --clip-norm: nan is not a finite number"),
    ('[suite]\nname = "x"\ncolour = "red"\n[[step]]\nkind = "env"\n', "bad.toml:3: unknown key 'colour'"),
    ('[[step]\nkind = "env"\n', "bad.toml:1:"),
    ('[suite]\nname = "empty"\n', "bad.toml: no steps"),
    ('steps = 3\n', "bad.toml:1: unknown key 'steps'"),
]


@pytest.mark.parametrize("text,message", BAD, ids=[m for _, m in BAD])
def test_bad_suite_is_rejected_before_anything_runs(text, message, tmp_path):
    suite = tmp_path / "bad.toml"
    suite.write_text(text)
    out = tmp_path / "never.json"
    r = run_trainscope(["suite", suite, "--json", out])
    assert r.rc == 2, r.err
    assert len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
    assert not out.exists() and not out.with_suffix(".jsonl").exists()


def test_a_train_step_takes_every_train_flag_as_the_command_line_does(tmp_path):
    """Options a suite could not set before the one option table (momentum, the step schedule's knobs,
    log_every): the step's resolved config is the command line's, key for key."""
    flags = {"model": "mlp", "steps": 3, "warmup_steps": 1, "ceiling": False, "optimizer": "sgd", "momentum": 0.5,
             "schedule": "step", "lr_step_size": 2, "lr_gamma": 0.5, "log_every": 1, "set": ["depth=2"]}
    step = "".join(f"{k} = {json.dumps(v)}\n" for k, v in flags.items())
    suite = tmp_path / "train.toml"
    suite.write_text('[[step]]\nkind = "train"\n' + step)
    r = run_trainscope(["suite", suite, "--json", tmp_path / "suite.json"])
    assert r.rc == 0, r.err
    r = run_trainscope(["train", "--json", tmp_path / "cli.json", *command_line("train", flags)])
    assert r.rc == 0, r.err
    from_suite = json.loads((tmp_path / "suite.json").read_text())["run"]["config"]["steps"][0]
    from_cli = json.loads((tmp_path / "cli.json").read_text())["run"]["config"]
    assert from_suite["momentum"] == 0.5 and from_suite["lr_gamma"] == 0.5
    for key in from_cli:
        assert from_suite[key] == from_cli[key], key


def step_after_env(step):
    """A suite whose first step (env) would run before the second's values were seen, were the file not checked whole."""
    return ('[suite]\nname = "late"\n\n[[step]]\nkind = "env"\n\n'
            '[[step]]\nkind = "train"\nname = "t"\nmodel = "transformer"\n' + step)


LATE = [
    ('data = "text:absent.txt"\n', "bad.toml:7: step 't': --data text:absent.txt: file absent.txt"),
    ('data = "text:fifo"\n', "--data text:fifo: file fifo: is a FIFO, not a regular file"),
    ('data = "mnist:."\n', "--data mnist:.: mnist is an image dataset"),
    ('data = "tape:x"\n', "--data tape:x: unknown data source 'tape'"),
    ('checkpoint_dir = "afile/ckpt"\n', "--checkpoint-dir afile/ckpt: afile is a regular file, not a directory"),
    ('mllog = "afile/log"\n', "--mllog afile/log: afile is a regular file, not a directory"),
    ('trace = "afile"\n', "--trace afile: is a regular file, not a directory"),
    ('dump_logits = "."\n', "--dump-logits .: is a directory"),
    ('set = ["layers=2147483648"]\n', "--set layers=2147483648"),
    ('device = "gpu"\n', "--device gpu: expected cpu, cuda or cuda:N"),
    ('steps = 5\nwarmup_steps = 5\n', "--warmup-steps 5 leaves none of the 5 steps to time"),
]


@pytest.mark.parametrize("step,message", LATE, ids=[m for _, m in LATE])
@pytest.mark.parametrize("check_only", [False, True], ids=["run", "check-only"])
def test_every_step_is_checked_before_the_first_runs(tmp_path, step, message, check_only):
    """Issue #34: a train step's data, checkpoint_dir and mllog were checked when the step started, after the steps before it
    had run (and a FIFO as data hung there). The run and --check-only check the same, the whole file first."""
    (tmp_path / "afile").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    suite = tmp_path / "bad.toml"
    suite.write_text(step_after_env(step))
    out = tmp_path / "never.json"
    r = run_trainscope(["suite", suite, "--json", out] + (["--check-only"] if check_only else []), cwd=tmp_path, timeout=60)
    assert r.rc == 2, (r.rc, r.err)
    assert len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
    assert "=====" not in r.out and "cpu " not in r.out  # no step ran, not even env
    assert not out.exists() and not out.with_suffix(".jsonl").exists()


def test_the_train_subcommand_checks_the_same_before_it_starts(tmp_path):
    """The one check of a train step's options serves the subcommand too: a FIFO as --data is one line, no hang."""
    os.mkfifo(tmp_path / "fifo")
    r = run_trainscope(["train", "--model", "transformer", "--data", "text:fifo", "--json", tmp_path / "t.json"], cwd=tmp_path,
                       timeout=60)
    assert r.rc == 2, r.err
    assert r.error_lines() == ["trainscope: error: --data text:fifo: file fifo: is a FIFO, not a regular file"], r.err
    assert not (tmp_path / "t.json").exists()


def test_a_suite_and_step_name_reach_the_terminal_escaped(tmp_path):
    """Issue #34: control bytes of a suite's name and a step's went to the terminal as they were (an escape sequence
    clearing the screen or retitling the window); now each is \\xNN, in the listing and in the run's step lines."""
    suite = tmp_path / "esc.toml"
    suite.write_text('[suite]\nname = "a\\u001b]0;owned\\u0007b"\n\n[[step]]\nkind = "env"\nname = "s\\u001b[2Jt\\nu"\n')
    listed = run_trainscope(["suite", suite, "--check-only"])
    assert listed.rc == 0, listed.err
    ran = run_trainscope(["suite", suite, "--json", tmp_path / "esc.json"])
    assert ran.rc == 0, ran.err
    for r in (listed, ran):
        assert "\x1b" not in r.out and "\x07" not in r.out, r.out
        assert "a\\x1b]0;owned\\x07b" in r.out and "s\\x1b[2Jt\\x0au" in r.out, r.out
    doc = json.loads((tmp_path / "esc.json").read_text())
    assert doc["run"]["config"]["name"] == "a\x1b]0;owned\x07b"  # the record keeps the name as given
