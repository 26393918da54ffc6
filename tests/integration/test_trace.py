"""`train --trace DIR` and `trainscope analyze DIR` under mpirun -np 4: per-rank and merged Chrome trace
files that parse, name every rank, nest their spans and carry the collectives' bytes; an analysis whose
parts add up to the step; a planted straggler named."""
import json
from pathlib import Path

import pytest

from helpers import run_trainscope

RUNS = {
    "data-parallel": ["--model", "mlp", "--preset", "tiny", "--batch", 16, "--steps", 4],
    "pipeline": ["--model", "transformer", "--preset", "tiny", "--batch", 8, "--steps", 4, "--pp", 4, "--micro-batches", 4],
}


def traced(tmp_path, name, args, env=None):
    d = tmp_path / name
    r = run_trainscope(["train", "--no-ceiling", "--warmup-steps", 1, "--trace", d, "--json", tmp_path / f"{name}.json"] + args, np=4, env=env,
                       timeout=600)
    assert r.rc == 0, r.err
    return d


def analyze(d, tmp_path, *extra):
    out = tmp_path / "analysis.json"
    r = run_trainscope(["analyze", d, "--json", out] + list(extra))
    assert r.rc == 0, r.err
    return json.loads(out.read_text()), r.out


def assert_nested(spans):
    """Spans of one track either contain one another or follow one another (1 ns of slack for rounding)."""
    stack = []
    for e in sorted(spans, key=lambda e: (e["ts"], -e["dur"])):
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - 1e-3:
            stack.pop()
        if stack:
            assert e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"] + 1e-3, (e, stack[-1])
        stack.append(e)


@pytest.mark.parametrize("run", list(RUNS))
def test_traces_are_per_rank_merged_nested_and_carry_bytes(tmp_path, run):
    d = traced(tmp_path, run, RUNS[run])
    for rank in range(4):
        doc = json.loads((d / f"rank-{rank}.json").read_text())
        assert doc["distributedInfo"] == {"rank": rank, "world_size": 4}
        spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        assert all(e["pid"] == rank for e in spans)
        assert_nested([e for e in spans if e["tid"] == 0])
        steps = [e for e in spans if e["cat"] == "step"]
        assert len(steps) == 4
        comm = [e for e in spans if e["cat"] == "communication"]
        assert comm and all(e["tid"] == 1 and e["args"]["bytes"] > 0 and e["args"]["group"] for e in comm)
        layers = {e["name"] for e in spans if e["name"].startswith(("forward layer", "backward layer"))}
        assert layers  # every rank ran some layers
        if run == "pipeline":
            assert {e["name"] for e in comm} >= ({"send"} if rank < 3 else {"recv"})
    merged = json.loads((d / "merged.json").read_text())["traceEvents"]
    assert {e["pid"] for e in merged if e["ph"] == "X"} == {0, 1, 2, 3}
    last = {}
    for e in merged:  # monotonic per track
        if e["ph"] != "X":
            continue
        key = (e["pid"], e["tid"])
        assert e["ts"] >= last.get(key, float("-inf"))
        last[key] = e["ts"]
    # one time axis: every rank's first step starts within a step's length of the others'
    firsts = [min(e["ts"] for e in merged if e["ph"] == "X" and e["pid"] == p and e["cat"] == "step") for p in range(4)]
    longest = max(e["dur"] for e in merged if e["ph"] == "X" and e["cat"] == "step")
    assert max(firsts) - min(firsts) < longest


@pytest.mark.parametrize("run", list(RUNS))
def test_the_breakdown_adds_up_to_the_step(tmp_path, run):
    d = traced(tmp_path, run, RUNS[run])
    result, out = analyze(d, tmp_path)
    assert [r["rank"] for r in result["ranks"]] == [0, 1, 2, 3]
    for r in result["ranks"]:
        for s in r["per_step"]:
            parts = s["compute_us"] + s["exposed_us"] + s["idle_us"]
            assert parts == pytest.approx(s["step_us"], rel=0.02)
            assert s["compute_us"] > 0 and s["exposed_us"] >= 0 and s["idle_us"] >= -1e-6
            assert s["exposed_us"] <= s["communication_us"] + 1e-6
    if run == "pipeline":
        assert any(r["pipeline_bubble"] > 0 for r in result["ranks"])  # stages wait for each other
    assert "compute + exposed communication + idle = step" in out


def test_a_planted_straggler_is_named(tmp_path):
    d = traced(tmp_path, "straggler", RUNS["data-parallel"], env={"TRAINSCOPE_FAULT": "delay:rank=2:ms=40"})
    result, out = analyze(d, tmp_path, "--straggler-ms", 10)
    assert result["late_ranks"] == [2], out
    assert "# stragglers: rank 2" in out


def test_analyze_without_traces_is_one_line(tmp_path):
    r = run_trainscope(["analyze", tmp_path])
    assert r.rc == 2
    assert r.error_lines() == [f"trainscope: error: {tmp_path}: no rank-<r>.json trace files (write them with `trainscope train --trace {tmp_path}`)"]


def test_the_report_gets_a_profile_section_from_the_traces(tmp_path):
    d = traced(tmp_path, "straggler", RUNS["data-parallel"], env={"TRAINSCOPE_FAULT": "delay:rank=1:ms=40"})
    rep = tmp_path / "rep"
    r = run_trainscope(["report", tmp_path / "straggler.json", "--trace", d, "-o", rep])
    assert r.rc == 0, r.err
    html = (rep / "index.html").read_text()
    assert "Profile" in html and "Arrival skew at the collectives" in html and "stragglers: rank 1" in html
    for png in ("profile_gantt.png", "profile_breakdown.png"):
        assert (rep / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## Profile" in (rep / "summary.md").read_text()
