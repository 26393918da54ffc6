"""scripts/compare-pytorch-cpu.py (trainscope against PyTorch on the CPU, issue #20) on its smallest case: the
table and the JSON have their shape, a failing trainscope or a missing PyTorch is one line and a non-zero exit.
No speed is asserted: the numbers are the script's business, not the tests'."""
import json
import re
import subprocess
import sys

import pytest

from helpers import ROOT, base_env, python_with_torch, trainscope_path

SCRIPT = ROOT / "scripts" / "compare-pytorch-cpu.py"
RATIO = r"\d+\.\d\d \(\d+\.\d\d-\d+\.\d\d\)"


def compare(py, tmp_path, *args, env=None, timeout=600):
    cmd = [py, str(SCRIPT), "--out", str(tmp_path), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env or base_env(), timeout=timeout, cwd=tmp_path)


def test_the_smallest_case_prints_one_row_and_writes_the_raw_numbers(tmp_path):
    py = python_with_torch()
    r = compare(py, tmp_path, "--trainscope", trainscope_path(), "--cases", "mlp-tiny", "--rounds", "1", "--steps", "2",
                "--warmup", "1", "--threads", "1")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("|")]
    assert rows[0] == "| model / preset | ratio (median, min-max) | trainscope | PyTorch / numpy |"
    assert rows[1] == "|---|---|---|---|"
    assert len(rows) == 3, r.stdout
    cells = [c.strip() for c in rows[2].strip("|").split("|")]
    assert cells[0] == "mlp tiny, batch 32"
    assert re.fullmatch(RATIO, cells[1]), cells[1]
    assert all(re.fullmatch(r"\d+\.\d{3} ms/step", c) for c in cells[2:]), cells

    doc = json.loads((tmp_path / "compare-pytorch-cpu.json").read_text())
    case = doc["cases"]["mlp-tiny"]
    (rnd,) = case["rounds"]
    assert len(rnd["trainscope"]["samples_us"]) == 2 and len(rnd["pytorch"]["samples_us"]) == 2
    assert rnd["trainscope"]["parameters"] == rnd["pytorch"]["parameters"] == 55050  # the mirror is the model
    assert rnd["ratio"] == pytest.approx(rnd["trainscope"]["median_us"] / rnd["pytorch"]["median_us"])
    assert set(case["summary"]) >= {"ratio_median", "ratio_min", "ratio_max", "trainscope_ms", "pytorch_ms"}


def test_pytorchs_cnn_can_train_channels_last_as_trainscopes_does(tmp_path):
    py = python_with_torch()
    for fmt, last in (("channels_last", True), ("contiguous", False)):
        r = compare(py, tmp_path, "--trainscope", trainscope_path(), "--cases", "cnn-tiny", "--rounds", "1", "--steps", "1",
                    "--warmup", "1", "--threads", "1", "--pytorch-memory-format", fmt)
        assert r.returncode == 0, r.stderr
        doc = json.loads((tmp_path / "compare-pytorch-cpu.json").read_text())
        assert doc["settings"]["pytorch_memory_format"] == fmt
        (rnd,) = doc["cases"]["cnn-tiny"]["rounds"]
        assert rnd["pytorch"]["channels_last"] is last


def test_a_failing_trainscope_is_one_line_naming_the_case(tmp_path):
    py = python_with_torch()
    r = compare(py, tmp_path, "--trainscope", "/bin/false", "--cases", "mlp-tiny", "--rounds", "1", "--steps", "1")
    assert r.returncode == 1
    errors = [line for line in r.stderr.splitlines() if not line.startswith("#")]
    assert errors == ["compare-pytorch-cpu: case mlp-tiny: trainscope failed (exit 1): (no output)"], r.stderr


def test_without_pytorch_it_says_so_and_exits_2(tmp_path):
    """A planted `torch` that fails to import stands for a machine without PyTorch (no torch needed here)."""
    (tmp_path / "torch.py").write_text("raise ImportError('planted: no torch')\n")
    r = compare(sys.executable, tmp_path, "--cases", "mlp-tiny", env=base_env({"PYTHONPATH": str(tmp_path)}))
    assert r.returncode == 2
    assert r.stderr.startswith("compare-pytorch-cpu: PyTorch is not installed for ") and len(r.stderr.splitlines()) == 1
