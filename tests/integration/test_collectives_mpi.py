"""`trainscope collectives --backend mpi` under mpirun: every op checks clean, the figures follow the
formulas of docs/architecture.md, and every failure (bad input, planted wrong element, hang, dead rank) ends the way
the issue asks: one clear line, a non-zero exit, the measured records kept, no half-written document."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, base_env, measurements, read_jsonl, run_trainscope, trainscope_path
from reports.common.collective_facts import bus_factor, collective, on_backend


def expected_sizes(op, n, sizes, elt):
    out = set()
    for s in sizes:
        if collective(op).whole_buffer:
            count = s // (elt * n)
            if count:
                out.add(count * n * elt)
        else:
            out.add(s // elt * elt)
    return out


@pytest.mark.parametrize("np", [2, 4])
def test_full_sweep_checks_clean_and_follows_the_formulas(np, tmp_path, validate):
    out = tmp_path / "sweep.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all", "-b", "8", "-e", "4M", "-f", "4",
                        "-d", "float32,int32", "-o", "sum,max", "-w", "1", "-n", "5", "--json", out], np=np)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    records = measurements(doc)
    sizes = [8 * 4 ** k for k in range(10)]  # 8 B .. 2 MiB: the sweep stops before 8 MiB > 4 MiB
    seen = set()
    for rec in records:
        assert rec["ranks"] == np and rec["backend"] == "mpi"
        assert rec["check"] == {"performed": True, "passed": True, "wrong": 0}, rec
        assert rec["bus_factor"] == pytest.approx(bus_factor(rec["op"], np))
        assert rec["busbw_gbps"] == pytest.approx(rec["algbw_gbps"] * bus_factor(rec["op"], np), rel=1e-12)
        assert rec["algbw_gbps"] == pytest.approx(rec["bytes"] / (rec["time_us"]["median"] * 1e-6) / 1e9, rel=1e-12)
        t = rec["time_us"]
        assert t["n"] == 5 and t["min"] <= t["median"] <= t["p95"] <= t["max"]
        seen.add((rec["op"], rec["dtype"], rec["redop"], rec["bytes"], rec["in_place"]))
    for op in on_backend("mpi"):  # what --ops all runs on MPI
        for dtype in ("float32", "int32"):
            for redop in (["sum", "max"] if collective(op).reduces else [None]):
                for size in expected_sizes(op, np, sizes, 4):  # alltoallv: uniform counts, alltoall's sizes
                    for in_place in (False,) if op == "alltoallv" else (False, True):  # alltoallv.cpp: out of place only
                        assert (op, dtype, redop, size, in_place) in seen, (op, dtype, redop, size, in_place)
    # The stream holds the same records, between the run line and the run line again, with its end time.
    stream = read_jsonl(tmp_path / "sweep.jsonl")
    assert stream[0]["kind"] == "run" and measurements({"records": stream[1:-1]}) == records
    assert stream[-1]["kind"] == "run" and stream[-1]["ended_at"] == doc["run"]["ended_at"]
    layout = doc["run"]["layouts"][0]
    assert doc["run"]["world"]["processes"] == np and layout["size"] == np and layout["backend"] == "mpi"
    assert [r["rank"] for r in layout["ranks"]] == list(range(np)) and all(r["device"] == "cpu" for r in layout["ranks"])
    assert all(len(rec["samples_us"]) == 5 and min(rec["samples_us"]) == rec["time_us"]["min"] for rec in records)
    assert all(rec["empty_op_us"]["n"] == 5 for rec in records)  # the empty-op baseline: as many iterations, around nothing
    # timed once a run for each iteration count: every record here has 5, so all share one baseline
    assert len({json.dumps(rec["empty_op_us"], sort_keys=True) for rec in records}) == 1
    # OSU's figure, the processes' own means averaged: every process's sample of an iteration is at most that
    # iteration's slowest, so their means average to at most the slowest rank's mean.
    for rec in records:
        assert 0 < rec["rank_spread"]["mean_of_process_means_us"] <= rec["time_us"]["mean"] * (1 + 1e-9), rec
    # The table: one section per (op, dtype, redop) and no wrong element anywhere.
    assert r.out.count("# Out of bounds values : 0 OK") == sum(2 * (2 if collective(op).reduces else 1) for op in on_backend("mpi"))


def test_every_dtype_and_reduction_the_mpi_backend_supports(tmp_path, validate):
    out = tmp_path / "types.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,reduce_scatter,reduce", "-b", "1K", "-e", "64K",
                        "-f", "8", "-d", "float32,float64,int32,int8,uint8", "-o", "all", "-w", "1", "-n", "2", "--json", out], np=3)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    assert {rec["redop"] for rec in measurements(doc)} == {"sum", "prod", "min", "max", "avg"}
    assert all(rec["check"]["passed"] for rec in measurements(doc))


def test_planted_wrong_element_is_caught(tmp_path, validate):
    out = tmp_path / "corrupt.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "reduce_scatter,alltoall", "-b", "1K", "-e", "16K", "-f", "4",
                        "-w", "1", "-n", "2", "--json", out], np=2, env={"TRAINSCOPE_FAULT": "corrupt:rank=1:op=alltoall:bytes=4K"})
    assert r.rc == 1, r.err
    assert "result check failed: alltoall float32 4 KiB out-of-place: 1 wrong element(s)" in r.err
    doc = json.loads(out.read_text())  # the document is complete: a failed check is a result, not a crash
    validate(doc)
    bad = [rec for rec in measurements(doc) if not rec["check"]["passed"]]
    assert [(b["op"], b["bytes"], b["check"]["wrong"]) for b in bad] == [("alltoall", 4096, 1), ("alltoall", 4096, 1)]
    assert "1 FAILED" not in r.out and "2 FAILED" in r.out


def test_hang_past_timeout_ends_every_rank_naming_the_op(tmp_path):
    out = tmp_path / "hang.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,all_gather", "-b", "256", "-e", "4K", "-f", "4",
                        "-w", "1", "-n", "2", "--timeout", "2", "--json", out], np=2,
                       env={"TRAINSCOPE_FAULT": "hang:rank=1:op=all_gather:bytes=1K"}, timeout=120)
    assert r.rc == 3, r.err
    assert "timeout: all_gather 1 KiB (128 x float32, out-of-place) made no progress for" in r.err
    assert "records measured so far are in" in r.err
    assert not out.exists()  # no half-written document
    stream = read_jsonl(tmp_path / "hang.jsonl")
    ops = [(rec["op"], rec["bytes"]) for rec in measurements({"records": stream[1:]})]
    assert ("all_reduce", 4096) in ops and ("all_gather", 256) in ops and ("all_gather", 1024) not in ops


def test_dead_rank_ends_the_run_and_keeps_the_records(tmp_path):
    out = tmp_path / "die.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,broadcast", "-b", "256", "-e", "4K", "-f", "4",
                        "-w", "1", "-n", "2", "--json", out], np=2, env={"TRAINSCOPE_FAULT": "die:rank=1:op=broadcast:bytes=1K"}, timeout=120)
    assert r.rc != 0
    assert "broadcast 1 KiB" in r.err, r.err  # process 0 names the op it waited in
    assert not out.exists()
    stream = read_jsonl(tmp_path / "die.jsonl")
    assert len([rec for rec in stream if rec["kind"] == "collective" and rec["op"] == "all_reduce"]) == 6


def test_the_record_says_the_backend_auto_chose(tmp_path):
    """--backend auto (the default) is recorded as given, and the backend it chose under config.resolved: mpi on a
    machine without a GPU (the command line once recorded "auto" there, the suite the choice)."""
    out = tmp_path / "auto.json"
    r = run_trainscope(["collectives", "--ops", "all_reduce", "-b", "8", "-e", "8", "-w", "0", "-n", "1", "--json", out],
                       np=2, env={"CUDA_VISIBLE_DEVICES": ""})
    assert r.rc == 0, r.err
    config = json.loads(out.read_text())["run"]["config"]
    assert (config["backend"], config["resolved"]["backend"]) == ("auto", "mpi")


@pytest.mark.parametrize("np", [2, 3])
def test_both_reduce_scatter_calls_check_clean_and_each_record_names_its_call(np, tmp_path, validate):
    out = tmp_path / "rs.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "reduce_scatter,all_reduce", "--mpi-reduce-scatter", "both",
                        "-b", "1K", "-e", "2M", "-f", "32", "-o", "sum,max", "-w", "0", "-n", "1", "--json", out], np=np)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    assert doc["run"]["config"]["mpi_reduce_scatter"] == "both"  # as given; and what it resolved to
    assert doc["run"]["config"]["resolved"]["mpi_reduce_scatter"] == ["block", "counts"]
    records = measurements(doc)
    assert all(rec["check"] == {"performed": True, "passed": True, "wrong": 0} for rec in records)
    assert all("algo" not in rec for rec in records if rec["op"] == "all_reduce")  # one call: nothing to name
    rs = [rec for rec in records if rec["op"] == "reduce_scatter"]
    sizes = {rec["bytes"] for rec in rs}
    assert len(sizes) == 3  # 1K, 32K, 1M, each as n ranks divide it
    assert sorted((rec["algo"], rec["redop"], rec["bytes"], rec["in_place"]) for rec in rs) == sorted(
        (call, redop, size, in_place) for call in ("block", "counts") for redop in ("sum", "max") for size in sizes
        for in_place in (False, True))
    for call in ("block", "counts"):  # a section of its own, each clean
        assert f"# reduce_scatter  float32  sum  --mpi-reduce-scatter {call}\n" in r.out
    assert r.out.count("# Out of bounds values : 0 OK") == 2 + 4


def test_the_default_reduce_scatter_call_is_named_in_every_record(tmp_path):
    out = tmp_path / "rs.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "reduce_scatter", "-b", "1K", "-e", "4K", "-f", "4",
                        "-w", "0", "-n", "1", "--json", out], np=2)
    assert r.rc == 0, r.err
    assert {rec["algo"] for rec in measurements(json.loads(out.read_text()))} == {"counts"}


# The calls the sweep does not reach (it calls blocking, the ZeRO layouts nonblocking) are C++ tests run
# under mpirun (tests/mpi/test_reduce_scatter_calls.cpp): each call, in place and out of place, blocking
# and nonblocking, checked on every rank; and out-of-place broadcast's timed call without the root's copy,
# each path still right on every rank (tests/mpi/test_broadcast_timed_call.cpp).
MPI_TESTS = Path(trainscope_path()).parent / "tests" / "ts_mpi_tests"


@pytest.mark.parametrize("np", [2, 3])
def test_both_reduce_scatter_calls_check_clean_blocking_and_nonblocking(np):
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed")
    assert MPI_TESTS.exists(), f"{MPI_TESTS} not built"
    proc = subprocess.run(["mpirun", "-np", str(np), "--oversubscribe", str(MPI_TESTS), "--gtest_color=no"],
                          capture_output=True, text=True, env=base_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.stdout.count("[  PASSED  ] 12 tests.") == np, proc.stdout[-4000:]


def test_both_forms_of_each_call_check_clean_and_each_record_names_its_form(tmp_path, validate):
    """--issue both: each op with a nonblocking MPI call measured in both forms, each a section with its records, its
    results checked as the blocking ones are; an op without one (gather) measured blocking only, and said so."""
    out = tmp_path / "issue.json"
    ops = ("all_reduce", "all_gather", "reduce_scatter")
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", ",".join(ops + ("gather",)), "--issue", "both", "-b", "1K",
                        "-e", "16K", "-f", "4", "-w", "1", "-n", "2", "--json", out], np=2)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    recs = measurements(doc)
    assert all(rec["check"]["performed"] and rec["check"]["passed"] for rec in recs)
    assert {(rec["op"], rec["issue"]) for rec in recs} == \
        {(op, form) for op in ops for form in ("blocking", "nonblocking")} | {("gather", "blocking")}
    for op in ops:  # the same sizes and placements in both forms
        sizes = {form: sorted((rec["bytes"], rec["in_place"]) for rec in recs if rec["op"] == op and rec["issue"] == form)
                 for form in ("blocking", "nonblocking")}
        assert sizes["blocking"] == sizes["nonblocking"] and sizes["blocking"], op
    assert "# all_reduce  float32  sum  --issue nonblocking\n" in r.out
    assert "# --issue both: measured blocking only: gather (no nonblocking MPI call)\n" in r.out
    assert doc["run"]["config"]["issue"] == "both"
    assert doc["run"]["config"]["resolved"]["issue"] == ["blocking", "nonblocking"]


def test_a_wrong_element_of_a_nonblocking_call_is_caught(tmp_path, validate):
    out = tmp_path / "corrupt.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce", "--issue", "nonblocking", "-b", "1K", "-e",
                        "16K", "-f", "4", "-w", "1", "-n", "2", "--json", out], np=2,
                       env={"TRAINSCOPE_FAULT": "corrupt:rank=1:op=all_reduce:bytes=4K"})
    assert r.rc == 1, r.err
    assert "result check failed: all_reduce float32 sum 4 KiB out-of-place --issue nonblocking: 1 wrong element(s)" in r.err
    doc = json.loads(out.read_text())
    validate(doc)
    bad = [(b["op"], b["bytes"], b["issue"], b["check"]["wrong"]) for b in measurements(doc) if not b["check"]["passed"]]
    assert bad == [("all_reduce", 4096, "nonblocking", 1)] * 2  # out of place and in place
    assert {rec["issue"] for rec in measurements(doc)} == {"nonblocking"}


def test_send_goes_one_way_per_pair_in_both_forms_and_its_receivers_are_checked(tmp_path, validate):
    """send (comm/collectives/send.cpp): rank 0 sends to rank 1, and at 3 ranks rank 2 takes no part (no hang); both
    forms check clean, and a wrong element on the receiver is caught in each (what the check reads is rank 1's)."""
    out = tmp_path / "send.json"
    sweep = ["collectives", "--backend", "mpi", "--ops", "send", "--issue", "both", "-b", "1K", "-e", "16K", "-f", "4",
             "-w", "1", "-n", "2", "--json", out]
    r = run_trainscope(sweep, np=3)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    recs = measurements(doc)
    assert {(rec["op"], rec["issue"], rec["in_place"]) for rec in recs} == \
        {("send", form, p) for form in ("blocking", "nonblocking") for p in (False, True)}
    assert all(rec["check"] == {"performed": True, "passed": True, "wrong": 0} and rec["bus_factor"] == 1 for rec in recs)
    r = run_trainscope(sweep, np=2, env={"TRAINSCOPE_FAULT": "corrupt:rank=1:op=send:bytes=4K"})
    assert r.rc == 1, r.err
    bad = sorted((b["issue"], b["in_place"]) for b in measurements(json.loads(out.read_text())) if not b["check"]["passed"])
    assert bad == [(form, p) for form in ("blocking", "nonblocking") for p in (False, True)], bad


def test_a_form_other_than_blocking_on_nccl_is_one_line_and_exit_2(tmp_path):
    """NCCL has one form of each call: --issue is refused there rather than ignored, before any work."""
    r = run_trainscope(["collectives", "--backend", "nccl", "--issue", "nonblocking", "--json", tmp_path / "x.json"])
    assert r.rc == 2, (r.rc, r.err)
    (line,) = r.error_lines()
    assert line.startswith("trainscope: error: --issue nonblocking: applies to --backend mpi; the nccl backend has one form "
                           "of each call (every call is queued on its stream and returns at once, and the sweep times it "
                           "to completion)"), r.err
    assert not (tmp_path / "x.json").exists()


def test_both_cache_states_check_clean_and_each_record_names_its_state(tmp_path, validate):
    """--cache both: every op measured from hot caches (OSU's loop) and from cold ones (a 64 MiB buffer written before
    each iteration, untimed), each a section with its records, checked as the others are."""
    out = tmp_path / "cache.json"
    ops = ("all_reduce", "all_gather")
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", ",".join(ops), "--cache", "both", "-b", "1K", "-e", "16K",
                        "-f", "4", "-w", "1", "-n", "2", "--json", out], np=2)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    recs = measurements(doc)
    assert all(rec["check"]["performed"] and rec["check"]["passed"] for rec in recs)
    assert {(rec["op"], rec["cache"]) for rec in recs} == {(op, state) for op in ops for state in ("hot", "cold")}
    assert {rec.get("cache_flush_bytes") for rec in recs if rec["cache"] == "cold"} == {64 << 20}
    assert not any("cache_flush_bytes" in rec for rec in recs if rec["cache"] == "hot")
    for op in ops:  # the same sizes and placements in both states
        sizes = {state: sorted((rec["bytes"], rec["in_place"]) for rec in recs if rec["op"] == op and rec["cache"] == state)
                 for state in ("hot", "cold")}
        assert sizes["hot"] == sizes["cold"] and sizes["hot"], op
    assert "# all_gather  float32  --cache cold\n" in r.out
    assert doc["run"]["config"]["resolved"]["cache"] == ["hot", "cold"]


def test_a_planted_fault_still_acts_before_a_cold_call(tmp_path):
    """The flush joins the untimed work before each iteration; a planted corruption there is still caught."""
    out = tmp_path / "corrupt.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce", "--cache", "cold", "-b", "4K", "-e", "4K",
                        "-w", "1", "-n", "2", "--json", out], np=2,
                       env={"TRAINSCOPE_FAULT": "corrupt:rank=1:op=all_reduce:bytes=4K"})
    assert r.rc == 1, r.err
    assert "result check failed: all_reduce float32 sum 4 KiB out-of-place --cache cold: 1 wrong element(s)" in r.err


def test_cold_caches_on_nccl_are_one_line_and_exit_2(tmp_path):
    r = run_trainscope(["collectives", "--backend", "nccl", "--cache", "cold", "--json", tmp_path / "x.json"])
    assert r.rc == 2, (r.rc, r.err)
    (line,) = r.error_lines()
    assert line.startswith("trainscope: error: --cache cold: applies to --backend mpi (the nccl backend's timed events "
                           "would enclose the cache flush queued before each call)"), r.err
    assert not (tmp_path / "x.json").exists()


BAD_INPUTS = [
    (["-b", "4M", "-e", "8"], "-b/--min-bytes (4 MiB) is larger than -e/--max-bytes (8 B)"),
    (["-b", "12Q"], "-b/--min-bytes: '12Q' is not a size"),
    (["--ops", "all_reduce,allreduce"], "unknown collective 'allreduce'"),
    (["-d", "float8"], "unknown dtype 'float8'"),
    (["-o", "xor"], "unknown redop 'xor'"),
    (["-r", "2"], "-r/--root 2 is outside the world of 2 rank(s)"),
    (["-d", "bfloat16"], "the mpi backend cannot reduce bfloat16"),
    (["-e", "1T"], "-e/--max-bytes 1 TiB needs"),
    (["-f", "1"], "--step-factor: 1 is not in (1, 1000000]"),
    (["-f", "inf"], "--step-factor: inf is not a finite number"),
    (["-f", "nan"], "--step-factor: nan is not a finite number"),
    (["--timeout", "nan"], "--timeout: nan is not a finite number"),
    (["-G", "4"], "-G/--graph needs --backend nccl"),
    (["--frobnicate"], "collectives: unknown option --frobnicate"),
    (["--gpus-per-process", "2"], "--gpus-per-process applies to --backend nccl only"),
    (["--device", "cuda:0"], "--device cuda:N applies to --backend nccl only"),
    (["--device", "cpu"], "--device cpu: collectives on the CPU are --backend mpi"),
    (["--device", "gpu0"], "--device gpu0: expected cpu, cuda or cuda:N"),
    (["--mpi-reduce-scatter", "ring"], "--mpi-reduce-scatter: 'ring' is not block, counts or both"),
    (["--issue", "nonblocking", "--ops", "all_reduce,gather"],
     "--ops gather: --issue nonblocking: it has no nonblocking MPI call here (--issue blocking or both measure its "
     "blocking one)"),
]


@pytest.mark.parametrize("args,message", BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    out = tmp_path / "bad.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--json", out] + args, np=2)
    assert r.rc == 2, (r.rc, r.err)
    assert r.error_lines() == [l for l in r.error_lines() if message in l] and len(r.error_lines()) == 1, r.err
    assert not out.exists() and not (tmp_path / "bad.jsonl").exists()  # nothing written for a run that never started


# The closed choices, each refused as the command line is read (one process, no launch): the option, the value and its
# choices in one line.
CHOICE_ERRORS = [
    (["--backend", "gloo"], "--backend: 'gloo' is not auto, mpi or nccl"),
    (["--bootstrap", "ssh"], "--bootstrap: 'ssh' is not auto, mpi, env or single"),
    (["--placement", "sideways"], "--placement: 'sideways' is not both, out or in"),
    (["--issue", "sometimes"], "--issue: 'sometimes' is not blocking, nonblocking or both"),
]


@pytest.mark.parametrize("args,message", CHOICE_ERRORS, ids=[" ".join(a) for a, _ in CHOICE_ERRORS])
def test_a_value_outside_a_choice_is_one_line_naming_the_choices_and_exit_2(args, message, tmp_path):
    out = tmp_path / "bad.json"
    r = run_trainscope(["collectives", "--json", out] + args)
    assert r.rc == 2, (r.rc, r.err)
    assert r.error_lines() == [f"trainscope: error: {message} (see trainscope --help)"], r.err
    assert not out.exists()


def test_nccl_without_a_gpu_is_a_clear_error(tmp_path):
    r = run_trainscope(["collectives", "--backend", "nccl", "--json", tmp_path / "x.json"])
    if "trainscope was built without CUDA" in r.err:
        assert r.rc == 2
        return
    if r.rc == 0:
        pytest.skip("this machine has a GPU: the NCCL path ran")
    assert r.rc == 2 and len(r.error_lines()) == 1, r.err
    assert "--backend nccl needs a CUDA GPU" in r.err


def test_single_process_without_mpirun(tmp_path, validate):
    out = tmp_path / "one.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,sendrecv", "-b", "64", "-e", "1K", "-f", "4",
                        "-n", "2", "--json", out])
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    assert {rec["ranks"] for rec in measurements(doc)} == {1}
    assert all(rec["busbw_gbps"] == 0 for rec in measurements(doc) if rec["op"] == "all_reduce")  # 2(n-1)/n = 0
    # Said once, before the first table: one rank measures no link, and how to launch more (issue #35).
    lines = r.out.splitlines()
    notice = [i for i, line in enumerate(lines) if line.startswith("# one rank: a collective over one rank crosses no link")]
    assert len(notice) == 1 and notice[0] < lines.index("# all_reduce  float32  sum"), r.out
    assert lines[notice[0] + 1].startswith("# To measure links, launch 2 or more: mpirun --oversubscribe -np 2 trainscope"), r.out
    assert "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT" in lines[notice[0] + 1]
    footers = [line for line in lines if line.startswith("# Avg bus bandwidth")]
    assert len(footers) == 2 and all(line.endswith("GB/s (one rank: no link measured)") for line in footers), footers


def test_a_factor_near_one_sweeps_strictly_increasing_whole_elements(tmp_path, validate):
    # 8 x 1.1 rounds back to 8: each size is the product rounded up to whole elements, and one element more
    # at least; the gathered ops then take what they divide into whole elements per rank, each size once.
    out = tmp_path / "fine.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,all_gather,reduce_scatter", "-b", "8", "-e", "1K", "-f", "1.1",
                        "-w", "0", "-n", "1", "--placement", "out", "--json", out], np=2)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        sizes = [rec["bytes"] for rec in measurements(doc) if rec["op"] == op]
        unit = 4 * (2 if collective(op).whole_buffer else 1)
        assert len(sizes) > 10 and sizes == sorted(set(sizes)), (op, sizes)
        assert all(s % unit == 0 and 8 <= s <= 1024 for s in sizes), (op, sizes)
    assert all(rec["check"]["passed"] for rec in measurements(doc))


def test_table_reads_like_nccl_tests(tmp_path):
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce", "-b", "1K", "-e", "4K", "-f", "2", "-n", "2"], np=2)
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    header = next(l for l in lines if "size" in l and "count" in l)
    for column in ("type", "redop", "root", "time", "algbw", "busbw", "#wrong"):
        assert column in header
    rows = [l.split() for l in lines if l.strip() and not l.startswith("#")]
    assert [row[0] for row in rows] == ["1024", "2048", "4096"]
    assert all(row[2] == "float32" and row[3] == "sum" and row[8] == "0" and row[12] == "0" for row in rows)
    assert "one rank" not in r.out and "no link measured" not in r.out  # two ranks measure one


def test_the_readme_benchmark_against_a_hand_timed_mpi_loop_runs(tmp_path):
    """scripts/bench-collectives.sh (README) on small sizes: it reads only the collective records of the result
    (it once read the telemetry records too and died with KeyError: 'bytes') and prints its table."""
    build = Path(trainscope_path()).parent
    if not shutil.which("mpirun") or not (build / "mpi_allreduce_reference").exists():
        pytest.skip("mpirun or the reference MPI loop (built with MPI) is missing")
    kept = tmp_path / "kept"  # TS_BENCH_KEEP: the scratch folder's files copied there (scripts/lib.sh ts_bench_end)
    r = subprocess.run([str(ROOT / "scripts" / "bench-collectives.sh"), "2", "1", "4096", "3"],
                       capture_output=True, text=True, timeout=300,
                       env=base_env({"TS_BUILD": str(build), "TS_BUILD_GIVEN": "1", "TS_BENCH_KEEP": str(kept)}))
    assert r.returncode == 0, r.stderr
    assert {"ref-1.txt", "ts-1.json", "ts-1.jsonl"} <= {p.name for p in kept.iterdir()}, list(kept.iterdir())
    assert json.loads((kept / "ts-1.json").read_text())["records"]  # the run's result, whole
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [int(row.split("|")[1]) for row in rows] == [8 << k for k in range(10)], r.stdout
    # The summary line is printed; its verdict is timing (no size here reaches 1 MiB, on purpose: a benchmark's
    # figures decide nothing in a test).
    assert "largest overhead at 1 MiB and above:" in r.stdout


def test_sizes_from_large_bytes_on_take_the_large_counts_and_each_record_says_its_own(tmp_path, validate):
    # OSU's practice (fewer iterations for large messages): the quick suite's sweep spent most of its time there.
    out = tmp_path / "large.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,all_gather", "-b", "1K", "-e", "64K", "-f", "4",
                        "-n", "7", "--trials", "2", "--large-bytes", "16K", "--large-iters", "3", "--large-warmup", "1",
                        "--json", out], np=2)
    assert r.rc == 0, r.err
    assert "# warmup 5, 7 iterations x 2 trials (from 16 KiB on: warmup 1, 3 iterations)," in r.out, r.out
    doc = json.loads(out.read_text())
    validate(doc)
    records = measurements(doc)
    assert {rec["bytes"] for rec in records} == {1024, 4096, 16384, 65536}
    for rec in records:
        iters = 3 if rec["bytes"] >= 16384 else 7
        assert (rec["iters"], rec["trials"], len(rec["samples_us"])) == (iters, 2, 2 * iters), rec
        assert rec["check"]["passed"]
    config = doc["run"]["config"]
    assert (config["large_bytes"], config["large_iters"], config["large_warmup"]) == ("16K", 3, 1)


# Runs its arguments (one rank of trainscope under mpirun) as a child and prints the child's exit code and its
# peak resident memory (the kernel's accounting of this wrapper's children), one JSON line per rank.
PEAK = """
import json, resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(json.dumps({"rc": rc, "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}), flush=True)
"""


def peak_rss_per_rank(args):
    """Each rank's peak resident memory in bytes, for `trainscope collectives --backend mpi ARGS` at 2 ranks."""
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed")
    cmd = ["mpirun", "-np", "2", "--oversubscribe", sys.executable, "-c", PEAK, trainscope_path(), "collectives",
           "--backend", "mpi", *[str(a) for a in args]]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=base_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # Each rank prints one object; mpirun forwards both ranks' output as it comes, so two may share a line.
    ranks = [json.loads(obj) for obj in re.findall(r'\{"rc": [^{}]*\}', proc.stdout)]
    assert len(ranks) == 2 and all(r["rc"] == 0 for r in ranks), proc.stdout + proc.stderr
    return [r["peak_kib"] * 1024 for r in ranks]


def test_a_sweeps_memory_is_its_two_buffers_and_a_constant():
    """Issue #40: a sweep to 256 MiB peaked at 3.4x its largest message: beside the two communication buffers the
    result check staged inputs and outputs through a third, whole-size host buffer. It stages through a fixed one in
    pieces now: each rank's peak is at most that of an 8-byte sweep (the binary, its libraries, MPI) plus twice the
    largest message plus 32 MiB (the 4 MiB staging buffer, and room for the allocator). Broadcast, which makes no
    temporary inside MPI (all_reduce's ring adds count/n elements in Open MPI, as under osu_allreduce)."""
    largest = 64 << 20
    base = max(peak_rss_per_rank(["--ops", "broadcast", "-b", "8", "-e", "8", "-w", "0", "-n", "1"]))
    peaks = peak_rss_per_rank(["--ops", "broadcast", "-b", "1M", "-e", str(largest), "-f", "8", "-w", "1", "-n", "2"])
    for rank, peak in enumerate(peaks):
        assert peak <= base + 2 * largest + (32 << 20), \
            f"rank {rank}: peak {peak / 2**20:.0f} MiB, an 8-byte sweep's {base / 2**20:.0f} MiB + 2 x {largest >> 20} MiB + 32 MiB"


def test_one_process_mean_of_means_is_its_own_mean(tmp_path):
    """With one process OSU's figure (the processes' means averaged) is that process's mean: the slowest rank's."""
    out = tmp_path / "one.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,broadcast", "-b", "8", "-e", "4K", "-f", 8,
                        "-n", 7, "-w", 1, "--json", out])
    assert r.rc == 0, r.err
    records = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "collective"]
    assert records
    for rec in records:
        assert rec["rank_spread"]["mean_of_process_means_us"] == pytest.approx(rec["time_us"]["mean"], rel=1e-9), rec

