"""trainscope's GPU decisions on the nodes the fake GPU describes (tests/tools/fake_gpu: preloaded, it answers the
CUDA runtime's and NVML's device queries as an HGX H100/H200 node of TS_FAKE_GPU=<model>:<GPUs> would, refuses all
work, and logs each cudaSetDevice to TS_FAKE_GPU_LOG): the inventory and telemetry, which GPUs each process
drives, and every refusal of a GPU count ending every process with one line within seconds, never a hang until
--timeout (comm/agreed_step.h). Each run is bounded by a subprocess timeout far below the --timeout it is given,
so a hang fails the test instead of stalling the suite."""
import json
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from helpers import base_env, free_port, trainscope_path

FAKE = Path(trainscope_path()).parent / "tests" / "libts_fake_gpu.so"
pytestmark = pytest.mark.skipif(not FAKE.exists(), reason=f"built without CUDA (no fake GPU library at {FAKE})")

BUILT_WITH = subprocess.run([trainscope_path(), "--version"], capture_output=True, text=True).stdout
needs_nccl = pytest.mark.skipif("NCCL yes" not in BUILT_WITH, reason="built without NCCL: no NCCL backend to give GPUs")

LIVENESS_S = 60  # every run here ends in seconds; the old behaviour waited for --timeout
TIMEOUT = ["--timeout", "300"]
COLLECTIVES = ["collectives", "--backend", "nccl", "--ops", "all_reduce", "-e", "1K"] + TIMEOUT
TRAIN = ["train", "--model", "mlp", "--steps", "2", "--no-ceiling"] + TIMEOUT


def fake_env(spec, log=None, extra=None):
    env = {"LD_PRELOAD": str(FAKE), "TS_FAKE_GPU": spec}
    if log:
        env["TS_FAKE_GPU_LOG"] = str(log)
    env.update(extra or {})
    return env


class Ended:
    """The processes of one run, each ended (killed, and the test failed, when still running after LIVENESS_S): exit
    codes and stderr."""

    def __init__(self, procs, started):
        self.rcs, self.errs = [], []
        try:
            for p in procs:
                _, err = p.communicate(timeout=max(1.0, LIVENESS_S - (time.monotonic() - started)))
                self.rcs.append(p.returncode)
                self.errs.append(err)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
                p.communicate()
            pytest.fail(f"still running after {LIVENESS_S} s (a hang: it would have waited for --timeout)")

    def error_lines(self):
        return [line for e in self.errs for line in e.splitlines() if line.startswith("trainscope: error:")]


def run_env_pair(spec, args, log=None):
    """Two processes (RANK 0 and 1, one host) met through the RANK/WORLD_SIZE bootstrap, each its own NCCL_HOSTID."""
    port, started, procs = free_port(), time.monotonic(), []
    for rank in (1, 0):
        env = base_env(fake_env(spec, log, {"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                                            "MASTER_PORT": str(port), "NCCL_HOSTID": f"fake-rank{rank}",
                                            "TRAINSCOPE_JOB_TOKEN": f"fake-gpu-{port}"}))
        procs.append(subprocess.Popen([trainscope_path()] + args, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
    return Ended(procs[::-1], started)  # rank 0 first


def run_mpi(np, spec, args, log=None):
    """NP processes under mpirun (its local ranks), the fake GPU preloaded in each."""
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed")
    env = base_env(fake_env(spec, log))
    cmd = ["mpirun", "-np", str(np), "--oversubscribe", "-x", "LD_PRELOAD", "-x", "TS_FAKE_GPU"]
    cmd += ["-x", "TS_FAKE_GPU_LOG"] if log else []
    started = time.monotonic()
    proc = subprocess.Popen(cmd + [trainscope_path()] + args, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    return Ended([proc], started)


def devices_by_rank(log):
    """The devices each rank made current, in order (cudaSetDevice through the fake)."""
    chosen = {}
    for line in Path(log).read_text().splitlines():
        m = re.match(r"rank=(\d+) pid=\d+ cudaSetDevice (\d+)$", line)
        if m:
            chosen.setdefault(int(m.group(1)), []).append(int(m.group(2)))
    return chosen


def host():
    return socket.gethostname()  # as trainscope names this host


# --- the node as trainscope sees it ---------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,name,mib,matrix", [
    ("h100:8", "NVIDIA H100 80GB HBM3", 81559, [["X" if i == j else "NV18" for j in range(8)] for i in range(8)]),
    ("h200:2", "NVIDIA H200", 143771, [["X", "NV18"], ["NV18", "X"]]),
    ("h200:1", "NVIDIA H200", 143771, [["X"]]),
], ids=["h100x8", "h200x2", "h200x1"])
def test_env_inventories_the_node(tmp_path, validate, spec, name, mib, matrix):
    out = tmp_path / "env.json"
    proc = subprocess.run([trainscope_path(), "env", "--json", str(out)], env=base_env(fake_env(spec)),
                          capture_output=True, text=True, timeout=LIVENESS_S)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    validate(doc)
    hosts = doc["run"]["hosts"]
    gpus = hosts[0]["gpus"]
    assert [d["name"] for d in gpus["devices"]] == [name] * len(matrix)
    assert {d["memory_bytes"] for d in gpus["devices"]} == {mib << 20}
    assert {(d["sm_count"], d["compute_capability"], d["pcie_generation"], d["pcie_width"]) for d in gpus["devices"]} == \
        {(132, "9.0", 5, 16)}
    assert gpus["links"] == {"matrix": matrix, "source": "nvml"}
    versions = hosts[0]["versions"]
    assert (versions["driver"], versions["cuda_driver"]) == ("580.65.06", "13.0")
    # Telemetry reads every GPU through NVML: an idle GPU's SM clock, power and temperature.
    sample = next(r for r in doc["records"] if r["kind"] == "telemetry")["samples"][0]
    assert [(g["sm_clock_mhz"], g["power_w"], g["temperature_c"]) for g in sample["gpus"]] == [(345, 72, 33)] * len(matrix)


def test_env_tells_a_driver_too_old_from_none():
    """The runtime's one text for both ("CUDA driver version is insufficient") becomes two (issue #35)."""
    said = {}
    for driver in ("12020", "0"):
        proc = subprocess.run([trainscope_path(), "env"], env=base_env(fake_env("h100:8", extra={"TS_FAKE_CUDA_DRIVER": driver})),
                              capture_output=True, text=True, timeout=LIVENESS_S)
        assert proc.returncode == 0, proc.stderr
        said[driver] = next(line for line in proc.stdout.splitlines() if line.startswith("gpus "))
    assert said["12020"].startswith("gpus      none (NVIDIA driver too old: it supports CUDA 12.2"), said
    assert "this build's CUDA 13." in said["12020"] and "R580 or newer" in said["12020"], said
    assert said["0"].startswith("gpus      none (no NVIDIA driver"), said
    assert "insufficient" not in said["12020"] + said["0"]


def test_cuda_visible_devices_narrows_what_cuda_shows(tmp_path):
    out = tmp_path / "env.json"
    proc = subprocess.run([trainscope_path(), "env", "--json", str(out)],
                          env=base_env(fake_env("h100:8", extra={"CUDA_VISIBLE_DEVICES": "3,5"})),
                          capture_output=True, text=True, timeout=LIVENESS_S)
    assert proc.returncode == 0, proc.stderr
    gpus = json.loads(out.read_text())["run"]["hosts"][0]["gpus"]
    assert [d["pci_bus_id"] for d in gpus["devices"]] == ["0000:5D:00.0", "0000:AB:00.0"]
    assert gpus["links"]["matrix"] == [["X", "NV18"], ["NV18", "X"]]


def test_work_on_a_fake_gpu_is_one_line_naming_it():
    proc = subprocess.run([trainscope_path()] + TRAIN + ["--device", "cuda"], env=base_env(fake_env("h100:1")),
                          capture_output=True, text=True, timeout=LIVENESS_S)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("trainscope: error:")]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert "fake GPU (TS_FAKE_GPU=h100:1)" in lines[0] and "runs nothing" in lines[0]


# --- two processes on one GPU: the hang of issue 33 -----------------------------------------------------------------

@needs_nccl
@pytest.mark.parametrize("args", [COLLECTIVES, TRAIN + ["--device", "cuda"]], ids=["collectives", "train"])
def test_two_processes_on_one_gpu_end_with_one_line(args):
    """Process 1 is local process 1 of a one-GPU host: it refuses GPU 1 of 1, and process 0, which has its GPU,
    must not be left waiting for it. Both end at once; process 0 says who refused, where, and both ways out."""
    ended = run_env_pair("h200:1", args)
    assert ended.rcs == [2, 2], ended.errs
    assert ended.error_lines() == [
        f"trainscope: error: process 1 on {host()}: this host has 1 GPU and runs 2 or more processes of this job, 1 GPU "
        "each: its local process 1 would drive cuda:1. Start at most 1 process per host, or share GPUs deliberately: "
        "--device cuda:0 and a distinct NCCL_HOSTID for each process (docs/gpu-validation.md) "
        "(1 more process(es) failed too)"], ended.errs
    assert ended.errs[1] == "", "process 1 leaves the line to process 0"


@needs_nccl
@pytest.mark.parametrize("args", [COLLECTIVES + ["--device", "cuda:0"], TRAIN + ["--device", "cuda:0"]],
                         ids=["collectives", "train"])
def test_sharing_one_gpu_deliberately_puts_both_processes_on_it(tmp_path, args):
    log = tmp_path / "calls.log"
    ended = run_env_pair("h200:1", args, log)
    assert devices_by_rank(log) == {0: [0], 1: [0]}
    # Then the GPU's first real work, which the fake refuses alike on both: one line, from process 0.
    assert ended.rcs == [1, 1] and len(ended.error_lines()) == 1, ended.errs
    assert "fake GPU (TS_FAKE_GPU=h200:1)" in ended.error_lines()[0]


# --- which GPUs each process drives ---------------------------------------------------------------------------------

# The first GPU each process makes current (the fake refuses the stream made on it, so a process that drives
# several stops at its first; which ones follow is tests/unit/test_gpu_plan.cpp's).
@needs_nccl
@pytest.mark.parametrize("np,spec,args,first", [
    (2, "h100:2", COLLECTIVES, [0, 1]),
    (2, "h100:8", COLLECTIVES + ["--gpus-per-process", "4"], [0, 4]),
    (4, "h100:8", COLLECTIVES + ["-g", "2"], [0, 2, 4, 6]),
    (2, "h100:8", COLLECTIVES + ["--device", "cuda:6"], [6, 6]),
    (2, "h100:2", TRAIN + ["--device", "cuda"], [0, 1]),
], ids=["1-per-process", "4-per-process", "2-per-process-x4", "named", "train"])
def test_each_process_drives_its_local_ranks_gpus_under_mpirun(tmp_path, np, spec, args, first):
    log = tmp_path / "calls.log"
    ended = run_mpi(np, spec, args, log)
    assert devices_by_rank(log) == {r: [g] for r, g in enumerate(first)}, log.read_text()
    lines = ended.error_lines()
    assert len(lines) == 1 and f"fake GPU (TS_FAKE_GPU={spec})" in lines[0], ended.errs


@needs_nccl
def test_each_process_drives_its_local_ranks_gpu_under_the_env_bootstrap(tmp_path):
    log = tmp_path / "calls.log"
    run_env_pair("h100:8", COLLECTIVES, log)
    assert devices_by_rank(log) == {0: [0], 1: [1]}


# --- GPU counts a host does not have: every process ends with one line ----------------------------------------------

@needs_nccl
@pytest.mark.parametrize("np,spec,args,line", [
    (2, "h100:2", COLLECTIVES + ["--gpus-per-process", "4"], "--gpus-per-process 4 asks for more GPUs than this host has (2)"),
    (3, "h100:2", COLLECTIVES, "process 2 on {host}: this host has 2 GPUs and runs 3 or more processes of this job, 1 GPU "
                               "each: its local process 2 would drive cuda:2. Start at most 2 processes per host"),
    (2, "h100:8", COLLECTIVES + ["-g", "0"], "process 1 on {host}: this host has 8 GPUs and runs 2 or more processes of "
                                             "this job, 8 GPUs each: its local process 1 would drive cuda:8..cuda:15"),
    (2, "h100:2", COLLECTIVES + ["--device", "cuda:2"], "--device cuda:2: this host has 2 GPUs (cuda:0..cuda:1)"),
    (3, "h100:2", TRAIN + ["--device", "cuda"], "process 2 on {host}: this host has 2 GPUs and runs 3 or more processes"),
], ids=["gpus-per-process", "more-processes-than-gpus", "all-gpus-twice", "named-gpu-missing", "train"])
def test_gpus_a_host_lacks_end_every_process_with_one_line(np, spec, args, line):
    ended = run_mpi(np, spec, args)
    lines = ended.error_lines()
    assert len(lines) == 1 and lines[0].startswith("trainscope: error: " + line.format(host=host())), ended.errs
    assert ended.rcs == [2], ended.errs


@needs_nccl
def test_a_refusal_under_the_env_bootstrap_ends_both_processes():
    ended = run_env_pair("h100:2", COLLECTIVES + ["--gpus-per-process", "4"])
    assert ended.rcs == [2, 2] and ended.error_lines() == [
        "trainscope: error: --gpus-per-process 4 asks for more GPUs than this host has (2)"], ended.errs
