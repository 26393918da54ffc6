"""trainscope under a real Slurm on this one machine (scripts/slurm-local.sh: slurmctld, slurmd and munged of
Debian's slurm-wlm and munge, in a state directory of their own): the shipped batch script
(scripts/slurm/trainscope.sbatch) runs a checked collectives sweep and a small training run over 2 tasks
under `sbatch --wait`, and `srun --mpi=pmix` launches an MPI world directly."""
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from helpers import ROOT, base_env, measurements, trainscope_path

SBATCH = ROOT / "scripts" / "slurm" / "trainscope.sbatch"
LOCAL = ROOT / "scripts" / "slurm-local.sh"
JOB_TIMEOUT = 120  # seconds; the job itself takes about 10


def which(name):
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")


def two_free_ports():
    """A port for slurmctld and the next one for slurmd, both free now (not the defaults: a Slurm of the
    user's own may hold them)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("0.0.0.0", port))
                b.bind(("0.0.0.0", port + 1))
            return port
        except OSError:
            continue
    pytest.fail("no two consecutive free TCP ports for slurmctld and slurmd")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """The environment of a started one-node Slurm (SLURM_CONF set); stopped after the module."""
    missing = [t for t in ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun", "sinfo") if not which(t)]
    if missing:
        pytest.skip(f"SLURM TESTS NOT RUN: {', '.join(missing)} not installed (apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("SLURM TESTS NOT RUN: scripts/slurm-local.sh runs the Slurm daemons as root; run the tests as root")
    state = tmp_path_factory.mktemp("slurm")
    env = base_env({"TRAINSCOPE_SLURM_DIR": str(state), "TRAINSCOPE_SLURM_PORT": str(two_free_ports()),
                    "PATH": os.environ.get("PATH", "") + ":/usr/sbin:/sbin"})
    for name in [n for n in env if n.startswith(("SLURM_", "SBATCH_", "SRUN_"))]:
        env.pop(name)  # a test run inside someone's allocation must not steer this cluster
    try:
        r = subprocess.run([str(LOCAL), "start"], capture_output=True, text=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        r = None
    if r is None or r.returncode != 0:
        logs = "".join(f"\n--- {p.name}:\n" + "\n".join(p.read_text(errors="replace").splitlines()[-8:])
                       for p in (state / "slurmctld.log", state / "slurmd.log", state / "munge" / "munged.log") if p.exists())
        subprocess.run([str(LOCAL), "stop"], capture_output=True, env=env, timeout=60)
        why = "timed out after 60 s" if r is None else r.stderr.strip()
        pytest.skip(f"SLURM TESTS NOT RUN: the local Slurm refused to start here: {why}{logs}")
    assert r.stdout.strip() == f"export SLURM_CONF={state}/slurm.conf", r.stdout
    env["SLURM_CONF"] = str(state / "slurm.conf")
    yield env
    subprocess.run([str(LOCAL), "stop"], capture_output=True, env=env, timeout=60)


def job_state(slurm, job_id):
    """(JobState, ExitCode) as slurmctld tells them, e.g. ("COMPLETED", "0:0")."""
    r = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, env=slurm, timeout=30)
    fields = dict(f.split("=", 1) for f in r.stdout.split() if "=" in f)
    return fields.get("JobState", "?"), fields.get("ExitCode", "?")


def submit(slurm, work, extra_env=None):
    """The shipped batch script, submitted and waited for: (job id, job state, exit code, results dir, job output).
    Not `sbatch --wait`: that polls at 2, 10 and 42 s, so a 10 s job would cost 42."""
    results = work / "results"
    env = dict(slurm, TRAINSCOPE=trainscope_path(), **(extra_env or {}))
    cmd = ["sbatch", "--parsable", "--time=5", f"--output={work}/job.out", str(SBATCH), str(results)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work, timeout=60)
    job_id = r.stdout.strip().split(";")[0]
    assert r.returncode == 0 and job_id.isdigit(), f"sbatch: {r.stdout!r} {r.stderr!r}"
    deadline = time.monotonic() + JOB_TIMEOUT
    while (state := job_state(slurm, job_id))[0] in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job_id], env=slurm, capture_output=True, timeout=30)
            pytest.fail(f"job {job_id} still {state[0]} after {JOB_TIMEOUT} s")
        time.sleep(0.5)
    log = (work / "job.out").read_text(errors="replace") if (work / "job.out").exists() else "(no job output)"
    return job_id, state[0], state[1], results, log


@pytest.fixture(scope="module")
def job(slurm, tmp_path_factory):
    return submit(slurm, tmp_path_factory.mktemp("sbatch"))


def load(results, name):
    path = results / name
    assert path.exists(), f"the job wrote no {name}"
    return json.loads(path.read_text())


def test_the_sbatch_example_runs_a_checked_sweep_and_a_train_over_2_tasks(job, validate):
    job_id, state, exit_code, results, log = job
    assert (state, exit_code) == ("COMPLETED", "0:0"), log[-3000:]
    coll, train = load(results, "collectives.json"), load(results, "train.json")
    for doc in (coll, train):
        validate(doc)
        assert doc["run"]["world"]["processes"] == 2, doc["run"]["world"]
    sweep = measurements(coll)
    assert sweep and {r["kind"] for r in sweep} == {"collective"}
    assert all(r["ranks"] == 2 and r["check"] == {"performed": True, "passed": True, "wrong": 0} for r in sweep)
    assert {r["op"] for r in sweep} >= {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall"}
    [rec] = [r for r in train["records"] if r["kind"] == "train"]
    assert rec["completed"] and rec["steps_done"] == 5
    assert json.loads((results / "slurm-job.json").read_text()) == {
        "job_id": job_id, "nodes": socket.gethostname().split(".")[0], "tasks": 2, "tasks_per_node": "2", "launcher": "srun"}


def test_the_result_carries_the_slurm_job(job):
    """run.launcher: which launcher started the run (srun, with PMIx set up for MPI by --mpi=pmix) and, under Slurm, the
    job, its nodes and its task layout."""
    job_id, state, exit_code, results, log = job
    assert (state, exit_code) == ("COMPLETED", "0:0"), log[-3000:]
    host = socket.gethostname().split(".")[0]
    for name in ("collectives.json", "train.json"):
        launcher = load(results, name)["run"].get("launcher")
        assert launcher is not None, f"{name}: no run.launcher"
        assert launcher == {"kind": "srun", "job_id": job_id, "nodes": host, "tasks": 2, "tasks_per_node": "2",
                            "ranks_by_host": {socket.gethostname(): [0, 1]}}, launcher


SWEEP = ["collectives", "--ops", "all_reduce", "-b", "1K", "-e", "4K", "-n", "2", "-w", "1"]
TRAIN = ["train", "--model", "mlp", "--steps", "5", "--no-ceiling"]


def srun(slurm, mpi, tmp_path, args):
    out = tmp_path / f"srun-{mpi}-{args[0]}.json"
    r = subprocess.run(["srun", "-n", "2", f"--mpi={mpi}", "--time=2", trainscope_path()] + args + ["--json", str(out)],
                       capture_output=True, text=True, env=slurm, timeout=120, cwd=tmp_path)
    return r, out


def test_srun_pmix_launches_one_mpi_world_directly(slurm, tmp_path, validate):
    r, out = srun(slurm, "pmix", tmp_path, SWEEP)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    validate(doc)
    assert doc["run"]["world"] == {"processes": 2, "hosts": 1, "bootstrap": "mpi"}
    assert all(rec["ranks"] == 2 and rec["check"]["passed"] for rec in measurements(doc))


@pytest.mark.parametrize("args", [SWEEP, TRAIN], ids=["collectives", "train"])
def test_srun_without_pmix_stops_every_task_with_one_line(slurm, tmp_path, args):
    """Without PMIx the tasks cannot meet through MPI: never two separate 1-rank worlds that each report success
    (train on the CPU once did just that), but one line on every task, before any work."""
    r, out = srun(slurm, "none", tmp_path, args)
    assert r.returncode == 2 and not out.exists(), r.stdout[-2000:] + r.stderr[-2000:]
    line = ("trainscope: error: started by srun as 2 tasks, but srun set up no PMIx or PMI for MPI to find the others: "
            "launch with srun --mpi=pmix, or with mpirun inside the allocation")
    assert r.stderr.count(line) == 2, r.stderr[-3000:]


def test_the_sbatch_example_with_mpirun_inside_the_allocation(slurm, tmp_path, validate):
    """TRAINSCOPE_LAUNCHER=mpirun, for a Slurm without PMIx: mpirun finds the allocation's 2 slots by itself."""
    job_id, state, exit_code, results, log = submit(slurm, tmp_path, {
        "TRAINSCOPE_LAUNCHER": "mpirun", "TRAINSCOPE_COLLECTIVES_ARGS": " ".join(SWEEP[1:]),
        "TRAINSCOPE_TRAIN_ARGS": " ".join(TRAIN[1:])})
    assert (state, exit_code) == ("COMPLETED", "0:0"), log[-3000:]
    for name in ("collectives.json", "train.json"):
        doc = load(results, name)
        validate(doc)
        assert doc["run"]["world"]["processes"] == 2, doc["run"]["world"]
        launcher = doc["run"]["launcher"]
        assert (launcher["kind"], launcher["job_id"], launcher["tasks"]) == ("mpirun", job_id, 2), launcher
    assert all(r["ranks"] == 2 and r["check"]["passed"] for r in measurements(load(results, "collectives.json")))
    assert json.loads((results / "slurm-job.json").read_text())["launcher"] == "mpirun"


def test_scale_over_srun_forms_one_world_per_point_without_being_told_pmix(slurm, tmp_path):
    """scale --launcher srun adds --mpi=pmix (unless --launcher-args or SLURM_MPI_TYPE chose a plugin): a plain
    srun would stop every task of the 2-rank point with one line."""
    out = tmp_path / "scale.json"
    env = {k: v for k, v in slurm.items() if k != "SLURM_MPI_TYPE"}
    r = subprocess.run([trainscope_path(), "scale", "--launcher", "srun", "--ranks", "1,2", "--mode", "weak", "--batch", "8",
                        "--model", "mlp", "--preset", "tiny", "--steps", "3", "--warmup-steps", "1", "--no-ceiling", "--json",
                        str(out)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    points = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "scaling"]
    assert [p["ranks"] for p in points] == [1, 2] and all(p.get("error") is None for p in points), points
