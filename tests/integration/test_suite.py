"""`trainscope suite`: the shipped suites parse, a suite runs into one document, and bad suite files are
rejected before anything runs, naming the file, the line and the key."""
import json
from pathlib import Path

import pytest

from helpers import ROOT, measurements, run_trainscope

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


@pytest.mark.parametrize("name", ["quick.toml", "ci.toml", "cluster.toml"])
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
    argv = ["train", "--json", tmp_path / "cli.json"]
    for k, v in flags.items():
        name = "--" + k.replace("_", "-")
        if v is False:
            argv.append("--no-" + k)
        else:
            for item in v if isinstance(v, list) else [v]:
                argv += [name, str(item)]
    r = run_trainscope(argv)
    assert r.rc == 0, r.err
    from_suite = json.loads((tmp_path / "suite.json").read_text())["run"]["config"]["steps"][0]
    from_cli = json.loads((tmp_path / "cli.json").read_text())["run"]["config"]
    assert from_suite["optimizer"]["momentum"] == 0.5 and from_suite["schedule"]["gamma"] == 0.5
    for key in from_cli:
        assert from_suite[key] == from_cli[key], key
