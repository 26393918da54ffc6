"""`trainscope kernels` on the CPU: every op checked against float64, placed on the measured roofline."""
import json

import pytest

from helpers import run_trainscope

OPS = {"gemm", "conv2d", "conv2d_bwd_data", "conv2d_bwd_filter", "attention", "layernorm", "softmax", "gelu", "cross_entropy", "adamw"}


def test_every_op_checked_and_on_the_roofline(tmp_path, validate):
    out = tmp_path / "k.json"
    r = run_trainscope(["kernels", "--backend", "cpu", "--preset", "tiny", "-n", "3", "--json", out])
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    recs = [x for x in doc["records"] if x["kind"] == "kernel"]
    ceilings = {}
    for x in doc["records"]:  # the best of each kind is the ceiling (one compute record per GEMM square)
        if x["kind"] == "kernel_ceiling":
            ceilings[x["ceiling"]] = max(ceilings.get(x["ceiling"], 0), x["value"])
    assert set(ceilings) == {"compute", "memory"} and all(v > 0 for v in ceilings.values())
    assert {x["op"] for x in recs} == OPS
    for x in recs:
        assert x["check"]["passed"] and x["check"]["max_rel_err"] <= x["check"]["tolerance"], x
        assert x["tflops"] == pytest.approx(x["flops"] / (x["time_us"]["median"] * 1e-6) / 1e12)
        roof = x["roofline"]
        assert roof["attainable_tflops"] == pytest.approx(min(ceilings["compute"], x["arithmetic_intensity"] * ceilings["memory"] / 1e3))
        assert roof["fraction_of_ceiling"] == pytest.approx(x["tflops"] / roof["attainable_tflops"])
    gemm = {x["shape_name"]: x for x in recs if x["op"] == "gemm"}
    qkv = gemm["attn.qkv"]["shape"]
    assert (qkv["M"], qkv["N"], qkv["K"]) == (2 * 64, 3 * 128, 128)  # batch*seq tokens, 3H, H of the tiny block
    assert gemm["attn.qkv"]["flops"] == 2 * qkv["M"] * qkv["N"] * qkv["K"]
    assert gemm["square 1024"]["roofline"]["bound"] == "compute" and gemm["attn.qkv"]["bytes"] == 4 * (128 * 128 + 128 * 384 + 128 * 384)
    rep = tmp_path / "rep"
    assert run_trainscope(["report", out, "-o", rep]).rc == 0
    assert (rep / "kernels_roofline.png").exists() and "Kernels against their ceiling" in (rep / "index.html").read_text()


@pytest.mark.parametrize("args,message", [
    (["--ops", "gemm,conv9"], "--ops: unknown kernel 'conv9'"),
    (["--backend", "cpu", "--dtype", "bfloat16"], "--dtype bfloat16: the CPU implementation of gemm does not run in it"),
    (["--backend", "tpu"], "--backend: 'tpu' is not auto, cpu or cuda"),
    (["--hidden", "100"], "--hidden 100 must be a positive multiple of 64"),
    (["--preset", "huge"], "--preset: unknown preset 'huge'"),
    (["--timeout", "inf"], "--timeout: inf is not a finite number"),
])
def test_bad_input(args, message, tmp_path):
    r = run_trainscope(["kernels", "--json", tmp_path / "x.json"] + args)
    assert r.rc == 2, r.err
    assert len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err
    assert not (tmp_path / "x.json").exists()


def test_shapes_file(tmp_path, validate):
    shapes = tmp_path / "shapes.toml"
    shapes.write_text('[[shape]]\nop = "gemm"\nname = "odd"\nM = 33\nN = 17\nK = 65\n\n'
                      '[[shape]]\nop = "gelu"\nn = 1001\n')
    out = tmp_path / "s.json"
    r = run_trainscope(["kernels", "--shapes", shapes, "--no-ceilings", "-n", "2", "--json", out])
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    got = [(x["op"], x["shape_name"], x["shape"]) for x in doc["records"] if x["kind"] == "kernel"]
    assert got == [("gemm", "odd", {"M": 33, "N": 17, "K": 65}), ("gelu", "custom", {"n": 1001})]
    assert all(x["roofline"] is None for x in doc["records"] if x["kind"] == "kernel")  # --no-ceilings


@pytest.mark.parametrize("text,message", [
    ('[[shape]]\nop = "gemm"\nM = 2\nN = 2\n', "shapes.toml:1: gemm needs 'K'"),
    ('[[shape]]\nop = "gemm"\nM = 2\nN = 2\nK = 2\nQ = 1\n', "shapes.toml:6: gemm has no dimension 'Q' (its dimensions: M, N, K)"),
    ('[[shape]]\nop = "fft"\n', "shapes.toml:1: --ops: unknown kernel 'fft'"),
    ('[[shape]]\nop = "gelu"\nn = -3\n', "shapes.toml:3: 'n' must be a positive integer"),
    ('[[shape]]\nop = "gelu"\nn = "big"\n', "shapes.toml:3: 'n' must be a positive integer"),
])
def test_bad_shapes_file(text, message, tmp_path):
    shapes = tmp_path / "shapes.toml"
    shapes.write_text(text)
    r = run_trainscope(["kernels", "--shapes", shapes])
    assert r.rc == 2, r.err
    assert len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err


def test_cuda_backend_without_a_gpu_is_a_clear_error():
    r = run_trainscope(["kernels", "--backend", "cuda"])
    if r.rc == 0:
        pytest.skip("this machine has a GPU: the CUDA path ran")
    assert r.rc == 2 and len(r.error_lines()) == 1
    assert "--backend cuda needs a CUDA GPU" in r.err or "built without CUDA" in r.err
