"""`trainscope accept` through the binary: a real run of the quick suite's measuring steps on this machine
(links, kernels; small), judged by the shipped rules of both bring-up suites without an input error, and the
report of it with the acceptance section."""
import xml.etree.ElementTree as ET

from helpers import ROOT, run_trainscope

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
    assert r.rc in (0, 1) and not r.error_lines(), (r.out, r.err)
    host, verdict, counts = r.out.splitlines()[2].split()[:3]
    passed, failed, _ = map(int, counts.split("/"))
    assert verdict in ("PASS", "FAIL") and passed + failed >= 1, r.out
    assert len(ET.parse(tmp_path / "quick.xml").getroot().findall("testsuite/testcase")) == 1
    # The cluster rules read GPUs, networks and fleets: on one host without GPUs they load, then judge nothing.
    r = run_trainscope(["accept", out, "--rules", RULES / "cluster.toml"])
    assert r.rc == 2 and len(r.error_lines()) == 1 and "nothing judged" in r.err, r.err
    r = run_trainscope(["report", out, "-o", tmp_path / "rep", "--rules", RULES / "quick.toml"])
    assert r.rc == 0, r.err
    assert '<section id="acceptance">' in (tmp_path / "rep" / "index.html").read_text()
