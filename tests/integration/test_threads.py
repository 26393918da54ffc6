"""One thread policy for every run (issue #20): each process runs TRAINSCOPE_THREADS compute threads (OpenBLAS,
the CPU kernels' OpenMP pool), else OMP_NUM_THREADS, else the CPUs it may use divided among the run's processes
on its host, so that ranks under mpirun never oversubscribe the cores; the result says which (run.threads). A
bad value is one line before any work. Whether the kernels give the same bits at any thread count is
tests/unit/test_cpu_ops.cpp's."""
import json
import os

import pytest

from helpers import run_trainscope

TRAIN = ["train", "--model", "mlp", "--preset", "tiny", "--steps", 2, "--warmup-steps", 1, "--no-ceiling"]


def cpus():
    return len(os.sched_getaffinity(0))


def threads_of(tmp_path, np=None, env=None, validate=None):
    out = tmp_path / "t.json"
    r = run_trainscope([*TRAIN, "--json", out], np=np, env=env)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    if validate:
        validate(doc)
    return doc["run"]["threads"]


def test_one_process_uses_every_cpu_it_may(tmp_path, validate):
    t = threads_of(tmp_path, validate=validate)
    assert t == {"per_process": cpus(), "source": "auto", "cpus": cpus(), "processes_on_host": 1, "blas": t["blas"]}
    assert t["blas"] in ("openmp", "pthread", "serial")


def test_ranks_on_one_host_share_its_cpus(tmp_path):
    t = threads_of(tmp_path, np=2)
    assert t["processes_on_host"] == 2 and t["source"] == "auto"
    assert t["per_process"] == max(1, cpus() // 2)


@pytest.mark.parametrize("env,want", [({"TRAINSCOPE_THREADS": "3"}, (3, "TRAINSCOPE_THREADS")),
                                      ({"OMP_NUM_THREADS": "1"}, (1, "OMP_NUM_THREADS")),
                                      ({"TRAINSCOPE_THREADS": "2", "OMP_NUM_THREADS": "1"}, (2, "TRAINSCOPE_THREADS"))])
def test_the_environment_sets_them(tmp_path, env, want):
    t = threads_of(tmp_path, env=env)
    assert (t["per_process"], t["source"]) == want


@pytest.mark.parametrize("value", ["0", "-1", "two", "2.5", "5000", " 2"])
def test_a_bad_count_is_one_line_before_any_work(tmp_path, value):
    out = tmp_path / "t.json"
    r = run_trainscope([*TRAIN, "--json", out], env={"TRAINSCOPE_THREADS": value})
    assert r.rc == 2 and not out.exists()
    want = f"trainscope: error: TRAINSCOPE_THREADS={value}: expected a whole number of threads from 1 to 4096"
    assert r.error_lines() == [want]


def test_an_openmp_list_takes_its_first_level(tmp_path):
    """OMP_NUM_THREADS may hold a list for nested levels ("4,2", valid OpenMP); trainscope runs one level, the first's
    count (issue #34: it refused the list)."""
    t = threads_of(tmp_path, env={"OMP_NUM_THREADS": "4,2"})
    assert (t["per_process"], t["source"]) == (4, "OMP_NUM_THREADS")


def test_a_bad_openmp_count_is_one_line_too(tmp_path):
    r = run_trainscope([*TRAIN, "--json", tmp_path / "t.json"], env={"OMP_NUM_THREADS": "4,x"})
    assert r.rc == 2 and not (tmp_path / "t.json").exists()
    assert r.error_lines() == ["trainscope: error: OMP_NUM_THREADS=4,x: expected a whole number of threads from 1 to 4096, or a "
                               "list of them, one per nesting level (4,2: the first applies)"]
