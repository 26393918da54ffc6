"""The kernels and training sections on ceilings: a record above 100% of its ceiling after the re-measure is called
out (an alert naming it and its likely cause, ! in its row), the ceilings table says how each was measured, MFU names
its peaks; results from before the memory levels and the named peaks still render."""
import subprocess
import sys

from synthetic import ROOT, make_ceiling, make_doc, make_kernel, make_train, stats


def report_html(write_doc, tmp_path, doc, name):
    out = tmp_path / name
    r = subprocess.run([sys.executable, "-m", "reports", "report", write_doc(f"{name}.json", doc), "-o", out], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return (out / "index.html").read_text()


CEILINGS = [make_ceiling("compute", 0.2), make_ceiling("memory", 120.0, "l2"), make_ceiling("memory", 25.0, "dram"),
            make_ceiling("compute", 0.21, recheck_of="gemm attn.values", others_cpu_fraction=0.45)]


def test_a_suspect_kernel_is_called_out(write_doc, tmp_path, validate):
    doc = make_doc(CEILINGS + [
        make_kernel("gemm", "attn.qkv", 0.12, 50, 0.21, 120.0, "l2"),
        make_kernel("gemm", "attn.values", 0.26, 40, 0.21, 120.0, "l2", suspect=True, cause="busy_host", rechecked="compute"),
        make_kernel("layernorm", "block.ln", 0.004, 1.0, 0.2, 120.0, "l2"),
    ])
    validate(doc)
    html = report_html(write_doc, tmp_path, doc, "suspect")
    assert "1 kernel record(s) above 100% of their ceiling even after it was re-measured" in html
    assert "gemm attn.values (124%): likely cause: other processes took a good share of the CPUs" in html
    assert "124% !</td>" in html and html.count(" !</td>") == 1 and "57%</td>" in html
    assert "memory (L2)" in html  # the layernorm's bound names its level
    assert "The ceilings as measured" in html and "best of 5 after 2 warm-up" in html and "45%" in html and "gemm attn.values</td>" in html


def test_no_alert_when_every_kernel_is_under_its_ceiling(write_doc, tmp_path, validate):
    doc = make_doc(CEILINGS[:3] + [make_kernel("gemm", "attn.qkv", 0.12, 50, 0.2, 120.0, "l2")])
    validate(doc)
    html = report_html(write_doc, tmp_path, doc, "fine")
    assert "above 100% of their ceiling" not in html and " !</td>" not in html


def test_results_from_before_the_levels_still_render(write_doc, tmp_path, validate):
    old_ceilings = [{k: v for k, v in c.items() if k not in ("warmup", "trials", "others_cpu_fraction", "level", "working_set_bytes", "capacity_bytes")}
                    for c in CEILINGS[:3]]
    old = make_kernel("gemm", "attn.qkv", 0.12, 50, 0.2, 25.0)
    del old["ceiling_suspect"], old["roofline"]["memory_level"], old["roofline"]["rechecked_ceiling"]
    doc = make_doc(old_ceilings + [old])
    validate(doc)
    html = report_html(write_doc, tmp_path, doc, "old")
    assert "Kernels against their ceiling" in html and "best of 5</td>" in html


def test_mfu_names_its_peaks_and_flags_the_impossible(write_doc, tmp_path, validate):
    measured = {"tflops": 400.0, "precision": "bfloat16", "source": "cuBLASLt gemm square 8192 bfloat16, best of 5 after 2 warm-up, re-measured once",
                "clock_mhz": 1755.0, "mfu": 1.25, "rechecked": True, "ceiling_suspect": True, "ceiling_suspect_cause": "unexplained"}
    datasheet = {"entry": "H100 SXM5", "precision": "bfloat16", "datasheet_tflops": 989.4, "boost_clock_mhz": 1980.0, "clock_mhz": 1755.0,
                 "tflops": 877.0, "mfu": 500 / 877.0, "ceiling_suspect": False}
    mfu = {"measured_ceiling_tflops": 400.0, "vs_measured": 1.25, "datasheet_peak_tflops": 877.0, "datasheet_gpu": "H100 SXM5",
           "vs_datasheet": 500 / 877.0, "clock_mhz": 1755.0, "measured": measured, "datasheet": datasheet, "ceiling_suspect": True}
    doc = make_doc([make_train(mfu)])
    validate(doc)
    html = report_html(write_doc, tmp_path, doc, "mfu")
    assert "MFU above 100% of its peak (ceiling_suspect" in html and "125.0% of the measured GEMM ceiling after re-measuring it" in html
    assert "125.0% !</td>" in html and "57.0%</td>" in html
    assert "measured: 400 TFLOP/s bfloat16" in html and "datasheet: H100 SXM5 bfloat16 989.4 TFLOP/s at 1980 MHz, 877 at 1755 MHz" in html
    # A record from before the peaks were named: its flat fields only.
    flat = {k: mfu[k] for k in ("measured_ceiling_tflops", "datasheet_peak_tflops", "datasheet_gpu", "vs_datasheet", "clock_mhz")}
    flat["vs_measured"] = 0.5
    doc = make_doc([make_train(flat)])
    validate(doc)
    html = report_html(write_doc, tmp_path, doc, "flat")
    assert "MFU above 100% of its peak (ceiling_suspect" not in html and "50.0%</td>" in html and "measured: 400 TFLOP/s; datasheet: H100 SXM5 877 TFLOP/s" in html
