"""analyze's kernel breakdown on hand-made traces with kernel-level (CUPTI) spans, every number known:
the top kernels by total time per rank and over all ranks, the union of overlapping streams against
the plain sum, each step's kernel coverage and the --check-kernel-coverage gate; the roofline fraction
only where a kernel name matches one measured op and shape; no kernel section on a CPU trace."""
import json

import pytest

from reports.__main__ import main
from reports.traces.analyze import analyze, format_table
from reports.traces.kernel_breakdown import coverage_failures, function_name, kernel_breakdown, roofline_matches

LN = "void ts::cuda::(anonymous namespace)::layernormKernel<float>(float*, float const*, int, int)"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def x(name, cat, a, b, tid=0, **args):
    e = {"ph": "X", "name": name, "cat": cat, "ts": a, "dur": b - a, "pid": 0, "tid": tid}
    if args:
        e["args"] = args
    return e


def step(i, a, b):
    return x(f"step {i}", "step", a, b, step=i)


# Rank 0, two steps of 100 us. Step 0 [0,100]: GEMM [0,40] and [50,90] on stream 7, the layernorm [40,50]
# on stream 7, the NCCL all-reduce [60,80] beside the second GEMM on stream 13: union [0,90] = 90, plain sum
# 40 + 40 + 10 + 20 = 110. Step 1 [100,200]: GEMM [100,140], a memcpy [140,150], the layernorm [150,160],
# then nothing: union = plain sum = 60, window [100,160] = 60.
RANK0 = [step(0, 0, 100), x("forward 0", "compute", 0, 90),
         x(GEMM, "kernel", 0, 40, 107), x(LN, "kernel", 40, 50, 107), x(GEMM, "kernel", 50, 90, 107), x(NCCL, "kernel", 60, 80, 113),
         step(1, 100, 200), x(GEMM, "kernel", 100, 140, 107), x("Memcpy HtoD", "memcpy", 140, 150, 107, bytes=4096),
         x(LN, "kernel", 150, 160, 107)]
# Rank 1, one step [0,100] the device covers completely with two layernorms: union = sum = 100.
RANK1 = [step(0, 0, 100), x(LN, "kernel", 0, 50, 107), x(LN, "kernel", 50, 100, 107)]


def write(d, ranks):
    d.mkdir()
    for rank, events in ranks.items():
        (d / f"rank-{rank}.json").write_text(json.dumps({"traceEvents": events, "distributedInfo": {"rank": rank, "world_size": len(ranks)}}))
    return d


def test_top_kernels_per_rank_and_overall(tmp_path):
    k = analyze(write(tmp_path / "t", {0: RANK0, 1: RANK1}))["kernels"]
    r0, r1 = k["per_rank"]
    # the layernorm and the all-reduce tie at 20 us: by name
    assert [g["name"] for g in r0["top"]] == [GEMM, NCCL, LN, "Memcpy HtoD"]
    gemm = r0["top"][0]
    assert (gemm["count"], gemm["total_us"], gemm["mean_us"]) == (3, 120, 40)
    assert r0["busy_us"] == 150 and r0["sum_us"] == 170  # [0,90] + [100,160]; the all-reduce under the GEMM counts once
    assert gemm["share_of_busy"] == 120 / 150
    assert [(g["name"], g["count"], g["total_us"]) for g in r1["top"]] == [(LN, 2, 100)]
    # Over all ranks: the layernorm's 20 us on rank 0 and 100 us on rank 1 tie the GEMM's 120; the name breaks the tie.
    assert [(g["name"], g["total_us"]) for g in k["top"]] == [(GEMM, 120), (LN, 120), (NCCL, 20), ("Memcpy HtoD", 10)]
    assert k["top"][1]["count"] == 4 and k["top"][1]["mean_us"] == 30
    assert k["top"][2]["share"] == 20 / 270 and k["top"][0]["category"] == "kernel" and k["top"][3]["category"] == "memcpy"


def test_step_coverage_union_against_plain_sum(tmp_path):
    k = analyze(write(tmp_path / "t", {0: RANK0, 1: RANK1}))["kernels"]
    s0, s1 = k["per_rank"][0]["steps"]
    assert (s0["step"], s0["busy_us"], s0["sum_us"], s0["window_us"]) == (0, 90, 110, 90)
    assert (s0["busy_over_step"], s0["sum_over_step"], s0["busy_over_window"]) == (0.9, 1.1, 1.0)
    assert (s1["step"], s1["busy_us"], s1["sum_us"], s1["window_us"]) == (1, 60, 60, 60)
    assert s1["busy_over_step"] == 0.6 and s1["busy_over_window"] == 1.0
    r0, r1 = k["per_rank"]
    assert r0["busy_over_step"] == 0.75 and r0["sum_over_step"] == pytest.approx(0.85) and r0["worst_busy_over_step"] == 0.6
    assert r1["busy_over_step"] == 1.0 and r1["sum_over_step"] == 1.0
    text = format_table(analyze(write(tmp_path / "u", {0: RANK0})))
    assert "# kernels (all ranks)" in text
    assert "the device is busy 75.0% of the step (plain sum of kernel times 85.0%; busy 100.0% of the device's window)" in text


def test_a_kernel_crossing_the_step_boundary_counts_only_inside(tmp_path):
    k = kernel_breakdown({0: [step(0, 0, 100), x("k", "kernel", -20, 30, 100), x("k", "kernel", 90, 150, 100)]})
    (s,) = k["per_rank"][0]["steps"]
    assert (s["busy_us"], s["window_us"]) == (40, 100)


def test_coverage_check(tmp_path):
    both = kernel_breakdown({0: RANK0, 1: RANK1})
    assert coverage_failures(both, 30) == []  # rank 0 at 75%, rank 1 at 100%
    (line,) = coverage_failures(both, 5)
    assert line.startswith("rank 0: the device was busy 75.0% of the step (median over 2 step(s); plain sum of kernel times 85.0%")
    assert coverage_failures(None, 5) and "no kernel-level spans" in coverage_failures(None, 5)[0]


def test_check_kernel_coverage_option(tmp_path, capsys):
    d = write(tmp_path / "t", {0: RANK0, 1: RANK1})
    assert main(["analyze", str(d), "--check-kernel-coverage", "5"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("trainscope: kernel coverage check failed (5%): rank 0: the device was busy 75.0%")
    assert main(["analyze", str(d), "--check-kernel-coverage", "30", "--json", str(tmp_path / "a.json")]) == 0
    assert "kernel coverage: every rank's device busy time is within 30% of its step" in capsys.readouterr().out
    assert json.loads((tmp_path / "a.json").read_text())["kernels"]["per_rank"][1]["busy_over_step"] == 1.0
    assert main(["analyze", str(d), "--check-kernel-coverage", "0"]) == 2
    cpu = write(tmp_path / "cpu", {0: [step(0, 0, 100), x("forward 0", "compute", 0, 90)]})
    assert main(["analyze", str(cpu), "--check-kernel-coverage", "5"]) == 1
    assert "no kernel-level spans" in capsys.readouterr().err


def test_no_kernel_section_on_a_cpu_trace(tmp_path):
    result = analyze(write(tmp_path / "t", {0: [step(0, 0, 100), x("forward 0", "compute", 0, 90)]}))
    assert result["kernels"] is None
    assert "# kernels" not in format_table(result)
    spans_only = analyze(write(tmp_path / "s", {0: [x("all_reduce 4 MiB", "communication", 0, 10)]}))
    assert spans_only["kernels"] is None and "# kernels" not in format_table(spans_only)


def test_a_trace_without_steps_still_gets_its_kernels(tmp_path):
    result = analyze(write(tmp_path / "t", {0: [x("kernel layernorm", "compute", 0, 100), x(LN, "kernel", 10, 60, 107)]}))
    assert result["kernels"]["top"][0]["total_us"] == 50 and result["kernels"]["per_rank"][0]["busy_over_step"] is None
    assert "# kernels (all ranks)" in format_table(result)


def kernel_record(op, shape, fraction, backend="cuda", dtype="float32"):
    return {"kind": "kernel", "op": op, "shape_name": shape, "dtype": dtype, "backend": backend,
            "roofline": {"bound": "memory", "fraction_of_ceiling": fraction}}


def test_function_names():
    assert function_name(LN) == "layernormKernel"
    assert function_name("ts::cuda::crossEntropyKernel(float*, float const*, int const*, int, int)") == "crossEntropyKernel"
    assert function_name("void ts::cuda::attentionFusedKernel<64>(float*, float const*, float const*, float const*, int, int, int, float)") == "attentionFusedKernel"
    assert function_name(GEMM) == GEMM
    assert function_name("Memcpy HtoD") == "HtoD"  # not a kernel: never looked up (only category "kernel" is matched)


def test_roofline_only_where_the_match_is_unambiguous(tmp_path):
    ce = "ts::cuda::crossEntropyKernel(float*, float const*, int const*, int, int)"
    records = [kernel_record("layernorm", "block-ln", 0.8), kernel_record("layernorm", "block-ln", 0.8, backend="cpu"),
               kernel_record("cross_entropy", "logits", 0.5), kernel_record("cross_entropy", "logits-big", 0.6),
               kernel_record("gemm", "qkv", 0.9)]
    m = roofline_matches([LN, ce, GEMM, NCCL], records)
    assert m[LN] == {"op": "layernorm", "shape_name": "block-ln", "dtype": "float32", "bound": "memory", "fraction_of_ceiling": 0.8}
    assert m[ce]["fraction_of_ceiling"] is None and m[ce]["ambiguous"] == "2 measured shape(s) with a roofline"
    assert GEMM not in m and NCCL not in m  # cuBLASLt's kernel names name no op
    result = analyze(write(tmp_path / "t", {0: RANK0}), kernel_records=records)
    rows = {g["name"]: g for g in result["kernels"]["top"]}
    assert rows[LN]["roofline"]["fraction_of_ceiling"] == 0.8 and rows[GEMM]["roofline"] is None
    assert result["kernels"]["per_rank"][0]["top"][2]["roofline"]["op"] == "layernorm"
    text = format_table(result)
    assert any(line.rstrip().endswith(LN[:100]) and " 80% " in line for line in text.splitlines())
    assert analyze(write(tmp_path / "u", {0: RANK0}))["kernels"]["top"][0]["roofline"] is None  # no kernels result: no fractions
