"""`trainscope links` on the CPU: host memory bandwidth on every host, MPI point-to-point between rank
pairs with checked payloads, outliers, and the errors for bad input."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, base_env, run_trainscope, trainscope_path


def by_test(doc, test):
    return [r for r in doc["records"] if r["kind"] == "link" and r["test"] == test]


def test_memory_and_mpi_pairs_under_mpirun(tmp_path, validate):
    out = tmp_path / "links.json"
    r = run_trainscope(["links", "--memory-bytes", "32M", "--bandwidth-bytes", "256K", "--window", "16", "--latency-iters", "200",
                        "-n", "5", "--json", out], np=2)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    threads = os.cpu_count()
    for test in ("host_memory_copy", "host_memory_triad"):
        [rec] = by_test(doc, test)
        assert rec["processes"] == 2 and rec["check"]["passed"]
        # Sanity only (timing is not a pass/fail matter): positive, and below a bound no machine reaches,
        # 500 GB/s per hardware thread (cache bandwidth included).
        assert 0 < rec["bandwidth_gbps"] < 500 * threads
        per_elem = 16 if test.endswith("copy") else 24
        assert rec["bytes"] == 2 * (32 << 20) // 8 * per_elem
    [lat] = by_test(doc, "mpi_latency")
    [bw] = by_test(doc, "mpi_bandwidth")
    [bibw] = by_test(doc, "mpi_bibandwidth")
    assert (lat["src"], lat["dst"], lat["link"]["type"]) == ("rank 0", "rank 1", "shm")
    assert lat["latency_us"]["median"] > 0 and lat["bandwidth_gbps"] is None and len(lat["samples_us"]) == 200
    assert bw["bytes"] == 256 * 1024 * 16 and bibw["bytes"] == 2 * bw["bytes"] and bibw["direction"] == "bi"
    assert all(r["check"] == {"performed": True, "passed": True, "wrong": 0} for r in (lat, bw, bibw))
    assert_osu_method(bw, bibw, window=16, warmup=5, iterations=5)
    # The pair's peak is half this run's host copy (it counts the bytes read and written); above it, flagged.
    [copy] = by_test(doc, "host_memory_copy")
    for x in (bw, bibw):
        assert x["link"]["peak_gbps"] == pytest.approx(copy["bandwidth_gbps"] / 2)
        assert x["ceiling_suspect"] == (x["bandwidth_gbps"] > x["link"]["peak_gbps"]), x
        assert x.get("ceiling_suspect_cause") == ("cache_residency" if x["ceiling_suspect"] else None)  # 256 KiB buffers fit any LLC
    assert "rank" not in r.err


def assert_osu_method(bw, bibw, window, warmup, iterations):
    """osu_bw's method, as the records state it: `window` messages per window, `warmup` untimed windows, the figure the
    bytes of every timed window over the timed loop's wall time; and the receiver(s) got every byte the records count."""
    for x, directions in ((bw, 1), (bibw, 2)):
        assert (x["window"], x["warmup"], x["iterations"]) == (window, warmup, iterations)
        assert x["bytes"] == x["message_bytes"] * window * directions and len(x["samples_us"]) == iterations
        assert x["delivered_bytes"] == x["bytes"] * iterations
        assert sum(x["samples_us"]) <= x["total_us"] * (1 + 1e-9)  # the loop's time holds every window
        assert x["bandwidth_gbps"] == pytest.approx(x["bytes"] * iterations / (x["total_us"] * 1e-6) / 1e9)


def test_a_bandwidth_above_its_links_planted_peak_is_flagged(tmp_path, validate):
    """A peak planted far below any figure (TRAINSCOPE_FAULT=ceiling scales every link peak): the bandwidth records are
    ceiling_suspect with that cause, marked ! in their cells, and named once in a warning line; the latency is not."""
    out = tmp_path / "planted.json"
    r = run_trainscope(["links", "--tests", "memory,mpi", "--memory-bytes", "8M", "--bandwidth-bytes", "64K", "--window", "4",
                        "-w", "1", "-n", "3", "--latency-iters", "10", "--json", out], np=2,
                       env={"TRAINSCOPE_FAULT": "ceiling:rank=0:scale=1e-6"})
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    [lat] = by_test(doc, "mpi_latency")
    assert lat["ceiling_suspect"] is False and "ceiling_suspect_cause" not in lat
    for test in ("mpi_bandwidth", "mpi_bibandwidth"):
        [x] = by_test(doc, test)
        assert x["ceiling_suspect"] and x["ceiling_suspect_cause"] == "planted_fault", x
        assert x["link"]["fraction_of_peak"] > 1
    [row] = [line for line in r.out.splitlines() if line.startswith("  0 (")]
    assert row.count("!") == 2, row
    warnings = [line for line in r.out.splitlines() if line.startswith("# warning:")]
    assert len(warnings) == 1 and "2 figure(s) above 100% of their link's peak" in warnings[0], r.out
    assert "mpi_bandwidth rank 0 -> rank 1" in warnings[0] and "planted fault" in warnings[0]


def test_all_pairs_and_outliers_with_four_ranks(tmp_path, validate):
    out = tmp_path / "four.json"
    r = run_trainscope(["links", "--tests", "mpi", "--pairs", "all", "--bandwidth-bytes", "64K", "--window", "8", "--latency-iters", "100",
                        "-n", "3", "--json", out], np=4)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    validate(doc)
    pairs = {(x["src"], x["dst"]) for x in by_test(doc, "mpi_bandwidth")}
    assert pairs == {(f"rank {a}", f"rank {b}") for a in range(4) for b in range(a + 1, 4)}
    summaries = [x for x in doc["records"] if x["kind"] == "link_outliers"]
    assert {s["test"] for s in summaries} == {"mpi_latency", "mpi_bandwidth", "mpi_bibandwidth"}
    for s in summaries:  # whatever the noise, the rule holds: an outlier is more than 20% worse than the median
        for o in s["outliers"]:
            assert o["value"] < 0.8 * s["median"] if s["unit"] == "GB/s" else o["value"] > 1.2 * s["median"]


def test_pair_file(tmp_path):
    import socket
    pairs = tmp_path / "pairs.txt"
    host = socket.gethostname()
    pairs.write_text(f"# one pair\n{host} {host}\n")
    r = run_trainscope(["links", "--tests", "mpi", "--pairs", pairs, "-n", "2", "--latency-iters", "10"], np=2)
    assert r.rc == 2 and "are the same rank" in r.err  # both names are this host: its first rank twice
    pairs.write_text(f"{host} elsewhere\n")
    r = run_trainscope(["links", "--tests", "mpi", "--pairs", pairs], np=2)
    assert r.rc == 2 and len(r.error_lines()) == 1 and "pairs.txt:1: host 'elsewhere' has no rank in this run" in r.err


@pytest.mark.parametrize("args,message", [
    (["--latency-bytes", "0"], "--latency-bytes must be at least 1 byte"),
    (["--tests", "memory,disk"], "--tests: 'disk' is not one of memory, mpi, gpu, or all"),
    (["--pairs", "/no/such/file"], "--pairs: '/no/such/file' is neither ring, all, nor a file"),
    (["--copy-bytes", "100"], "--copy-bytes must be a positive multiple of 16 bytes"),
    (["--window", "0"], "--window must be at least 1"),
    (["--gpus", "7"], "--gpus: GPU 7 does not exist"),
    (["--outlier-fraction", "nan"], "--outlier-fraction: nan is not a finite number"),
])
def test_bad_input(args, message):
    r = run_trainscope(["links"] + args)
    assert r.rc == 2, r.err
    assert len(r.error_lines()) == 1 and message in r.error_lines()[0], r.err


def test_the_repeatability_benchmark_runs_against_an_osu_bw(tmp_path):
    """scripts/bench-links-repeat.sh (README) for one round, against a stand-in for osu_bw that prints its sweep's
    last lines: it reads trainscope's mpi_bandwidth record and osu_bw's 4 MiB line (MB/s) and prints both. One round
    has no spread to judge, so its exit status is 0 whatever the figures."""
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not installed")
    osu = tmp_path / "osu_bw"
    osu.write_text("#!/bin/sh\necho '# OSU MPI Bandwidth Test v5.3'\necho '2097152              1756.90'\n"
                   "echo '4194304              1800.00'\n")
    osu.chmod(0o755)
    r = subprocess.run([str(ROOT / "scripts" / "bench-links-repeat.sh"), "1", str(osu)], capture_output=True, text=True,
                       timeout=300, env=base_env({"TS_BUILD": str(Path(trainscope_path()).parent), "TS_BUILD_GIVEN": "1"}))
    assert r.returncode == 0, r.stdout + r.stderr
    [row] = [line for line in r.stdout.splitlines() if line.startswith("| 1 |")]
    assert float(row.split("|")[3]) > 0 and row.split("|")[5].strip() == "1.800", row
    assert "trainscope: median" in r.stdout and "spread 0.0% (within the 5% target)" in r.stdout
    assert "osu_bw:     median 1.800 GB/s" in r.stdout
