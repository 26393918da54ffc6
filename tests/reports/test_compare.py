"""compare: identity matching, verdicts with known noise, output formats, exit codes, baselines."""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

from synthetic import ROOT, make_doc, make_record, noisy

from reports.compare import compare, format_junit, format_markdown, machine_key
from reports.load import Result, load_result
from reports.significance import mann_whitney_p


def run_tool(*args):
    return subprocess.run([sys.executable, "-m", "reports", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=120)


def pair(write_doc, base_records, cand_records):
    return load_result(write_doc("base.json", make_doc(base_records))), load_result(write_doc("cand.json", make_doc(cand_records)))


def test_mann_whitney_against_known_values():
    # Disjoint samples of 10 and 10: U = 0, exact two-sided p = 1.08e-5; the normal approximation with
    # continuity correction gives 1.8e-4 (what scipy.stats.mannwhitneyu(method="asymptotic") reports).
    p = mann_whitney_p(list(range(10)), list(range(10, 20)))
    assert abs(p - 1.8267e-4) < 2e-6
    assert mann_whitney_p([1.0] * 10, [1.0] * 10) == 1.0
    assert mann_whitney_p([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]) > 0.5


def test_records_match_by_identity_not_order(write_doc):
    base = [make_record("all_reduce", 1024), make_record("all_gather", 1024), make_record("all_reduce", 2048)]
    cand = [make_record("all_reduce", 2048), make_record("all_reduce", 1024), make_record("broadcast", 1024)]
    cmp = compare(*pair(write_doc, base, cand))
    assert sorted(r.identity for r in cmp.rows) == ["all_reduce mpi float32 sum 1024 B 2 ranks out-of-place",
                                                    "all_reduce mpi float32 sum 2048 B 2 ranks out-of-place"]
    assert cmp.only_in_baseline == ["all_gather mpi float32 1024 B 2 ranks out-of-place"]
    assert cmp.only_in_candidate == ["broadcast mpi float32 1024 B 2 ranks out-of-place"]


def test_same_distribution_is_no_regression(write_doc):
    cmp = compare(*pair(write_doc, [make_record(samples=noisy(100, 3, seed=1))], [make_record(samples=noisy(100, 3, seed=2))]))
    assert cmp.rows[0].verdict == "unchanged" and not cmp.regressions


def test_clear_slowdown_is_a_regression(write_doc):
    cmp = compare(*pair(write_doc, [make_record(samples=noisy(100, 2, seed=1))], [make_record(samples=noisy(112, 2, seed=2))]))
    r = cmp.rows[0]
    assert r.verdict == "regression" and r.method == "mann-whitney" and r.p_value < 1e-6
    assert 0.09 < r.change < 0.15
    assert r.others[0].metric == "busbw_gbps" and r.others[0].change < 0  # bandwidth fell with it


def test_clear_speedup_is_an_improvement(write_doc):
    cmp = compare(*pair(write_doc, [make_record(samples=noisy(100, 2, seed=1))], [make_record(samples=noisy(85, 2, seed=2))]))
    assert cmp.rows[0].verdict == "improvement"


def test_change_below_threshold_is_unchanged(write_doc):
    cmp = compare(*pair(write_doc, [make_record(samples=noisy(100, 0.5, seed=1))], [make_record(samples=noisy(103, 0.5, seed=2))]))
    assert cmp.rows[0].verdict == "unchanged"  # significant, but 3% < 5%


def test_change_inside_the_noise_is_not_a_regression(write_doc):
    # Large spread and few samples: +8% but not distinguishable from noise.
    cmp = compare(*pair(write_doc, [make_record(samples=noisy(100, 40, n=6, seed=3))], [make_record(samples=noisy(108, 40, n=6, seed=4))]))
    assert cmp.rows[0].verdict == "within noise"


def test_trial_spread_guards_against_drift_between_runs(write_doc):
    # The baseline's three trials drift from 100 to 120 (median 110): a candidate 10% slower (121) is
    # significant by Mann-Whitney but inside the run-to-run noise the baseline itself measured.
    drift = noisy(100, 1, n=10, seed=1) + noisy(110, 1, n=10, seed=2) + noisy(120, 1, n=10, seed=3)
    cand = noisy(121, 1, n=30, seed=4)
    cmp = compare(*pair(write_doc, [make_record(samples=drift, trials=3)], [make_record(samples=cand, trials=3)]))
    r = cmp.rows[0]
    assert r.verdict == "within noise" and r.method == "mann-whitney+trials" and r.p_value < 0.01 and 0.08 < r.change < 0.12
    # Without the drift, the same candidate is a regression.
    steady = noisy(110, 1, n=30, seed=5)
    assert compare(*pair(write_doc, [make_record(samples=steady, trials=3)], [make_record(samples=cand, trials=3)])).rows[0].verdict == "regression"


def test_without_samples_the_stdev_decides():
    b, c = make_record(samples=noisy(100, 1, seed=1)), make_record(samples=noisy(120, 1, seed=2))
    b.pop("samples_us")
    c.pop("samples_us")
    # The schema requires samples of collectives; records of kinds without them take this path.
    cmp = compare(Result("b", make_doc([b]), "b", [b]), Result("c", make_doc([c]), "c", [c]))
    assert cmp.rows[0].verdict == "regression" and cmp.rows[0].method == "stdev"


def test_outputs_and_exit_codes(write_doc, tmp_path):
    base = write_doc("base.json", make_doc([make_record(nbytes=1024, samples=noisy(10, 0.2, seed=1)),
                                            make_record(nbytes=2048, samples=noisy(20, 0.2, seed=2))]))
    same = write_doc("same.json", make_doc([make_record(nbytes=1024, samples=noisy(10, 0.2, seed=3)),
                                            make_record(nbytes=2048, samples=noisy(20, 0.2, seed=4))]))
    slow = write_doc("slow.json", make_doc([make_record(nbytes=1024, samples=noisy(10, 0.2, seed=5)),
                                            make_record(nbytes=2048, samples=noisy(30, 0.2, seed=6))]))
    r = run_tool("compare", base, same)
    assert r.returncode == 0, r.stderr
    md, junit, js = tmp_path / "s.md", tmp_path / "j.xml", tmp_path / "c.json"
    r = run_tool("compare", base, slow, "--markdown", md, "--junit", junit, "--json", js)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[3].startswith("regression") and "2048 B" in lines[3]  # regressions first
    assert "**regression**" in md.read_text() and "2048 B" in md.read_text()
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    assert [c.get("name") for c in suite if c.find("failure") is not None] == ["all_reduce mpi float32 sum 2048 B 2 ranks out-of-place"]
    assert json.loads(js.read_text())["regressions"] == 1
    assert run_tool("compare", base).returncode == 2
    assert run_tool("compare", base, tmp_path / "absent.json").returncode == 2
    assert run_tool("compare", base, slow, "--threshold", "-1").returncode == 2
    other = write_doc("other.json", make_doc([make_record(op="all_gather", nbytes=1024)]))
    r = run_tool("compare", base, other)
    assert r.returncode == 2 and "nothing to compare" in r.stderr and "only in the candidate" in r.stdout


def test_baseline_directory_per_machine(write_doc, tmp_path):
    cand = write_doc("cand.json", make_doc([make_record(samples=noisy(10, 0.2, seed=1))]))
    bdir = tmp_path / "baselines"
    r = run_tool("compare", "--baseline-dir", bdir, cand)
    assert r.returncode == 2 and "--save-baseline" in r.stderr
    assert run_tool("compare", "--baseline-dir", bdir, cand, "--save-baseline").returncode == 0
    key = machine_key(load_result(cand))
    assert key == "mpi-2x-Test_CPU" and (bdir / f"{key}.json").exists()
    assert run_tool("compare", "--baseline-dir", bdir, cand).returncode == 0
    r = run_tool("compare", cand, cand, "--save-baseline")
    assert r.returncode == 2 and "--save-baseline needs --baseline-dir" in r.stderr


def test_markdown_and_junit_escape_hostile_text(write_doc):
    rec = make_record(samples=noisy(10, 0.1, seed=1))
    slow = make_record(samples=noisy(20, 0.1, seed=2))
    rec["op"] = slow["op"] = "all_reduce"
    cmp = compare(*pair(write_doc, [rec], [slow]))
    cmp.rows[0].identity = "x</failure><script>|"
    ET.fromstring(format_junit(cmp))  # still well-formed XML
    assert "<script>" not in format_markdown(cmp)


def test_kernel_records_match_by_op_shape_and_backend(write_doc):
    """Kernel records carry their shape as a mapping; identity must hash it and tell shapes apart."""
    def kernel(shape_name, dims, median):
        rec = make_record(samples=noisy(median, 0.1, seed=int(median)))
        samples, stats_ = rec["samples_us"], rec["time_us"]
        return {"kind": "kernel", "op": "gemm", "shape_name": shape_name, "shape": dims, "dtype": "float32", "backend": "cpu",
                "flops": 2.0 * dims["M"] * dims["N"] * dims["K"], "bytes": 4.0, "time_us": stats_, "samples_us": samples,
                "tflops": 1.0, "gbps": 1.0, "arithmetic_intensity": 1.0, "roofline": None,
                "check": {"performed": True, "passed": True, "max_rel_err": 0.0, "tolerance": 1e-5}}
    base = [kernel("qkv", {"M": 8, "N": 24, "K": 8}, 10.0), kernel("proj", {"M": 8, "N": 8, "K": 8}, 5.0)]
    cand = [kernel("qkv", {"M": 8, "N": 24, "K": 8}, 20.0), kernel("proj", {"M": 8, "N": 8, "K": 16}, 5.0)]
    cmp = compare(*pair(write_doc, base, cand))
    assert [r.identity for r in cmp.rows] == ["gemm qkv (K=8 M=8 N=24) float32 cpu"]
    assert cmp.rows[0].verdict == "regression" and cmp.rows[0].others[0].metric == "tflops"
    assert cmp.only_in_baseline == ["gemm proj (K=8 M=8 N=8) float32 cpu"]
    assert cmp.only_in_candidate == ["gemm proj (K=16 M=8 N=8) float32 cpu"]
