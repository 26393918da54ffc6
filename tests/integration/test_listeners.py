"""Where a run of several processes listens (issue #34, docs/reliability.md "A stranger on the bootstrap port"):
every liveness beacon and process 0's lifeline hub listen only on the address this process's bootstrap uses (with
every process on one host, loopback), never on every interface; before, both listened on 0.0.0.0."""
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from helpers import base_env, free_port, mpirun_rank_pids, trainscope_path

KERNELS = ["kernels", "--ops", "gemm", "--no-ceilings", "-n", "3", "-w", "0"]


def listening_sockets(pid):
    """The local (address, port) of every TCP socket process `pid` listens on (its fds' inodes in /proc/net/tcp*)."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return set()
    found = set()
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            addr, hexport = fields[1].split(":")
            raw = bytes.fromhex(addr)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # kernel words are host-endian
            found.add((socket.inet_ntop(family, raw), int(hexport, 16)))
    return found


def watch(procs, pids_of, bootstrap_port=None):
    """Every listening socket seen for each rank while the run lasts (polled), the bootstrap's port left out."""
    seen = {}
    deadline = time.monotonic() + 120
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for rank, pid in pids_of().items():
            seen.setdefault(rank, set()).update(s for s in listening_sockets(pid) if s[1] != bootstrap_port)
        time.sleep(0.01)
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    return seen


def check(seen):
    # Each process has its beacon; process 0's lifeline hub listens only until every process has joined it, so it
    # may be gone before a look (tests/unit/test_lifeline.cpp checks where it listens).
    assert seen.get(0) and seen.get(1), seen
    for rank, sockets in seen.items():
        assert {a for a, _ in sockets} == {"127.0.0.1"}, (rank, sockets)
        for _, port in sockets:  # another address of this host, loopback too, finds nothing there
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.2", port), timeout=5).close()


def test_under_rank_and_world_size_every_listener_is_on_the_bootstraps_address():
    port = free_port()
    procs = []
    for rank in (0, 1):
        env = base_env({"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                        "TRAINSCOPE_JOB_TOKEN": "listeners-test"})
        procs.append(subprocess.Popen([trainscope_path(), *KERNELS], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
    seen = watch(procs, lambda: {r: p.pid for r, p in enumerate(procs) if p.poll() is None}, bootstrap_port=port)
    assert [p.returncode for p in procs] == [0, 0], [p.stderr.read() for p in procs]
    check(seen)


def test_under_mpirun_every_listener_is_on_loopback_when_the_run_is_on_one_host():
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed")
    # Shared memory between the two: Open MPI's TCP transport would listen on every interface itself.
    mpirun = subprocess.Popen(["mpirun", "-np", "2", "--oversubscribe", trainscope_path(), *KERNELS],
                              env=base_env({"OMPI_MCA_btl": "self,vader"}),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    seen = watch([mpirun], lambda: mpirun_rank_pids(mpirun.pid))
    assert mpirun.returncode == 0, mpirun.stderr.read()
    check(seen)
