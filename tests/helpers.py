"""Helpers of the command-line tests: the trainscope binary, mpirun, and reading results."""
import functools
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = ROOT / "reports" / "schema" / "result-v1.schema.json"


@functools.cache
def readme_outputs():
    """scripts/readme_outputs.py as a module (the README check: its parser, chains and matcher)."""
    spec = importlib.util.spec_from_file_location("readme_outputs", ROOT / "scripts" / "readme_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernel_ops() -> list[str]:
    """The kernel ops in the registry's order: the result schema's enum, from which the build makes the registry
    (kernels/CMakeLists.txt). Tests read them here rather than keep a list (test_registry_lists.py holds them to it)."""
    return json.loads(SCHEMA_PATH.read_text())["$defs"]["kernel"]["properties"]["op"]["enum"]


def trainscope_path() -> str:
    path = os.environ.get("TRAINSCOPE", str(ROOT / "build" / "trainscope"))
    if not Path(path).exists():
        pytest.exit(f"trainscope binary not found at {path}: run scripts/setup.sh first", returncode=2)
    return str(Path(path).absolute())  # tests may run it from another directory


def loaded_later() -> list[str]:
    """The libraries trainscope loads when it first needs them, not at start (cuBLASLt: kernels/cuda/cublaslt_library.h),
    as the build lists them for the GPU scripts (BUILD/loaded-later.txt, read by scripts/gpu-libpath.sh); none in a build
    without CUDA."""
    listed = Path(trainscope_path()).parent / "loaded-later.txt"
    return subprocess.run(["bash", "-c", f'source "{ROOT}/scripts/gpu-libpath.sh" && ts_gpu_loaded_later "$1"', "-", listed],
                          capture_output=True, text=True, check=True).stdout.split()


def base_env(extra=None):
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    env.pop("TRAINSCOPE_FAULT", None)
    for name in ("TRAINSCOPE_THREADS", "OMP_NUM_THREADS"):  # the thread policy's default unless a test sets them
        env.pop(name, None)
    env.update(extra or {})
    return env


class Run:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def error_lines(self):
        return [l for l in self.err.splitlines() if l.startswith("trainscope: error:")]


def run_trainscope(args, np=None, env=None, timeout=600, cwd=None):
    """Runs trainscope (under mpirun -np NP when np is given) and returns its exit code and output."""
    cmd = [trainscope_path()] + [str(a) for a in args]
    if np is not None:
        if not shutil.which("mpirun"):
            pytest.skip("mpirun not installed")
        cmd = ["mpirun", "-np", str(np), "--oversubscribe"] + cmd
    proc = subprocess.run(cmd, capture_output=True, text=True, env=base_env(env), timeout=timeout, cwd=cwd)
    return Run(proc)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mpirun_rank_pids(mpirun_pid: int) -> dict[int, int]:
    """The processes an mpirun started (its children), by their MPI rank (from their environment)."""
    pids = {}
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or int((entry / "stat").read_text().split()[3]) != mpirun_pid:
                continue
            for item in (entry / "environ").read_bytes().split(b"\0"):
                if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                    pids[int(item.split(b"=")[1])] = int(entry.name)
        except OSError:
            continue
    return pids


def hung_tree(root_pid: int) -> str:
    """What a process tree that should have ended is doing, for a test's failure message: each process's state and
    kernel wait channel, and every thread's stack from gdb where gdb is installed (a hang seen once in CI must be
    diagnosable from its log alone)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                children.setdefault(int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    tree, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    out = []
    for pid in tree:
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = (Path("/proc") / str(pid) / "wchan").read_text()
            args = (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
        except OSError:
            continue
        out.append(f"pid {pid} state {state} wchan {wchan}: {args}")
        if "trainscope" in args and shutil.which("gdb"):
            r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt 30"],
                               capture_output=True, text=True, timeout=60, check=False)
            out.extend("    " + line for line in r.stdout.splitlines() if line.startswith(("#", "Thread")))
    return "\n".join(out)


def read_jsonl(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def measurements(doc):
    """The records a run measured: every record but the per-host telemetry."""
    return [r for r in doc["records"] if r["kind"] != "telemetry"]


def python_with_torch():
    """A python3 that imports torch (this one, or Debian's python3-torch's), or a visible skip."""
    for py in (sys.executable, "/usr/bin/python3"):
        try:
            if subprocess.run([py, "-c", "import torch"], capture_output=True, timeout=120).returncode == 0:
                return py
        except (OSError, subprocess.TimeoutExpired):
            continue
    pytest.skip("PyTorch is not installed for any python3 here (Debian: apt-get install python3-torch)")
