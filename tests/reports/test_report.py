"""report: sections shown when they apply, hostile strings escaped, a real result from mpirun turned into
a report, and the page opened in headless Chromium with every image decoded and no errors."""
import json
import os
import shutil
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from synthetic import ROOT, make_doc, make_record, noisy

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_tool(*args):
    return subprocess.run([sys.executable, "-m", "reports", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_hostile_strings_show_as_text(write_doc, tmp_path):
    doc = make_doc([make_record(samples=noisy(10, 0.1))], hostname=HOSTILE, label=HOSTILE, environment={"NCCL_X": HOSTILE})
    out = tmp_path / "rep"
    r = run_tool("report", write_doc("h.json", doc), "-o", out, "--label", HOSTILE + " $math$")
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text()
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html


def test_sections_only_when_the_result_has_such_records(write_doc, tmp_path):
    out = tmp_path / "env-only"
    assert run_tool("report", write_doc("e.json", make_doc([])), "-o", out).returncode == 0
    html = (out / "index.html").read_text()
    assert 'id="system"' in html and 'id="collectives"' not in html
    assert not list(out.glob("*.png"))


def test_failed_checks_are_flagged(write_doc, tmp_path):
    out = tmp_path / "bad"
    doc = make_doc([make_record(samples=noisy(10, 0.1), wrong=3)])
    assert run_tool("report", write_doc("w.json", doc), "-o", out).returncode == 0
    assert "1 record(s) failed their result check" in (out / "index.html").read_text()


def test_the_report_leads_with_its_verdict(write_doc, tmp_path):
    """The status banner comes before everything else: the problems, each a link to its section (a failed check
    of two records, one of them a second result's), or, when there is none, the sections looked at."""
    bad, good = tmp_path / "bad", tmp_path / "good"
    failing = write_doc("w.json", make_doc([make_record(samples=noisy(10, 0.1), wrong=3)]))
    assert run_tool("report", failing, "-o", bad).returncode == 0
    html = (bad / "index.html").read_text()
    banner = html.index('<div class="status fail" id="status"><b>Status: 1 problem(s)</b>')
    assert banner < html.index('<ul class="runs"') and banner < html.index("<nav>")
    assert '<li><a href="#collectives">Collectives</a>: 1 record(s) failed their result check' in html
    assert "**Status: 1 problem(s)**" in (bad / "summary.md").read_text()
    assert run_tool("report", write_doc("g.json", make_doc([make_record(samples=noisy(10, 0.1))])), "-o", good).returncode == 0
    html = (good / "index.html").read_text()
    assert '<div class="status ok" id="status"><b>Status: no problem found</b> — System, Collectives:' in html


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    """A report of two real runs of trainscope under mpirun, overlaid."""
    from helpers import run_trainscope
    d = tmp_path_factory.mktemp("real")
    for np in (2, 3):
        r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,all_gather,sendrecv", "-b", "64", "-e", "256K",
                            "-f", "8", "-n", "5", "--json", d / f"np{np}.json"], np=np)
        assert r.rc == 0, r.err
    out = d / "report"
    r = subprocess.run([os.environ.get("TRAINSCOPE", str(ROOT / "build" / "trainscope")), "report", d / "np2.json", d / "np3.json",
                        "-o", out, "--label", "two ranks", "--label", "three ranks"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def test_real_report_has_plots_tables_and_summary(real_report):
    html = (real_report / "index.html").read_text()
    for op in ("all_reduce", "all_gather", "sendrecv"):
        png = real_report / f"collectives_{op}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC
        assert f"({png.name})" in html
    assert (real_report / "telemetry.png").read_bytes()[:8] == PNG_MAGIC  # the two runs' CPU telemetry, overlaid
    assert html.count("data:image/png;base64,") == 4
    assert "Peak bus bandwidth per op and series" in html and "two ranks" in html and "three ranks" in html
    summary = (real_report / "summary.md").read_text()
    assert "## System" in summary and "## Collectives" in summary and "![" in summary


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                  "--disable-background-networking", "--disable-component-update", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]

PROBE = """
<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message || (e.target && e.target.src) || e.type)), true);
window.addEventListener("load", () => {
  const imgs = Array.from(document.images).map(i => ({w: i.naturalWidth, ok: i.complete}));
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify({images: imgs, errors: window.__errors});
  document.body.appendChild(pre);
});
</script>
"""


def test_report_opens_in_headless_chromium(real_report, tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (scripts/test.sh installs Debian's chromium)")
    html = (real_report / "index.html").read_text()
    (real_report / "probe.html").write_text(html.replace("<head>", "<head>" + PROBE, 1))
    handler = partial(SimpleHTTPRequestHandler, directory=str(real_report))
    handler.log_message = lambda *a, **k: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/probe.html"
        p = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000",
                            "--dump-dom", url], capture_output=True, text=True, timeout=180)
    finally:
        server.shutdown()
    assert p.returncode == 0, p.stderr[-2000:]
    start = p.stdout.index('<pre id="probe">') + len('<pre id="probe">')
    probe = json.loads(p.stdout[start:p.stdout.index("</pre>", start)].replace("&quot;", '"'))
    assert probe["errors"] == []
    assert len(probe["images"]) == 4 and all(i["ok"] and i["w"] > 0 for i in probe["images"]), probe
    console_errors = [l for l in p.stderr.splitlines() if "CONSOLE" in l and ("ERROR" in l or "Uncaught" in l)]
    assert console_errors == []


def test_links_section_with_gpu_records(write_doc, tmp_path):
    """The GPU part of the links section, from synthetic records of a 2-GPU host (CI has no GPU)."""
    from synthetic import make_link
    recs = [make_link("h2d", "host", "cuda:0", bw=25.0, peak=31.5, memory="pinned"),
            make_link("d2h", "cuda:1", "host", bw=24.0, peak=31.5, memory="pageable"),
            make_link("d2d_local", "cuda:0", "cuda:0", bw=1500.0, p2p=None),
            make_link("d2d_local", "cuda:1", "cuda:1", bw=1490.0, p2p=None),
            make_link("d2d_peer", "cuda:0", "cuda:1", bw=300.0, p2p=True),
            make_link("d2d_peer", "cuda:1", "cuda:0", bw=301.0, p2p=True),
            make_link("d2d_peer", "cuda:0", "cuda:1", bw=590.0, direction="bi", p2p=True),
            make_link("d2d_peer", "cuda:0", "cuda:1", engine="sm", bw=280.0, p2p=True),
            make_link("d2d_peer", "cuda:0", "cuda:1", bw=20.0, p2p=False),
            make_link("device_load_latency", "cuda:0", "cuda:0", engine="sm", latency=0.6, steps=100000),
            make_link("mpi_latency", "rank 0", "rank 1", engine="mpi", latency=1.5, src_host="a", dst_host="b", message_bytes=8, window=1)]
    out = tmp_path / "gpu"
    r = run_tool("report", write_doc("g.json", make_doc(recs)), "-o", out)
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text()
    assert 'id="links"' in html and "Host &lt;-&gt; device copies against the link&#39;s peak" in html
    assert "79%" in html  # 25 of 31.5 GB/s
    assert (out / "links_gpu_matrix_node-a_0.png").read_bytes()[:8] == PNG_MAGIC
    assert (out / "links_host_device.png").read_bytes()[:8] == PNG_MAGIC
    assert "GPU latencies" in html and "MPI point-to-point between rank pairs" in html


def test_overlaid_runs_of_one_machine_show_its_nic_table_once(tmp_path):
    """Four runs of one VM: one NIC table naming the four runs, not four identical tables (issue #22)."""
    data = ROOT / "tests" / "reports" / "data"
    out = tmp_path / "four"
    r = run_tool("report", *[data / f"ci-quiet-{i}.json" for i in range(1, 5)], "-o", out)
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text()
    assert html.count("<caption>NICs of vm") == 1 and "<caption>NICs of vm (the same for 4 runs: " in html


def test_overlaid_runs_get_a_column_each_and_their_change(tmp_path):
    """Two runs: one row per op, series and placement, a column per run and the second's % change against the
    first (issue #22), computed from the records' own peaks."""
    data = ROOT / "tests" / "reports" / "data"
    out = tmp_path / "two"
    assert run_tool("report", data / "ci-quiet-1.json", data / "ci-quiet-2.json", "-o", out, "--label", "a", "--label", "b").returncode == 0
    html = (out / "index.html").read_text()
    assert "Peak bus bandwidth (GB/s), the runs side by side, change against a" in html
    docs = [json.loads((data / f"ci-quiet-{i}.json").read_text()) for i in (1, 2)]
    peak = [max(r["busbw_gbps"] for r in d["records"] if r["kind"] == "collective" and r["op"] == "all_reduce" and not r["in_place"])
            for d in docs]
    row = f"<td>all_reduce</td><td>mpi 2 ranks float32 sum</td><td>out-of-place</td><td>{peak[0]:.2f}</td><td>{peak[1]:.2f}</td>" \
          f"<td>{100 * (peak[1] / peak[0] - 1):+.1f}%</td>"
    assert row in html.replace("\n", ""), "the all_reduce row"


def test_overlaid_training_and_kernels_get_a_column_per_run(write_doc, tmp_path):
    """Overlaid runs, one table per fact (issue #22): a training configuration's median step time and throughput, and a
    kernel's median time, a column per run and the second run's change against the first's; a configuration only one
    run measured gets no row."""
    from synthetic import make_kernel, make_train, stats
    fast = make_kernel("gemm", "square", 0.1, 20.0, 0.2, 50.0)
    slow = dict(fast, time_us=stats([fast["time_us"]["median"] * 1.25] * 3))
    a = make_doc([make_train(), fast])
    b = make_doc([make_train(step_time_us=stats([2500.0, 2500.0]), throughput_per_s=3200.0),
                  make_train(preset="small"), slow])
    out = tmp_path / "ab"
    r = run_tool("report", write_doc("a.json", a), write_doc("b.json", b), "-o", out, "--label", "a", "--label", "b")
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text().replace("\n", "")
    assert "<caption>Median step time (ms), the runs side by side, change against a</caption>" in html
    assert "<td>mlp tiny</td><td>single</td><td>cuda</td><td>bfloat16</td><td>-</td><td>2.000</td><td>2.500</td><td>+25.0%</td>" in html
    assert "<td>4000.0</td><td>3200.0</td><td>-20.0%</td>" in html
    assert "<td>mlp small</td><td>single</td>" not in html  # measured by run b alone
    us = fast["time_us"]["median"]
    assert f"<td>gemm</td><td>square</td><td>float32</td><td>cpu</td><td>{us:.2f}</td><td>{1.25 * us:.2f}</td><td>+25.0%</td>" in html


def test_overlaid_runs_are_set_against_the_first_that_measured_the_fact(write_doc, tmp_path):
    """A first input without training records (a collectives sweep) gets no column in the training tables, and the
    change is against the first input that has one (issue #41: every 'vs sweep' cell was '-')."""
    from synthetic import make_train, stats
    sweep = make_doc([make_record(samples=noisy(10, 0.1))])
    a = make_doc([make_train()])
    b = make_doc([make_train(step_time_us=stats([2500.0, 2500.0]), throughput_per_s=3200.0)])
    out = tmp_path / "rep"
    r = run_tool("report", write_doc("s.json", sweep), write_doc("a.json", a), write_doc("b.json", b), "-o", out,
                 "--label", "sweep", "--label", "a", "--label", "b")
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text().replace("\n", "")
    assert "<caption>Median step time (ms), the runs side by side, change against a</caption>" in html
    assert "<td>mlp tiny</td><td>single</td><td>cuda</td><td>bfloat16</td><td>-</td><td>2.000</td><td>2.500</td><td>+25.0%</td>" in html
    assert "vs sweep" not in html


def test_a_job_on_several_fabrics_gets_a_row_per_transport(write_doc, tmp_path):
    """Train records labelled with their transport (train --transports): a row each with its step, exposed communication
    (the median over the ranks) and throughput, set against the first transport."""
    from synthetic import make_train, stats

    def ranks(*exposed_us):
        return [{"rank": k, "dp_rank": k, "tp_rank": 0, "pp_rank": 0, "step_us": 3000.0, "compute_us": 1000.0, "communication_us": 2000.0, "exposed_communication_us": e,
                 "idle_us": 0.0} for k, e in enumerate(exposed_us)]
    shm = make_train(world_size=2, transport="shm", transport_env={"OMPI_MCA_btl": "self,vader,tcp"}, ranks=ranks(400.0, 600.0))
    tcp = make_train(world_size=2, transport="tcp", transport_env={"OMPI_MCA_btl": "self,tcp"}, ranks=ranks(900.0, 1100.0),
                     step_time_us=stats([3000.0, 3000.0]), throughput_per_s=2666.7)
    out = tmp_path / "rep"
    r = run_tool("report", write_doc("ab.json", make_doc([shm, tcp])), "-o", out)
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text().replace("\n", "")
    assert "Fabrics side by side" in html
    assert "<td>mlp tiny</td><td>shm</td><td>2.000</td><td>0.500</td><td>4000.0</td><td>1.00x</td>" in html
    assert "<td>mlp tiny</td><td>tcp</td><td>3.000</td><td>1.000</td><td>2666.7</td><td>1.50x</td>" in html
    assert "mlp tiny over tcp" in html  # the other tables name each run's transport


def test_link_figures_above_their_peak_are_named_and_marked(write_doc, tmp_path):
    """A link record above its link's peak (ceiling_suspect): named with its cause in the section's alert (and so in the
    status banner), its cell marked !; a record within its peak is not."""
    from synthetic import make_link
    mpi = dict(engine="mpi", src_host="a", dst_host="a", message_bytes=4 << 20, window=64, warmup=5, iterations=5)
    recs = [make_link("mpi_bandwidth", "rank 0", "rank 1", bw=12.0, peak=10.0, ceiling_suspect=True,
                      ceiling_suspect_cause="cache_residency", **mpi),
            make_link("mpi_bibandwidth", "rank 0", "rank 1", direction="bi", bw=9.0, peak=10.0, ceiling_suspect=False, **mpi)]
    out = tmp_path / "suspect"
    r = run_tool("report", write_doc("s.json", make_doc(recs)), "-o", out)
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text()
    assert "1 link figure(s) above their link&#39;s peak" in html, html
    assert "mpi_bandwidth rank 0 -&gt; rank 1 (12.00 GB/s): likely cause: both ranks on one host" in html
    assert "12.00 !" in html and "9.00 !" not in html


def test_a_gpu_host_without_its_link_matrix_is_shown_once_per_host(write_doc, tmp_path):
    """A GPU host whose link matrix NVML could not give: its GPUs and an "unavailable" line (the folding of overlaid
    runs' identical host tables read every block's caption, and a text block has none: internal error)."""
    doc = make_doc([make_record()])
    gpu = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0", "pci_bus_id": "0000:01:00.0", "memory_bytes": 80 << 30,
           "sm_count": 132, "compute_capability": "9.0", "sm_clock_max_mhz": 1980, "mem_clock_max_mhz": 2619}
    doc["run"]["hosts"][0]["gpus"] = {"available": True, "devices": [gpu], "links": {"reason": "NVML not loaded"}}
    out = tmp_path / "gpu-host"
    r = run_tool("report", write_doc("a.json", doc), write_doc("b.json", doc), "-o", out, "--label", "a", "--label", "b")
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text()
    assert html.count("GPU links of node-a: unavailable (NVML not loaded) (the same for 2 runs: a, b)") == 1
    assert html.count("<caption>GPUs of node-a (the same for 2 runs: a, b)</caption>") == 1


def test_a_one_rank_sweep_says_it_measured_no_link(write_doc, tmp_path):
    """Not an alert (nothing failed), but a reader of its 0 GB/s busbw learns why (issue #35)."""
    one, two = make_record(samples=noisy(10, 0.1)), make_record(samples=noisy(10, 0.1))
    one["ranks"] = 1
    for name, rec, said in (("one", one, True), ("two", two, False)):
        out = tmp_path / name
        assert run_tool("report", write_doc(f"{name}.json", make_doc([rec])), "-o", out).returncode == 0
        html = (out / "index.html").read_text()
        assert ("a collective over one rank crosses no link" in html) == said
        assert "Status: no problem found" in html
