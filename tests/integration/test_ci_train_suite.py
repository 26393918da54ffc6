"""bench/suites/ci-train.toml, the CI suite of the training step and its kernels: two real runs of one build on 2
ranks train alike bit for bit (the same final loss), `compare` of one with the other passes or is inconclusive, never
a regression, and `history add` files them, the final loss a series of its own. ci-train-cuda.toml, its twin for GPU
runners, differs from it in the device only."""
import json
import subprocess
import sys
import tomllib

import pytest
from helpers import ROOT, run_trainscope

SUITES = ROOT / "bench" / "suites"
SUITE = SUITES / "ci-train.toml"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    where = tmp_path_factory.mktemp("ci-train")
    paths = []
    for i in (1, 2):
        path = where / f"run{i}.json"
        r = run_trainscope(["suite", SUITE, "--json", path], np=2, timeout=300)
        assert r.rc == 0, r.err
        paths.append(path)
    return paths


def records(path, kind):
    return [r for r in json.loads(path.read_text())["records"] if r["kind"] == kind]


def tool(*args):
    return subprocess.run([sys.executable, "-m", "reports", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_it_trains_the_tiny_transformer_data_parallel_and_times_its_kernels(runs):
    (train,) = records(runs[0], "train")
    assert (train["model"], train["preset"], train["world_size"]) == ("transformer", "tiny", 2)
    assert len(train["step_samples_us"]) >= 90 and train["config"]["seed"] == 1
    kernels = records(runs[0], "kernel")
    assert kernels and all(k["shape_name"] for k in kernels)
    assert min(len(k["samples_us"]) for k in kernels) >= 5 * 3  # compare's minimum, in each of 3 trials


def test_two_runs_of_one_build_train_bit_for_bit_alike(runs):
    (a,), (b,) = (records(p, "train") for p in runs)
    assert a["final_loss"] == b["final_loss"] and a["final_loss"] < a["initial_loss"]


def test_compare_of_two_runs_of_one_build_is_never_a_regression(runs, tmp_path):
    r = tool("compare", *runs, "--json", tmp_path / "cmp.json")
    assert r.returncode in (0, 3), r.stdout + r.stderr
    rows = json.loads((tmp_path / "cmp.json").read_text())["rows"]
    assert not [row for row in rows if row["outcome"] == "regression"], r.stdout
    (loss,) = [row for row in rows if row["metric"] == "final_loss"]
    assert loss["outcome"] == "pass" and loss["change"] == 0
    assert {row["kind"] for row in rows} == {"train", "kernel"}


def test_history_add_files_both_runs_and_the_final_loss_is_a_series(runs, tmp_path):
    db = tmp_path / "history.sqlite"
    r = tool("history", "add", *runs, "--db", db, "--commit", "a" * 40, "--branch", "main")
    assert r.returncode == 0, r.stderr
    r = tool("history", "show", "--db", db, "--metric", "final_loss")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("train transformer tiny cpu float32 2 rank(s)") and "final_loss" in r.stdout.splitlines()[0]


def test_the_gpu_twin_differs_in_the_device_only():
    cpu, cuda = (tomllib.loads((SUITES / name).read_text()) for name in ("ci-train.toml", "ci-train-cuda.toml"))
    assert cuda["suite"]["name"] == cpu["suite"]["name"] + "-cuda"
    assert [s.pop("device", None) for s in cuda["step"]] == ["cuda", None]
    assert [s.pop("backend", None) for s in cuda["step"]] == [None, "cuda"]
    assert cpu["step"] == cuda["step"]
