"""`trainscope accept` through the binary: a real run of the quick suite's measuring steps on this machine
(links, kernels; small), judged by the shipped rules of both bring-up suites without an input error, and the
report of it with the acceptance section; a run across two host names whose second host has a planted slow
CPU, named by accept."""
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from helpers import ROOT, base_env, run_trainscope, trainscope_path

RULES = ROOT / "bench" / "suites" / "rules"


def test_the_shipped_rules_judge_a_real_result(tmp_path):
    suite = tmp_path / "bringup.toml"
    suite.write_text('[suite]\nname = "bringup"\n\n[[step]]\nkind = "links"\nname = "links"\niters = 3\nlatency_iters = 50\n'
                     'memory_bytes = "16M"\n\n[[step]]\nkind = "kernels"\nname = "kernels"\npreset = "tiny"\niters = 2\n')
    out = tmp_path / "run.json"
    r = run_trainscope(["suite", suite, "--json", out], np=2)
    assert r.rc == 0, r.err
    # The quick rules judge one host by what needs no fleet (its GEMMs against its own roofline): a verdict,
    # whatever it is on this machine, never bad input.
    r = run_trainscope(["accept", out, "--rules", RULES / "quick.toml", "--junit", tmp_path / "quick.xml"])
    assert r.rc in (0, 1, 3) and not r.error_lines(), (r.out, r.err)
    host, verdict, counts = r.out.splitlines()[2].split()[:3]
    passed, failed, _ = map(int, counts.split("/"))
    assert verdict in ("PASS", "FAIL", "INCONCLUSIVE") and passed + failed >= 1, r.out
    assert len(ET.parse(tmp_path / "quick.xml").getroot().findall("testsuite/testcase")) == 1
    # The cluster rules read GPUs, networks and fleets: on one host without GPUs they load, then judge nothing.
    r = run_trainscope(["accept", out, "--rules", RULES / "cluster.toml"])
    assert r.rc == 2 and len(r.error_lines()) == 1 and "nothing judged" in r.err, r.err
    r = run_trainscope(["report", out, "-o", tmp_path / "rep", "--rules", RULES / "quick.toml"])
    assert r.rc == 0, r.err
    assert '<section id="acceptance">' in (tmp_path / "rep" / "index.html").read_text()


def test_every_host_measures_its_own_kernels_and_a_planted_slow_cpu_is_named(tmp_path):
    """Two ranks, each under its own host name (a UTS namespace: two nodes, as trainscope sees them), rank 1's
    ceilings planted at 0.3x (TRAINSCOPE_FAULT=ceiling:rank=1, a slow CPU). Both hosts' ceilings and kernels are in
    the result, each naming its host, and accept names fake-h1 on the compute ceiling: FAIL when contention is not
    counted (the two "nodes" share this machine's CPUs, so by default a failure there may be INCONCLUSIVE, never a
    PASS). Before, process 0 alone measured: fake-h1 had no kernels and passed."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
        pytest.skip("two host names on one machine need a UTS namespace per rank (root, unshare)")
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed")
    shapes = tmp_path / "one.toml"
    shapes.write_text('[[shape]]\nop = "gemm"\nname = "s128"\nM = 128\nN = 128\nK = 128\n')
    out = tmp_path / "two.json"
    rank = f"hostname fake-h$OMPI_COMM_WORLD_RANK && exec {trainscope_path()} kernels --ops gemm --shapes {shapes} -n 3 --json {out}"
    proc = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "-x", "TRAINSCOPE_FAULT", "sh", "-c",
                           'exec unshare -u sh -c "$0"', rank], capture_output=True, text=True, timeout=300,
                          env=base_env({"TRAINSCOPE_FAULT": "ceiling:rank=1:scale=0.3"}))
    assert proc.returncode == 0, proc.stderr
    records = json.loads(out.read_text())["records"]
    for kind in ("kernel", "kernel_ceiling"):
        assert {x["host"] for x in records if x["kind"] == kind} == {"fake-h0", "fake-h1"}, kind
    assert {x.get("planted_fault_scale") for x in records if x["kind"] == "kernel_ceiling" and x["host"] == "fake-h1"} == {0.3}
    assert "# also measured on fake-h1: compute ceiling " in proc.stdout
    rules = ROOT / "bench" / "suites" / "rules" / "quick.toml"
    r = run_trainscope(["accept", out, "--rules", rules])
    row = next(line for line in r.out.splitlines() if line.startswith("fake-h1"))
    assert r.rc in (1, 3) and row.split()[1] in ("FAIL", "INCONCLUSIVE") and "compute ceiling: " in row, r.out
    quiet = tmp_path / "quiet.toml"
    quiet.write_text("max_others_busy = 100\nmax_load_per_cpu = 1000\n")
    r = run_trainscope(["accept", out, "--rules", rules, "--policy", quiet])
    row = next(line for line in r.out.splitlines() if line.startswith("fake-h1"))
    assert r.rc == 1 and row.split()[1] == "FAIL" and "compute ceiling: " in row, r.out
