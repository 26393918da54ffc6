"""analyze on PyTorch profiler traces: a GPU-style Kineto sample written by hand from Kineto's format (tests/reports/data/
kineto-gpu: NCCL and GEMM kernels on their streams, cuda_runtime launches, ac2g flows, ProfilerStep#N, rank 1's clock
500 us later by baseTimeNanoseconds) against figures worked out by hand; a real 2-rank gloo DDP job's traces (torch on the
CPU; skipped where torch is not installed); a trainscope trace and a PyTorch one side by side."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, python_with_torch
from synthetic import span
from reports.__main__ import main
from reports.traces.analyze import analyze, format_table
from reports.traces.trace_dir import load_trace_docs

SAMPLE = Path(__file__).resolve().parent / "data" / "kineto-gpu"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def test_a_kineto_gpu_trace_breaks_down_as_worked_out_by_hand():
    result = analyze(SAMPLE)
    r0, r1 = result["ranks"]
    # rank 0, step 0 [1000, 2000]: GEMM [1100, 1500], NCCL [1300, 1800] (under the GEMM until 1500), memcpy [1050, 1080]
    # step 1 [2000, 3000]: GEMM [2100, 2700], NCCL [2700, 2900]
    s0, s1 = r0["per_step"]
    assert (s0["step"], s0["step_us"], s0["compute_us"], s0["communication_us"], s0["exposed_us"], s0["idle_us"]) == (0, 1000, 400, 500, 300, 300)
    assert s0["overlap"] == pytest.approx(200 / 500) and s0["device_busy_us"] == 30 + 700
    assert (s1["compute_us"], s1["exposed_us"], s1["idle_us"], s1["overlap"], s1["device_busy_us"]) == (600, 200, 200, 0, 800)
    # rank 1 on rank 0's axis: GEMM [1100, 1400] then NCCL [1400, 1900]; GEMM [2050, 2550], NCCL [2600, 2800]
    t0, t1 = r1["per_step"]
    assert (t0["step_us"], t0["compute_us"], t0["exposed_us"], t0["idle_us"]) == (1000, 300, 500, 200)
    assert (t1["step_us"], t1["compute_us"], t1["exposed_us"], t1["idle_us"]) == (1000, 500, 200, 300)
    assert (r0["compute_us"], r0["exposed_us"], r0["idle_us"], r1["exposed_us"]) == (500, 250, 250, 350)
    # The all-reduces of group "0": rank 1 starts the first 100 us after rank 0, rank 0 the second 100 us after rank 1.
    assert result["clocks_aligned"] and result["late_ranks"] == []
    assert [(s["rank"], s["steps"], s["collectives"], s["median_skew_us"], s["max_skew_us"]) for s in result["stragglers"]] == [
        (0, 2, 2, 50, 100), (1, 2, 2, 50, 100)]
    names = {k["name"]: k["count"] for k in result["kernels"]["top"]}
    assert names == {"ampere_sgemm_128x64_nn": 4, NCCL: 4, "Memcpy HtoD (Pageable -> Device)": 1}


def test_the_gpu_step_annotation_is_not_a_step_and_host_collectives_are_not_counted_twice():
    docs = load_trace_docs(SAMPLE)
    steps = [e for e in docs[0]["traceEvents"] if e["cat"] == "step"]
    assert [(e["name"], e["pid"]) for e in steps] == [("ProfilerStep#0", 4000), ("ProfilerStep#1", 4000)]
    comm = [e for e in docs[0]["traceEvents"] if e["cat"] == "communication"]
    assert [e["name"] for e in comm] == [NCCL, NCCL] and {e["args"]["group"] for e in comm} == {"0"}


def pytorch_job(tmp_path, ranks=2, steps=3):
    py = python_with_torch()
    out = tmp_path / "pt"
    r = subprocess.run([py, str(ROOT / "scripts" / "pytorch-ddp-trace.py"), str(out), "--ranks", str(ranks), "--steps", str(steps)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def test_a_real_pytorch_ddp_job_on_gloo_is_analyzed(tmp_path):
    out = pytorch_job(tmp_path)
    assert sorted(p.name for p in out.iterdir()) == ["rank0.pt.trace.json", "rank1.pt.trace.json"]
    result = analyze(out)
    assert [r["rank"] for r in result["ranks"]] == [0, 1]
    for r in result["ranks"]:
        numbers = [s["step"] for s in r["per_step"]]  # ProfilerStep#N of the 3 active steps (N as this torch counts)
        assert numbers == list(range(numbers[0], numbers[0] + 3))
        for s in r["per_step"]:
            assert s["compute_us"] + s["exposed_us"] + s["idle_us"] == pytest.approx(s["step_us"], rel=1e-6)
            assert s["compute_us"] > 0 and s["communication_us"] > 0 and 0 <= s["exposed_us"] <= s["communication_us"] + 1e-6
    docs = load_trace_docs(out)
    for doc in docs.values():  # gloo's all-reduces (on its own thread) and c10d's (issued on the main one)
        names = {e["name"] for e in doc["traceEvents"] if e["cat"] == "communication"}
        assert {"gloo:all_reduce", "c10d::allreduce_"} <= names, names
    text = format_table(result)
    if not result["clocks_aligned"]:  # a build of torch without Kineto: each process's clock starts at its own profiler start
        assert "# stragglers: not looked for" in text and result["stragglers"] == []


def test_a_trainscope_trace_and_a_pytorch_trace_side_by_side(tmp_path, capsys):
    ours = tmp_path / "ours"
    ours.mkdir()
    events = [span("ProfilerStep#0", "step", 0, 1000, step=0), span("forward 0", "compute", 0, 600), span("all_reduce", "communication", 500, 900, 1)]
    (ours / "rank-0.json").write_text(json.dumps({"traceEvents": events, "distributedInfo": {"rank": 0, "world_size": 1},
                                                  "trainscope": {"what": "train mlp tiny dp=1"}}))
    pt = tmp_path / "pt"
    shutil.copytree(SAMPLE, pt)
    assert main(["analyze", str(ours), str(pt), "--json", str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    assert f"## {ours}\n# per rank" in out and f"## {pt}\n# per rank" in out
    side = out[out.index("# side by side"):].splitlines()
    assert side[2] == f"       1.000     0.600 ( 60%)     0.300 ( 30%)     0.100 ( 10%)  {ours} (train mlp tiny dp=1, 1 rank(s))"
    # the sample's four steps: compute 400, 600, 300, 500; exposed 300, 200, 500, 200; idle 300, 200, 200, 300
    assert side[3] == f"       1.000     0.450 ( 45%)     0.300 ( 30%)     0.250 ( 25%)  {pt} (PyTorch profiler trace (Kineto), 2 rank(s))"
    doc = json.loads((tmp_path / "a.json").read_text())
    assert [t["trace_dir"] for t in doc["traces"]] == [str(ours), str(pt)]


@pytest.mark.parametrize("content,message", [
    ("{\"traceEvents\": 3}", "$: 3 is not of type 'array'"),
    ("{\"events\": []}", "not a Chrome trace (neither a list of events nor an object with traceEvents)"),
    ("[{\"ph\": \"X\", \"name\": \"ProfilerStep#1\", \"ts\": 0, \"dur\": -1}]", "-1 is less than the minimum of 0"),
    ("{\"traceEvents\": [], \"distributedInfo\": {\"rank\": -2}}", "distributedInfo.rank must be a rank"),
    ("{\"traceEvents\": [], \"baseTimeNanoseconds\": 1.5}", "baseTimeNanoseconds must be a whole number"),
])
def test_a_malformed_pytorch_trace_is_one_line(tmp_path, capsys, content, message):
    (tmp_path / "rank0.pt.trace.json").write_text(content)
    assert main(["analyze", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"trainscope: error: {tmp_path / 'rank0.pt.trace.json'}") and message in err[0], err


def test_two_pytorch_traces_of_one_rank_are_refused(tmp_path, capsys):
    for name in ("a.json", "b.json"):
        shutil.copy(SAMPLE / "rank0.pt.trace.json", tmp_path / name)
    assert main(["analyze", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"trainscope: error: {tmp_path / 'b.json'}: rank 0 again (another file of {tmp_path} is that rank's)"
