"""Exposed communication split into waiting for peers and transfer (issue #40; bench/train/peer_waits.h).

Before, every moment a rank was blocked on a collective was "exposed communication": a dp 2 tiny transformer
reported 19-27 ms of it per step for a 540 KB all-reduce that takes ~0.13 ms alone, and the step breakdown told the
user to blame the network for a straggler. A rank blocked before the collective's last member has launched it is
waiting for that member: nothing can move before every member arrives.

Here rank 1 sleeps 60 ms at the start of every step (a planted straggler, TRAINSCOPE_FAULT delay): rank 0, in each
layout whose steps hold collectives over both ranks, must find most of its exposed time to be waiting, and rank 1
(which arrives last) almost none. Marked `alone`: the planted sleep is the only thing that may make a rank late.
"""
import json
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, base_env, run_trainscope, trainscope_path

SLEEP_MS = 60
LAYOUTS = {"dp": ["--dp", 2], "tp": ["--tp", 2], "zero3": ["--zero", 3], "ps": ["--sync", "ps"]}


def train_with_a_straggler(tmp_path, layout):
    doc = tmp_path / "run.json"
    r = run_trainscope(["train", "--model", "mlp", "--no-ceiling", "--steps", 8, "--warmup-steps", 1, "--json", doc,
                        *LAYOUTS[layout]], np=2, env={"TRAINSCOPE_FAULT": f"delay:rank=1:ms={SLEEP_MS}"}, timeout=300)
    assert r.rc == 0, r.err
    record = next(x for x in json.loads(doc.read_text())["records"] if x["kind"] == "train")
    return record, r.out


@pytest.mark.alone
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_wait_for_a_sleeping_rank_is_found_on_the_other_rank(tmp_path, layout):
    record, out = train_with_a_straggler(tmp_path, layout)
    early, late = record["ranks"]
    for r in (early, late):  # the two parts add up to the exposed time
        assert r["waiting_for_peers_us"] + r["exposed_transfer_us"] == pytest.approx(r["exposed_communication_us"], rel=1e-9)
    # Rank 0 sat blocked for most of the planted sleep, every step, before rank 1 had launched anything.
    assert early["waiting_for_peers_us"] > 0.5 * SLEEP_MS * 1e3, early
    assert early["exposed_transfer_us"] < early["waiting_for_peers_us"], early
    # Rank 1 arrives last: it never waits for anyone to launch.
    assert late["waiting_for_peers_us"] < 0.1 * early["waiting_for_peers_us"], late
    # Each phase's compute alone leaves out the communication calls inside it: where the step's first collective is in
    # the forward (tensor parallelism's sums, ZeRO-3's gathers), rank 0's wait for the sleeper is in its forward phase,
    # not in its forward compute.
    for r in (early, late):
        assert r["forward_compute_us"] <= r["forward_us"] and r["backward_compute_us"] <= r["backward_us"], r
    if layout in ("tp", "zero3"):
        assert early["forward_us"] - early["forward_compute_us"] > 0.5 * SLEEP_MS * 1e3, early
        assert early["forward_compute_us"] < 0.5 * SLEEP_MS * 1e3, early
    # Process 0's own block and console say the same.
    comm = record["communication"]
    assert comm["waiting_us"]["median"] > 0.5 * SLEEP_MS * 1e3
    line = next(x for x in out.splitlines() if x.startswith("# exposed "))
    assert "waiting for peers" in line and "+ transfer" in line
    # Each collective's transfer leaves out the wait for the last member: the planted sleep lands in some
    # collective's launch-to-completion time (the first of a step), not in the transfers. (Not in any: ZeRO-3 and
    # the parameter server post a collective before the step's end, and the sleeping rank makes no MPI call that
    # would progress it, so that one op's transfer holds the sleep: a stall of the peer's, not an arrival, see
    # bench/train/peer_waits.h.)
    collectives = record["collectives"]
    assert any(c["time_us"]["max"] > 0.5 * SLEEP_MS * 1e3 for c in collectives), collectives
    for c in collectives:
        assert c["transfer_us"]["median"] < 0.5 * SLEEP_MS * 1e3, c
        assert c["transfer_us"]["median"] <= c["time_us"]["median"] and c["transfer_busbw_gbps"] >= c["busbw_gbps"], c


@pytest.mark.alone
def test_a_pipeline_stages_wait_for_a_sleeper_is_in_its_forward_phase_not_its_compute(tmp_path):
    """The pipeline's forward and backward ops (workloads/parallel/pipeline.cpp) leave their communication calls out
    of their compute as the trainer's steps do. Under --pp 2 --tp 2 (ranks 0, 1 the first stage, 2, 3 the second) the
    sleeper (rank 1) sends its activation late to rank 3, so rank 2 waits for rank 3 in its forward's tensor-parallel
    sum: its forward phase holds the wait, its forward compute does not. Before, a pipeline's rows had compute ==
    phase."""
    doc = tmp_path / "run.json"
    r = run_trainscope(["train", "--model", "mlp", "--no-ceiling", "--steps", 6, "--warmup-steps", 1, "--json", doc,
                        "--pp", 2, "--tp", 2, "--micro-batches", 2], np=4,
                       env={"TRAINSCOPE_FAULT": f"delay:rank=1:ms={SLEEP_MS}"}, timeout=300)
    assert r.rc == 0, r.err
    record = next(x for x in json.loads(doc.read_text())["records"] if x["kind"] == "train")
    rows = record["ranks"]
    assert len(rows) == 4
    for row in rows:
        assert row["forward_compute_us"] <= row["forward_us"] and row["backward_compute_us"] <= row["backward_us"], row
    waiting = [row for row in rows if row["forward_us"] - row["forward_compute_us"] > 0.5 * SLEEP_MS * 1e3]
    assert [row["rank"] for row in waiting] == [2], rows
    assert waiting[0]["forward_compute_us"] < 0.5 * SLEEP_MS * 1e3, waiting


def test_the_peer_waits_benchmark_sweeps_every_collective_of_the_step(tmp_path):
    # scripts/bench-peer-waits.sh compared the step's exposed transfer with a sweep of "the training's all-reduce", the
    # record's first collective, which became the loss's 8-byte mean once that was timed: 8 bytes against the whole
    # transfer. Each of the step's collectives is swept at its op and size now; what is checked is which were swept
    # and named, not any time (a benchmark's figures are not a test's).
    keep = tmp_path / "kept"
    p = subprocess.run([ROOT / "scripts" / "bench-peer-waits.sh", "1", "4"], capture_output=True, text=True, timeout=300,
                       env=base_env({"TS_BUILD_GIVEN": "1", "TS_BUILD": str(Path(trainscope_path()).parent),
                                     "TS_BENCH_KEEP": str(keep)}))
    assert p.returncode == 0, p.stdout + p.stderr
    train = next(x for x in json.loads((keep / "train-1.json").read_text())["records"] if x["kind"] == "train")
    steps = {(c["op"], c["bytes"]) for c in train["collectives"]}
    assert len(steps) >= 2 and ("all_reduce", 8) in steps, steps  # the gradients' all-reduce and the loss's mean
    assert {f"sweep-1-{op}-{n}.json" for op, n in steps} <= {f.name for f in keep.iterdir()}
    named = p.stdout.strip().splitlines()[-1]
    assert all(f"{n} B {op}" in named for op, n in steps), named
