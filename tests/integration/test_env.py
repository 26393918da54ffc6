"""`trainscope env`: the inventory as text and as a result document, alone and across processes."""
import ctypes
import json
import os
import subprocess

import pytest

from helpers import base_env, free_port, measurements, run_trainscope, trainscope_path


def test_text_inventory_names_every_section():
    r = run_trainscope(["env"])
    assert r.rc == 0, r.err
    for section in ("host ", "cpu ", "memory ", "gpus ", "nics", "versions", "environment"):
        assert section in r.out, section
    assert "trainscope" in r.out and "mpi" in r.out


def test_json_inventory_validates(tmp_path, validate):
    out = tmp_path / "env.json"
    r = run_trainscope(["env", "--json", out])
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    host = doc["run"]["hosts"][0]
    assert host["cpu"]["threads"] >= 1 and host["cpu"]["memory_bytes"] > 0
    assert measurements(doc) == []  # env measures nothing (its telemetry is the only record)
    if not host["gpus"]["available"]:
        assert host["gpus"]["reason"]  # a machine without GPUs says why
        assert "gpus      none (" in r.out


def no_driver_here():
    try:
        ctypes.CDLL("libcuda.so.1")
        return False
    except OSError:
        return not os.path.exists("/proc/driver/nvidia")


@pytest.mark.skipif(not no_driver_here(), reason="an NVIDIA driver is installed here")
def test_a_host_without_a_driver_hears_so():
    """Not "CUDA driver version is insufficient", the runtime's words for a driver too old (issue #35)."""
    r = run_trainscope(["env"])
    assert r.rc == 0, r.err
    assert "gpus      none (no NVIDIA driver: neither its library libcuda.so.1 nor its kernel module" in r.out, r.out
    assert "needs a driver for CUDA 1" in r.out


def test_environment_bootstrap_gathers_every_process(tmp_path, validate):
    """RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, as torchrun sets them: two processes meet over TCP."""
    port = str(free_port())
    out = tmp_path / "env2.json"
    procs = []
    for rank in (1, 0):
        env = base_env({"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
                        "TRAINSCOPE_JOB_TOKEN": f"env-test-{port}"})
        args = [trainscope_path(), "env"] + (["--json", str(out)] if rank == 0 else [])
        procs.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    doc = json.loads(out.read_text())
    validate(doc)
    world = doc["run"]["world"]
    assert world["bootstrap"] == "env" and world["processes"] == 2
    assert len(doc["run"]["hosts"]) == 1  # both on this host: reported once


def test_env_bootstrap_with_a_missing_variable_is_a_clear_error():
    env = base_env({"RANK": "0", "WORLD_SIZE": "2"})
    env.pop("MASTER_ADDR", None)
    p = subprocess.run([trainscope_path(), "env"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stderr.strip() == "trainscope: error: the environment bootstrap needs MASTER_ADDR to be set"
