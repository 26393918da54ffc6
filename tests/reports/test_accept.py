"""accept: node acceptance verdicts per host against a rules file — the slow host fails with the rule and the
values, the others pass; each kind of limit at its boundary both ways; what no rule can judge is "not
measured"; hostile rules files are one line and exit 2; JUnit has a test case per host; the report shows the
section and puts the failures in its status banner; the shipped rules parse and find their suites' records."""
import xml.etree.ElementTree as ET

import pytest
from synthetic import ROOT, make_ceiling, make_fleet_doc, make_kernel, make_link, make_train, telemetry

from reports.__main__ import main
from reports.accept.accept import Verdict, accept
from reports.common.load import load_result
from reports.html.sections.kernels import ceilings as kernel_ceilings
from reports.accept.rules import from_toml, shipped

FLEET = {"node-a": [0], "node-b": [1], "node-c": [2], "node-d": [3]}
TRIAD = '[[rule]]\nname = "triad"\nmetric = "link.bandwidth_gbps"\nwhere = { test = "host_memory_triad" }\n'


def triad(host, bw):
    rec = make_link("host_memory_triad", host, host, engine="cpu", bw=bw, host=host)
    rec["bandwidth_gbps"], rec["bytes"] = bw, 1 << 30  # exactly as given; the same test on every host
    rec.update(processes=1, threads_per_process=1, array_bytes=1 << 28)
    return rec


def latency(src, dst, us):
    rec = make_link("mpi_latency", f"rank {src}", f"rank {dst}", engine="mpi", latency=us,
                    src_host=f"node-{'abcd'[src]}", dst_host=f"node-{'abcd'[dst]}")
    del rec["host"]  # a pair names its two hosts
    return rec


def h2d(host, bw, peak):
    rec = make_link("h2d", "host", "cuda:0", bw=bw, host=host, peak=peak, memory="pinned")
    rec["bandwidth_gbps"], rec["link"]["fraction_of_peak"], rec["bytes"] = bw, bw / peak, 1 << 28
    return rec


@pytest.fixture
def judge(tmp_path, write_doc):
    """accept() of a fleet result holding `records`, against the rules text."""
    def run(rules_text, records, fleet=FLEET):
        (tmp_path / "rules.toml").write_text(rules_text)
        return accept([load_result(write_doc("fleet.json", make_fleet_doc(records, fleet)))],
                      from_toml(tmp_path / "rules.toml"))
    return run


def verdicts(acc):
    return {h.host: h.verdict for h in acc.hosts}


def test_the_slow_host_fails_with_the_rule_and_its_values_the_others_pass(judge):
    acc = judge(TRIAD + "min_fraction_of_median = 0.8\n", [triad("node-a", 10), triad("node-b", 11), triad("node-c", 10),
                                                           triad("node-d", 6)])
    assert verdicts(acc) == {"node-a": Verdict.PASS, "node-b": Verdict.PASS, "node-c": Verdict.PASS, "node-d": Verdict.FAIL}
    (fail,) = next(h for h in acc.hosts if h.host == "node-d").failures()
    # The fleet median of 6, 10, 10, 11 is 10; the limit 0.8 of it.
    assert (fail.rule, fail.value, fail.limit) == ("triad", 6, pytest.approx(8.0))
    assert "6 GB/s < 0.8 x fleet median 10 GB/s = 8 GB/s" in fail.text
    assert acc.exit_code == 1


@pytest.mark.parametrize("limit, records, host_passes", [
    # fraction of the fleet median: median 10 (of 10, 10, 10 and the host), limit 0.5 x 10 = 5
    ("min_fraction_of_median = 0.5", lambda v: [triad("node-a", 10), triad("node-b", 10), triad("node-c", 10),
                                                triad("node-d", v)], {5.0: True, 4.99: False}),
    # an absolute floor of 5 GB/s
    ("min = 5", lambda v: [triad("node-a", 10), triad("node-d", v)], {5.0: True, 4.99: False}),
])
def test_floors_hold_at_the_boundary_both_ways(judge, limit, records, host_passes):
    for value, passes in host_passes.items():
        acc = judge(TRIAD + limit + "\n", records(value))
        assert verdicts(acc)["node-d"] == (Verdict.PASS if passes else Verdict.FAIL), (limit, value)
        assert verdicts(acc)["node-a"] == Verdict.PASS


@pytest.mark.parametrize("bw, passes", [(16.0, True), (15.99, False)])
def test_fraction_of_the_records_peak_at_the_boundary_both_ways(judge, bw, passes):
    rules = '[[rule]]\nname = "pcie"\nmetric = "link.bandwidth_gbps"\nwhere = { test = "h2d" }\nmin_fraction_of_peak = 0.5\n'
    acc = judge(rules, [h2d("node-a", 30.0, 32.0), h2d("node-d", bw, 32.0)])
    assert verdicts(acc)["node-d"] == (Verdict.PASS if passes else Verdict.FAIL)
    if not passes:
        (fail,) = next(h for h in acc.hosts if h.host == "node-d").failures()
        assert (fail.value, fail.limit, fail.text) == (pytest.approx(15.99 / 32), 0.5, "15.99 GB/s = 0.4997 of peak < 0.5")


@pytest.mark.parametrize("us, passes", [(3.0, True), (3.01, False)])
def test_a_latency_takes_a_ceiling_of_its_median_and_a_pair_counts_for_both_its_hosts(judge, us, passes):
    """Pairs a-b, a-c, b-c at 2 us; c-d at `us`: d's only pair decides it; c's value is the median of its
    pairs (2, 2, us) so one slow peer does not fail it. Host values 2, 2, 2, us: median 2, limit 1.5 x 2."""
    rules = '[[rule]]\nname = "lat"\nmetric = "link.latency_us"\nmax_fraction_of_median = 1.5\n'
    acc = judge(rules, [latency(0, 1, 2.0), latency(0, 2, 2.0), latency(1, 2, 2.0), latency(2, 3, us)])
    assert verdicts(acc) == {"node-a": Verdict.PASS, "node-b": Verdict.PASS, "node-c": Verdict.PASS,
                             "node-d": Verdict.PASS if passes else Verdict.FAIL}


def test_what_no_rule_can_judge_is_not_measured(judge):
    rules = (TRIAD + "min_fraction_of_median = 0.8\n"
             '[[rule]]\nname = "pcie"\nmetric = "link.bandwidth_gbps"\nwhere = { test = "h2d" }\nmin_fraction_of_peak = 0.5\n')
    # node-c measured no triad; nobody measured h2d
    acc = judge(rules, [triad("node-a", 10), triad("node-b", 10), triad("node-d", 10)])
    assert verdicts(acc) == {"node-a": Verdict.PASS, "node-b": Verdict.PASS, "node-c": Verdict.NOT_MEASURED,
                             "node-d": Verdict.PASS}
    assert acc.unmeasured == ["pcie"] and acc.exit_code == 0
    assert next(h for h in acc.hosts if h.host == "node-a").not_measured == ["pcie"]


def test_one_host_is_no_fleet(judge):
    acc = judge(TRIAD + "min_fraction_of_median = 0.8\n", [triad("node-a", 10)], fleet={"node-a": [0, 1]})
    assert acc.judged_nothing and verdicts(acc) == {"node-a": Verdict.NOT_MEASURED}


def test_per_rank_figures_map_to_hosts_through_ranks_by_host(judge):
    train = make_train(world_size=4, ranks=[{"rank": r, "dp_rank": r, "tp_rank": 0, "pp_rank": 0, "step_us": 300.0,
                                             "compute_us": 100.0 if r != 3 else 200.0, "communication_us": 1.0,
                                             "exposed_communication_us": 1.0} for r in range(4)])
    acc = judge('[[rule]]\nname = "compute"\nmetric = "train.rank_compute_us"\nmax_fraction_of_median = 1.3\n', [train],
                fleet={"node-a": [0, 1], "node-b": [2, 3]})
    # node-b's ranks: 100 and 200, its value their median 150; the fleet's median (100, 150) is 125; 1.3 x = 162.5
    assert verdicts(acc) == {"node-a": Verdict.PASS, "node-b": Verdict.PASS}
    train["ranks"][2]["compute_us"] = 200.0
    acc = judge('[[rule]]\nname = "compute"\nmetric = "train.rank_compute_us"\nmax_fraction_of_median = 1.3\n', [train],
                fleet={"node-a": [0, 1], "node-b": [2, 3]})
    assert verdicts(acc) == {"node-a": Verdict.PASS, "node-b": Verdict.FAIL}


def test_the_command_prints_a_row_per_host_and_writes_junit(tmp_path, write_doc, capsys):
    doc = write_doc("fleet.json", make_fleet_doc([triad("node-a", 10), triad("node-b", 10), triad("node-c", 10),
                                                  triad("node-d", 6)], FLEET))
    (tmp_path / "r.toml").write_text(TRIAD + "min_fraction_of_median = 0.8\n")
    assert main(["accept", str(doc), "--rules", str(tmp_path / "r.toml"), "--junit", str(tmp_path / "a.xml")]) == 1
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line for line in out if line.startswith("node-")}
    assert rows["node-d"].split()[1] == "FAIL" and "triad: 6 GB/s < 0.8 x fleet median 10 GB/s" in rows["node-d"]
    assert all(rows[h].split()[1] == "PASS" for h in ("node-a", "node-b", "node-c"))
    assert out[-1].startswith("verdict: FAIL — 1 of 4 host(s) fail: node-d")
    suite = ET.parse(tmp_path / "a.xml").getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert sorted(cases) == sorted(FLEET) and suite.get("tests") == "4" and suite.get("failures") == "1"
    assert "triad: 6 GB/s" in cases["node-d"].find("failure").get("message")
    assert all(cases[h].find("failure") is None for h in ("node-a", "node-b", "node-c"))


def test_all_pass_exits_0_and_a_hostile_host_name_stays_well_formed_xml(tmp_path, write_doc):
    evil = 'x"</testcase><script>'
    doc = write_doc("fleet.json", make_fleet_doc([triad("node-a", 10), triad(evil, 4)], {"node-a": [0], evil: [1]}))
    (tmp_path / "r.toml").write_text(TRIAD + "min = 5\n")
    assert main(["accept", str(doc), "--rules", str(tmp_path / "r.toml"), "--junit", str(tmp_path / "a.xml")]) == 1
    names = [c.get("name") for c in ET.parse(tmp_path / "a.xml").getroot().iter("testcase")]
    assert names == ["node-a", evil]
    (tmp_path / "r.toml").write_text(TRIAD + "min = 4\n")
    assert main(["accept", str(doc), "--rules", str(tmp_path / "r.toml")]) == 0


@pytest.mark.parametrize("text, said", [
    ('[[rule]]\nname = "x"\nmetric = "link.bandwidth"\nmin = 1\n', "no metric 'link.bandwidth'"),
    ('[[rule]]\nname = "x"\nmetric = "gpu.flops"\nmin = 1\n', "no metric 'gpu.flops'"),
    (TRIAD + "min = nan\n", "min: nan is not a finite number"),
    (TRIAD + "min = inf\n", "min: inf is not a finite number"),
    (TRIAD + "min_fraction_of_median = -0.5\n", "min_fraction_of_median: -0.5 is out of range"),
    (TRIAD + "min_fraction_of_median = 1.5\n", "min_fraction_of_median: 1.5 is out of range"),
    (TRIAD + 'min = "5"\n', "min: '5' is not a finite number"),
    (TRIAD + "min = 1\nmin = 2\n", "not TOML"),
    ("[[rule]\nname =", "not TOML"),
    (TRIAD + "max = 1\n", "link.bandwidth_gbps is better higher: it takes min, min_fraction_of_median, min_fraction_of_peak"),
    ('[[rule]]\nname = "x"\nmetric = "link.latency_us"\nmin_fraction_of_peak = 0.5\n', "is better lower"),
    ('[[rule]]\nname = "x"\nmetric = "kernel_ceiling.value"\nmin_fraction_of_peak = 0.5\n', "records carry no peak"),
    (TRIAD, "no limit"),
    ('[[rule]]\nname = "x"\nmetric = "link.bandwidth_gbps"\nwhere = { test = "host_memory_triads" }\nmin = 1\n',
     "'host_memory_triads' is not a value a link record's test can have"),
    ('[[rule]]\nname = "x"\nmetric = "link.bandwidth_gbps"\nwhere = { tset = "h2d" }\nmin = 1\n',
     "link records are not selected by 'tset'"),
    ('[[rule]]\nname = "x"\nmetric = "link.bandwidth_gbps"\nwhere = { test = [] }\nmin = 1\n', "an empty list selects nothing"),
    (TRIAD + "min = 1\nmni = 2\n", "unknown key 'mni'"),
    (TRIAD + "min = 1\n" + TRIAD + "min = 2\n", "two rules are named 'triad'"),
    ('threshold = 5\n', "unknown key 'threshold'"),
    ('', "no [[rule]] table"),
    ('[[rule]]\nname = 5\nmetric = "link.bandwidth_gbps"\nmin = 1\n', "5 is not a name"),
    ('[[rule]]\nmetric = "link.bandwidth_gbps"\nmin = 1\n', "no 'name'"),
])
def test_a_hostile_rules_file_is_one_line_and_exit_2(tmp_path, write_doc, capsys, text, said):
    doc = write_doc("fleet.json", make_fleet_doc([triad("node-a", 10)], FLEET))
    (tmp_path / "r.toml").write_text(text)
    assert main(["accept", str(doc), "--rules", str(tmp_path / "r.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trainscope: error: ") and said in err, err


@pytest.mark.parametrize("rules", ["missing.toml", "."])
def test_an_unreadable_rules_file_is_one_line(tmp_path, write_doc, capsys, rules):
    doc = write_doc("fleet.json", make_fleet_doc([triad("node-a", 10)], FLEET))
    assert main(["accept", str(doc), "--rules", str(tmp_path / rules)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_rules_that_judge_nothing_or_no_rules_at_all_are_bad_input(tmp_path, write_doc, capsys):
    doc = write_doc("fleet.json", make_fleet_doc([triad("node-a", 10)], FLEET))
    (tmp_path / "r.toml").write_text('[[rule]]\nname = "pcie"\nmetric = "link.bandwidth_gbps"\nwhere = { test = "h2d" }\n'
                                     "min_fraction_of_peak = 0.5\n")
    assert main(["accept", str(doc), "--rules", str(tmp_path / "r.toml")]) == 2
    assert "nothing judged" in capsys.readouterr().err
    assert main(["accept", str(doc)]) == 2  # not a suite's result, so no default rules
    assert "no --rules given" in capsys.readouterr().err


def test_a_shipped_suites_result_gets_its_default_rules(write_doc, capsys):
    doc = write_doc("fleet.json", make_fleet_doc([triad("node-a", 10), triad("node-b", 10), triad("node-c", 4)],
                                                 {"node-a": [0], "node-b": [1], "node-c": [2]}, suite="quick"))
    assert main(["accept", str(doc)]) == 1
    out = capsys.readouterr().out
    assert "(the default of suite quick)" in out and "host memory triad: 4 GB/s < 0.8 x fleet median 10 GB/s" in out


def test_the_report_shows_the_acceptance_and_its_failures_in_the_banner(tmp_path, write_doc):
    doc = write_doc("fleet.json", make_fleet_doc([triad("node-a", 10), triad("node-b", 10), triad("node-c", 10),
                                                  triad("node-d", 6)], FLEET))
    (tmp_path / "r.toml").write_text(TRIAD + "min_fraction_of_median = 0.8\n")
    assert main(["report", str(doc), "-o", str(tmp_path / "rep"), "--rules", str(tmp_path / "r.toml")]) == 0
    html = (tmp_path / "rep" / "index.html").read_text()
    banner = html[html.index('id="status"'):html.index("</div>", html.index('id="status"'))]
    assert 'href="#acceptance">Node acceptance</a>: node-d FAILS acceptance: triad: 6 GB/s &lt; 0.8 x fleet median' in banner
    assert '<section id="acceptance">' in html and "<caption>Node acceptance per host</caption>" in html
    assert "<td>node-a</td><td>PASS</td>" in html and "<td>node-d</td><td>FAIL</td>" in html
    assert "node-d FAILS acceptance" in (tmp_path / "rep" / "summary.md").read_text()
    # without --rules and not a suite's result: no section
    assert main(["report", str(doc), "-o", str(tmp_path / "plain")]) == 0
    assert 'id="acceptance"' not in (tmp_path / "plain" / "index.html").read_text()


def test_the_shipped_rules_parse_and_address_what_their_suites_record():
    """Every shipped rules file parses, and every rule selects a record of the kind its suite's steps make
    (a quick-suite result from a real run is judged in tests/integration/test_accept_cli.py)."""
    files = {f.stem: f for f in shipped()}
    assert {"quick", "cluster"} <= set(files)
    steps = {name: {line.split('"')[1] for line in (ROOT / "bench" / "suites" / f"{name}.toml").read_text().splitlines()
                    if line.startswith("kind = ")} for name in files}
    makes = {"link": "links", "kernel": "kernels", "kernel_ceiling": "kernels", "train": "train", "collective": "collectives"}
    for name, f in files.items():
        for rule in from_toml(f).rules:  # telemetry: every run samples it, whatever its steps
            assert rule.metric.kind == "telemetry" or makes[rule.metric.kind] in steps[name], (name, rule.name)



# Issue #35: acceptance right on a healthy, a busy and a degraded host, on every host of a multi-node run, and
# against a reference when much of the fleet is degraded alike. Every figure is planted: none depends on this
# machine's speed.
QUICK_RULES = ROOT / "bench" / "suites" / "rules" / "quick.toml"
GEMM_SHAPES = [f"shape{i}" for i in range(19)]


def gemms(host, fractions):
    """The quick suite's 19 GEMM shapes on `host`, each at the fraction of its roofline given."""
    out = []
    for name, f in zip(GEMM_SHAPES, fractions):
        rec = make_kernel("gemm", name, 0.2 * f, 100.0, 0.2, 20.0)
        rec["host"] = host
        out.append(rec)
    return out


def ceiling(host, tflops, **extra):
    return make_ceiling("compute", tflops, host=host, **extra)


def quick_accept(write_doc, records, fleet, reference=None, name="q.json"):
    doc = write_doc(name, make_fleet_doc(records, fleet, suite="quick"))
    ref = [load_result(write_doc("ref.json", make_fleet_doc(reference, {"good": [0]}, suite="quick")))] if reference else []
    return accept([load_result(doc)], from_toml(QUICK_RULES), ref)


HEALTHY = [0.2785] + [0.45 + 0.02 * i for i in range(18)]  # one 128^3 GEMM timed slow, as on the 2-core VM
DEGRADED = [0.12 + 0.01 * i for i in range(19)]            # most shapes far under their roofline


def test_a_healthy_host_with_one_slow_shape_passes_the_quick_rules(write_doc):
    acc = quick_accept(write_doc, gemms("vm", HEALTHY) + [ceiling("vm", 0.2)], {"vm": [0, 1]})
    (h,) = acc.hosts
    assert h.verdict == Verdict.PASS and "GEMM roofline" in h.passed and acc.exit_code == 0, h


def test_a_degraded_host_fails_on_the_median_of_its_shapes(write_doc):
    acc = quick_accept(write_doc, gemms("vm", DEGRADED) + [ceiling("vm", 0.2)], {"vm": [0, 1]})
    (h,) = acc.hosts
    (fail,) = h.failures()
    assert h.verdict == Verdict.FAIL and acc.exit_code == 1
    assert fail.rule == "GEMM roofline" and fail.value == pytest.approx(0.21) and fail.limit == 0.3
    assert fail.text == "median of 19: 0.21 of peak < 0.3 (worst 0.12 [shape_name=shape0])"


@pytest.mark.parametrize("where", ["telemetry", "records"])
def test_a_degraded_host_that_was_busy_is_inconclusive_naming_why(write_doc, capsys, where):
    records = gemms("vm", DEGRADED) + [ceiling("vm", 0.2)]
    if where == "telemetry":
        records.append(telemetry("vm", others=0.73))
    else:  # no telemetry: the kernels step's own share of the CPUs others took
        for rec in records:
            rec["others_cpu_fraction"] = 0.73
    acc = quick_accept(write_doc, records, {"vm": [0, 1]})
    (h,) = acc.hosts
    assert h.verdict == Verdict.INCONCLUSIVE and acc.exit_code == 3
    assert h.busy and all("other processes used 73% of vm's CPUs" in b for b in h.busy), h.busy
    doc = write_doc("busy.json", make_fleet_doc(records, {"vm": [0, 1]}, suite="quick"))
    junit = doc.parent / f"busy-{where}.xml"
    assert main(["accept", str(doc), "--junit", str(junit)]) == 3
    out = capsys.readouterr().out
    assert "vm    INCONCLUSIVE" in out and "busy: other processes used 73% of vm's CPUs" in out
    assert out.splitlines()[-1].startswith("verdict: INCONCLUSIVE — 1 of 1 host(s) failed a rule while busy"), out
    (case,) = ET.parse(junit).getroot().iter("testcase")
    assert "inconclusive: measured while busy" in case.find("skipped").get("message")
    # the report's banner names it (the section's alert)
    assert main(["report", str(doc), "-o", str(doc.parent / f"rep-{where}")]) == 0
    assert "vm: acceptance INCONCLUSIVE, measured while busy" in (doc.parent / f"rep-{where}" / "summary.md").read_text()
    # a policy that counts no contention: the same figures FAIL
    (doc.parent / "lax.toml").write_text("max_others_busy = 100\n")
    assert main(["accept", str(doc), "--policy", str(doc.parent / "lax.toml")]) == 1


def test_a_degraded_host_whose_gpu_throttled_fails_not_inconclusive(write_doc):
    """A GPU held down by power or heat is the node's own fault: a sign of contention for compare, never a reason to
    call a failing node inconclusive."""
    records = gemms("vm", DEGRADED) + [ceiling("vm", 0.2), telemetry("vm", others=0.0, throttled=True)]
    (h,) = quick_accept(write_doc, records, {"vm": [0, 1]}).hosts
    assert h.verdict == Verdict.FAIL and not h.busy, (h.verdict, h.busy)


def test_a_busy_host_that_passes_still_passes_and_a_quiet_slow_one_beside_it_fails(write_doc):
    acc = quick_accept(write_doc, gemms("node-a", HEALTHY) + [telemetry("node-a", others=0.9)] + gemms("node-b", DEGRADED),
                       {"node-a": [0], "node-b": [1]})
    assert verdicts(acc) == {"node-a": Verdict.PASS, "node-b": Verdict.FAIL} and acc.exit_code == 1


def test_every_host_of_a_multi_node_run_is_judged_on_its_own_kernels(write_doc):
    """A planted slow CPU on the 4th host of a run across 4 (ceiling:rank=3:scale=0.5): its ceiling record names
    it, so it fails; the others pass. Before, every kernels record counted for process 0's host."""
    fleet = {f"h{i}": [i] for i in range(1, 5)}
    records = [r for h in fleet for r in gemms(h, HEALTHY)]
    records += [ceiling("h1", 0.2), ceiling("h2", 0.21), ceiling("h3", 0.19), ceiling("h4", 0.1, planted_fault_scale=0.5)]
    acc = quick_accept(write_doc, records, fleet)
    assert verdicts(acc) == {"h1": Verdict.PASS, "h2": Verdict.PASS, "h3": Verdict.PASS, "h4": Verdict.FAIL}
    (fail,) = next(h for h in acc.hosts if h.host == "h4").failures()
    assert fail.rule == "compute ceiling" and "0.1 TFLOP/s < 0.85 x fleet median 0.195 TFLOP/s" in fail.text


def test_records_without_a_host_still_count_for_process_0s_host(write_doc):
    """Results written before kernels measured every host: process 0's host alone has kernels."""
    records = gemms("x", DEGRADED)
    for rec in records:
        del rec["host"]
    acc = quick_accept(write_doc, records, {"node-a": [0], "node-b": [1]})
    assert verdicts(acc) == {"node-a": Verdict.FAIL, "node-b": Verdict.NOT_MEASURED}


def test_half_the_fleet_degraded_passes_the_median_rule_and_fails_against_the_reference(write_doc, capsys):
    """3 hosts, 2 with a planted 0.5x ceiling: the fleet's median is theirs, so the median rule passes them; the
    reference (a known good node's result) does not."""
    fleet = {"h1": [0], "h2": [1], "h3": [2]}
    records = [ceiling("h1", 0.2), ceiling("h2", 0.1), ceiling("h3", 0.1)]
    acc = quick_accept(write_doc, records, fleet)
    assert verdicts(acc) == {"h1": Verdict.PASS, "h2": Verdict.PASS, "h3": Verdict.PASS}
    acc = quick_accept(write_doc, records, fleet, reference=[ceiling("good", 0.2)])
    assert verdicts(acc) == {"h1": Verdict.PASS, "h2": Verdict.FAIL, "h3": Verdict.FAIL}
    (fail,) = next(h for h in acc.hosts if h.host == "h2").failures()
    assert fail.text == "0.1 TFLOP/s < 0.85 x reference 0.2 TFLOP/s = 0.17 TFLOP/s"
    doc = write_doc("fleet.json", make_fleet_doc(records, fleet, suite="quick"))
    ref = write_doc("good.json", make_fleet_doc([ceiling("good", 0.2)], {"good": [0]}, suite="quick"))
    assert main(["accept", str(doc), "--reference", str(ref)]) == 1
    out = capsys.readouterr().out
    assert f", reference {ref}" in out.splitlines()[0] and "verdict: FAIL — 2 of 3 host(s) fail: h2, h3" in out
    assert main(["report", str(doc), "-o", str(doc.parent / "rep"), "--reference", str(ref)]) == 0
    assert "h2 FAILS acceptance: compute ceiling: 0.1 TFLOP/s &lt; 0.85 x reference" in (doc.parent / "rep" / "index.html").read_text()


@pytest.mark.parametrize("q, passes", [(0.5, True), (0.25, False)])
def test_a_quantile_judges_the_hosts_shapes_together(judge, q, passes):
    """Triads at 4 sizes (groups): 10, 10, 4, 3 GB/s against min 5: the median (7) passes, the quartile from the
    worst (3.75) fails; without a quantile the two slow sizes fail on their own."""
    recs = [triad("node-a", bw) for bw in (10, 10, 4, 3)]
    for i, rec in enumerate(recs):
        rec["bytes"] = 1 << (20 + i)
    rules = TRIAD + "min = 5\n"
    assert verdicts(judge(rules, recs, {"node-a": [0]}))["node-a"] == Verdict.FAIL
    acc = judge(rules + f"quantile = {q}\n", recs, {"node-a": [0]})
    assert verdicts(acc)["node-a"] == (Verdict.PASS if passes else Verdict.FAIL)


@pytest.mark.parametrize("text, said", [
    (TRIAD + "min = 1\nquantile = 0.6\n", "quantile: 0.6 is out of range"),
    (TRIAD + "min = 1\nquantile = 0\n", "quantile: 0 is out of range"),
    (TRIAD + "max_fraction_of_reference = 1.2\n", "link.bandwidth_gbps is better higher"),
    (TRIAD + "min_fraction_of_reference = 1.5\n", "min_fraction_of_reference: 1.5 is out of range"),
])
def test_the_new_keys_are_checked(tmp_path, write_doc, capsys, text, said):
    doc = write_doc("fleet.json", make_fleet_doc([triad("node-a", 10)], FLEET))
    (tmp_path / "r.toml").write_text(text)
    assert main(["accept", str(doc), "--rules", str(tmp_path / "r.toml")]) == 2
    assert said in capsys.readouterr().err


def test_the_kernels_section_of_a_run_across_hosts_names_each_rows_host_and_draws_process_0s_roofline(tmp_path, write_doc):
    fleet = {"h1": [0], "h2": [1]}
    records = gemms("h1", HEALTHY[:2]) + gemms("h2", HEALTHY[:2]) + [ceiling("h1", 0.2), ceiling("h2", 0.3)]
    doc = write_doc("fleet.json", make_fleet_doc(records, fleet))
    assert kernel_ceilings(load_result(doc)) == {"compute": 0.2}  # h1's (process 0's), not the best of both
    assert main(["report", str(doc), "-o", str(tmp_path / "rep")]) == 0
    html = (tmp_path / "rep" / "index.html").read_text()
    for host in fleet:
        assert f"<td>shape0 ({host})</td>" in html and f"<td>compute ({host})</td>" in html
