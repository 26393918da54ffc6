"""Launch detection (issue #18, comm/launcher.h): each launcher's variables either give the world the launcher
meant or one clear line before any work, on every process; never a silent world of 1. Every result names its
launcher (run.launcher). The real launchers are in test_slurm.py (a local Slurm) and the mpirun tests."""
import json
import re
import socket
import subprocess

import pytest

from helpers import base_env, free_port, run_trainscope, trainscope_path

QUICK = ["collectives", "--ops", "all_reduce", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1"]


def clean_env(extra):
    """The test's own environment without any launcher's variables (pytest may itself run under one)."""
    env = base_env()
    for name in list(env):
        if name.startswith(("OMPI_COMM_WORLD", "PMIX_", "PMI_", "SLURM_", "TORCHELASTIC_")) or name in (
                "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "MPI_LOCALNRANKS"):
            del env[name]
    env.update(extra)
    return env


def start_processes(args, envs):
    """One trainscope per environment, all at once; (rc, stdout, stderr) for each."""
    procs = [subprocess.Popen([trainscope_path(), *map(str, args)], env=clean_env(e), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for e in envs]
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("a process still ran after 90 s: a launch that should have stopped at once hung")
        out.append((p.returncode, o, e))
    return out


def srun_step(rank, tasks=2, job="4242"):
    return {"SLURM_JOB_ID": job, "SLURM_NTASKS": str(tasks), "SLURM_STEP_NUM_TASKS": str(tasks), "SLURM_PROCID": str(rank),
            "SLURM_LOCALID": str(rank), "SLURM_JOB_NODELIST": "vm", "SLURM_TASKS_PER_NODE": str(tasks)}


def env_launch(rank, port, torchrun=False):
    e = {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
         "TRAINSCOPE_JOB_TOKEN": "launch-test"}
    if torchrun:
        e["TORCHELASTIC_RUN_ID"] = "run-17"
    return e


@pytest.mark.parametrize("subcommand", [QUICK, ["train", "--model", "mlp", "--steps", "2", "--no-ceiling"], ["env"]],
                         ids=["collectives", "train", "env"])
def test_a_plain_srun_of_two_tasks_is_one_line_on_each_not_two_worlds_of_one(subcommand):
    for rc, out, err in start_processes(subcommand, [srun_step(0), srun_step(1)]):
        assert rc == 2, err
        assert err.strip() == ("trainscope: error: started by srun as 2 tasks, but srun set up no PMIx or PMI for MPI to find "
                               "the others: launch with srun --mpi=pmix, or with mpirun inside the allocation"), err
        assert "1 ranks" not in out and "all_reduce" not in out


@pytest.mark.parametrize("torchrun", [False, True], ids=["env", "torchrun"])
def test_rank_and_world_size_with_the_mpi_backend_is_one_line_on_each(torchrun):
    port = free_port()
    for rc, out, err in start_processes(QUICK, [env_launch(0, port, torchrun), env_launch(1, port, torchrun)]):
        assert rc == 2, err
        kind = "torchrun" if torchrun else "env"
        assert err.strip() == (f"trainscope: error: started by {kind} (RANK/WORLD_SIZE) as 2 processes, but the MPI backend needs "
                               "an MPI launcher: use mpirun or srun --mpi=pmix (RANK/WORLD_SIZE serve the NCCL backend on GPUs)")
        assert "all_reduce" not in out


def test_train_under_rank_and_world_size_on_the_cpu_says_what_it_needs_and_trains_nothing():
    port = free_port()
    results = start_processes(["train", "--model", "mlp", "--steps", "2", "--no-ceiling"], [env_launch(0, port), env_launch(1, port)])
    assert all(rc != 0 for rc, _, _ in results), results
    lines = [line for _, _, err in results for line in err.splitlines() if line.startswith("trainscope: error:")]
    assert lines == ["trainscope: error: the processes met through the env bootstrap, but the MPI backend (the CPU's) needs them "
                     "started by an MPI launcher: use mpirun or srun --mpi=pmix (RANK/WORLD_SIZE serve the NCCL backend on GPUs)"]
    assert not any("step" in out for _, out, _ in results)


def store_with_a_free_port_above() -> socket.socket:
    """A listening socket standing for torchrun's store, on a port whose successor (where trainscope's bootstrap
    listens) is free when chosen: with the tests run several at a time, another test's connection may hold any
    ephemeral port, the one above the store's included, and the bootstrap then rightly refuses to start."""
    for _ in range(100):
        store = socket.socket()
        store.bind(("127.0.0.1", 0))
        port = store.getsockname()[1]
        if port < 65535:
            with socket.socket() as above:
                try:
                    above.bind(("127.0.0.1", port + 1))
                except OSError:
                    store.close()
                    continue
            store.listen()
            return store
        store.close()
    raise RuntimeError("no port with a free successor in 100 tries")


def test_under_torchrun_the_bootstrap_leaves_master_port_to_torchruns_store(tmp_path):
    with store_with_a_free_port_above() as store:  # torchrun's rendezvous store holds MASTER_PORT on process 0's host
        port = store.getsockname()[1]
        envs = [dict(env_launch(r, port, torchrun=True), TRAINSCOPE_BOOTSTRAP_TIMEOUT="30") for r in (0, 1)]
        envs[0]["TRAINSCOPE_JOB_TOKEN"] = envs[1]["TRAINSCOPE_JOB_TOKEN"] = ""  # the token is torchrun's run id
        results = start_processes(["env", "--json", tmp_path / "env.json"], envs)
    assert [rc for rc, _, _ in results] == [0, 0], results
    launcher = json.loads((tmp_path / "env.json").read_text())["run"]["launcher"]
    assert launcher["kind"] == "torchrun" and launcher["job_id"] == "run-17" and launcher["tasks"] == 2


def test_under_torchrun_trainscope_master_port_names_the_port_and_the_last_port_has_no_successor(tmp_path):
    with socket.socket() as store:
        store.bind(("127.0.0.1", 0))
        store.listen()
        port = store.getsockname()[1]
        own = free_port()
        envs = [dict(env_launch(r, port, torchrun=True), TRAINSCOPE_MASTER_PORT=str(own), TRAINSCOPE_BOOTSTRAP_TIMEOUT="30")
                for r in (0, 1)]
        results = start_processes(["env", "--json", tmp_path / "env.json"], envs)
    assert [rc for rc, _, _ in results] == [0, 0], results
    (rc, _, err), = start_processes(["env"], [dict(env_launch(0, 65535, torchrun=True))])
    assert rc == 2 and err.strip() == ("trainscope: error: under torchrun trainscope listens on MASTER_PORT + 1, and "
                                       "MASTER_PORT=65535 leaves no port above it: set TRAINSCOPE_MASTER_PORT"), err


def test_one_srun_task_runs_and_the_result_names_the_slurm_job(tmp_path, validate):
    (rc, _, err), = start_processes(["env", "--json", tmp_path / "env.json"], [srun_step(0, tasks=1, job="987")])
    assert rc == 0, err
    doc = json.loads((tmp_path / "env.json").read_text())
    validate(doc)
    assert doc["run"]["launcher"] == {"kind": "srun", "job_id": "987", "nodes": "vm", "tasks": 1, "tasks_per_node": "1",
                                      "ranks_by_host": {doc["run"]["hosts"][0]["hostname"]: [0]}}


def test_an_mpirun_result_names_the_launcher_and_where_each_rank_ran(tmp_path, validate):
    r = run_trainscope(["env", "--json", tmp_path / "env.json"], np=2, timeout=120)
    assert r.rc == 0, r.err
    doc = json.loads((tmp_path / "env.json").read_text())
    validate(doc)
    launcher = doc["run"]["launcher"]
    assert launcher["kind"] == "mpirun" and launcher["tasks"] == 2 and launcher["job_id"]
    assert sorted(r for ranks in launcher["ranks_by_host"].values() for r in ranks) == [0, 1]


def test_a_bootstrap_that_finds_fewer_processes_than_the_launcher_started_is_refused():
    r = run_trainscope(QUICK + ["--bootstrap", "single"], np=2, timeout=120)
    assert r.rc != 0
    assert ("started by mpirun as 2 processes, but the single bootstrap found 1 (--bootstrap single runs one process: leave it "
            "at auto)") in r.err, r.err
    assert "all_reduce" not in r.out


def test_a_process_whose_peer_never_comes_ends_with_one_line_within_its_timeout():
    """The session's watchdog guards the bootstrap: a world of 2 whose second process never starts ends at
    process 0's turn (2 x --timeout for a process waiting for its peers), naming what it waited in."""
    (rc, out, err), = start_processes(["kernels", "--timeout", "2", "-n", "1", "-w", "0"],
                                      [dict(env_launch(0, free_port()), TRAINSCOPE_BOOTSTRAP_TIMEOUT="120")])
    assert rc == 3, err
    errors = [line for line in err.splitlines() if line.startswith("trainscope: error:")]
    assert len(errors) == 1, err
    m = re.fullmatch(r"trainscope: error: rank 0 of 2 \((.+)\): timeout: meeting the other processes \(bootstrap\) waited "
                     r"([0-9.]+) s for its peers, and none of them reported being stuck in its own work \(a frozen or lost "
                     r"process, a lost host, or the network\) \(--timeout 2\); ending all ranks", errors[0])
    assert m and m.group(1) == socket.gethostname() and float(m.group(2)) >= 4.0, errors
    assert "kernel" not in out


def test_shared_memory_alone_across_hosts_is_one_line_before_mpi_starts():
    """OMPI_MCA_btl=self,vader over several hosts would hang the first collective: the launcher's own variables
    (fewer local processes than the world) say so before MPI_Init."""
    mpirun = {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
              "OMPI_MCA_btl": "self,vader"}
    (rc, out, err), (rc1, _, err1) = start_processes(QUICK, [dict(mpirun, OMPI_COMM_WORLD_RANK="0"),
                                                             dict(mpirun, OMPI_COMM_WORLD_RANK="1")])
    assert (rc, rc1) == (2, 2), (err, err1)
    assert err.strip() == ("trainscope: error: OMPI_MCA_btl=self,vader reaches only processes on the same host, but mpirun "
                           "placed this run's 2 processes on several hosts: add a network transport (e.g. "
                           "OMPI_MCA_btl=self,vader,tcp) or run on one host"), err
    assert err1 == "" and "all_reduce" not in out  # one voice: process 0's
