"""The report's banner lists every alert its sections raise (issue #35): a run whose own record names a straggler, or
measured on a host that other work kept busy, is not called clean; a clean run stays clean. Planted records only: no
verdict here depends on this machine's speed."""
import subprocess
import sys

import pytest
from synthetic import ROOT, make_doc, make_train, telemetry

SKEW = {"threshold_ms": 1.0, "late_ranks": [],
        "ranks": [{"rank": 0, "collectives": 60, "median_skew_us": 40.0, "max_skew_us": 300.0, "late": False},
                  {"rank": 1, "collectives": 60, "median_skew_us": 35.0, "max_skew_us": 280.0, "late": False}]}


def two_ranks(late=()):
    """A data-parallel train record of 2 ranks with its arrival-skew block (`late`: the ranks its run named late)."""
    skew = {**SKEW, "late_ranks": list(late),
            "ranks": [dict(k, late=k["rank"] in late, median_skew_us=5012.0 if k["rank"] in late else k["median_skew_us"])
                      for k in SKEW["ranks"]]}
    return make_train(world_size=2, stragglers=skew)


def scaling_point(late):
    return {"kind": "scaling", "mode": "weak", "ranks": 2, "global_batch": 16, "launcher": "mpirun", "completed": True,
            "series": "dp", "step_time_us": 2000.0, "throughput_per_s": 8000.0, "speedup": 2.0, "efficiency": 1.0,
            "breakdown_us": {"compute": 1500.0, "exposed_communication": 300.0, "data": 100.0, "idle": 100.0},
            "late_ranks": list(late)}


def banner(write_doc, tmp_path, records):
    """The report's status banner (HTML) and summary.md of one result holding `records`."""
    out = tmp_path / "rep"
    r = subprocess.run([sys.executable, "-m", "reports", "report", write_doc("r.json", make_doc(records)), "-o", out],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text()
    start = html.index('id="status"')
    return html[start:html.index("</div>", start)], (out / "summary.md").read_text()


@pytest.mark.parametrize("records, section, said", [
    ([two_ranks(late=[1]), telemetry(others=0.05)], "training", "Stragglers: mlp tiny: rank 1 (5.012 ms median arrival skew)"),
    ([two_ranks(), telemetry(others=0.73)], "telemetry", "Busy host: other processes used 73% of node-a&#39;s CPUs (limit 25%)"),
    ([two_ranks(), telemetry(others=None, load=12.0)], "telemetry", "Busy host: load 12.0 on node-a&#39;s 8 CPU(s)"),
    ([two_ranks(), scaling_point(late=[1])], "scaling", "Stragglers (ranks consistently late at the collectives"),
])
def test_every_alert_a_section_knows_is_in_the_banner(write_doc, tmp_path, records, section, said):
    html, md = banner(write_doc, tmp_path, records)
    assert "Status: 1 problem(s)" in html, html
    assert f'<a href="#{section}">' in html and said in html, html
    assert "**Status: 1 problem(s)**" in md and said.replace("&#39;", "'") in md


def test_a_scale_runs_straggler_is_one_problem(write_doc, tmp_path):
    """`scale` writes each point's train record beside its scaling point, which repeats the train record's late ranks:
    the Training section names them, the Scaling section does not count them again."""
    html, md = banner(write_doc, tmp_path, [two_ranks(late=[1]), scaling_point(late=[1])])
    assert "Status: 1 problem(s)" in html and "Stragglers: mlp tiny: rank 1" in html, html


def test_a_clean_run_stays_clean(write_doc, tmp_path):
    """Two ranks none of them late, other processes at 5% of the CPUs, a point without stragglers: no problem, and the
    all-clear line names stragglers and a busy host among what was looked for."""
    html, md = banner(write_doc, tmp_path, [two_ranks(), telemetry(others=0.05), scaling_point(late=[])])
    assert "Status: no problem found" in html, html
    for absent in ("straggler", "busy host"):
        assert absent in html and absent in md
    assert "problem(s)" not in md
