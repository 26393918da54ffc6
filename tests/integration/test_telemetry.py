"""Telemetry in every result: one `kind: "telemetry"` record per host with a CPU time series (and, where
NVML sees GPUs, a GPU one), valid against the schema; TRAINSCOPE_TELEMETRY_MS sets the interval (0: off,
nonsense: one error line); the report's telemetry section calls out throttled clocks and only them."""
import copy
import json

import pytest

from helpers import run_trainscope
from synthetic import make_doc

TRAIN = ["train", "--model", "mlp", "--preset", "tiny", "--steps", 60, "--no-ceiling"]


def telemetry_of(path):
    doc = json.loads(path.read_text())
    return doc, [r for r in doc["records"] if r["kind"] == "telemetry"]


def test_a_run_carries_its_hosts_cpu_time_series(tmp_path, validate):
    out = tmp_path / "t.json"
    r = run_trainscope(TRAIN + ["--json", out], env={"TRAINSCOPE_TELEMETRY_MS": "5"})
    assert r.rc == 0, r.err
    doc, (tel,) = telemetry_of(out)
    validate(doc)
    samples = tel["samples"]
    assert len(samples) >= 3  # a first and a last sample, and the sampler's in between
    times = [s["t_s"] for s in samples]
    assert times == sorted(times) and len(set(times)) == len(times)
    busy = [s["cpu_busy_fraction"] for s in samples[1:] if s["cpu_busy_fraction"] is not None]
    assert busy and all(0 <= b <= 1 for b in busy)
    assert tel["summary"]["duration_s"] == pytest.approx(times[-1])
    assert tel["summary"]["throttled"] is False and tel["host"] == doc["run"]["hosts"][0]["hostname"]
    assert "# telemetry " in r.out
    # the stream has it too: a run that fails later keeps it
    assert any(json.loads(line)["kind"] == "telemetry" for line in (tmp_path / "t.jsonl").read_text().splitlines() if line.strip())


def test_one_sampler_per_host_under_mpirun(tmp_path, validate):
    out = tmp_path / "m.json"
    r = run_trainscope(TRAIN + ["--dp", 2, "--json", out], np=2, env={"TRAINSCOPE_TELEMETRY_MS": "20"})
    assert r.rc == 0, r.err
    doc, tels = telemetry_of(out)
    validate(doc)
    assert len(tels) == 1 and tels[0]["process"] == 0  # both processes are on this host


def test_interval_zero_turns_it_off_and_nonsense_is_one_line(tmp_path):
    out = tmp_path / "off.json"
    r = run_trainscope(TRAIN + ["--json", out], env={"TRAINSCOPE_TELEMETRY_MS": "0"})
    assert r.rc == 0, r.err
    assert telemetry_of(out)[1] == []
    r = run_trainscope(TRAIN, env={"TRAINSCOPE_TELEMETRY_MS": "fast"})
    assert r.rc == 2
    assert r.error_lines() == ["trainscope: error: TRAINSCOPE_TELEMETRY_MS=fast: not a number of milliseconds >= 0"]


def gpu_telemetry(throttled):
    gpu = {"index": 0, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "power_w": 690.0, "temperature_c": 70, "gpu_util_percent": 99,
           "mem_util_percent": 40, "throttle_reasons": [], "throttled": False, "pcie_tx_gbps": None, "pcie_rx_gbps": None}
    samples = []
    for i in range(5):
        g = copy.deepcopy(gpu)
        if throttled and i in (2, 3):
            g.update(sm_clock_mhz=1410, throttle_reasons=["sw_power_cap"], throttled=True)
        samples.append({"t_s": 0.2 * i, "cpu_busy_fraction": None if i == 0 else 0.3, "load1": 1.0, "cpu_freq_mhz": None, "gpus": [g]})
    rng = lambda lo, hi: {"min": lo, "median": hi, "max": hi}
    return {"kind": "telemetry", "host": "node-a", "process": 0, "interval_s": 0.2, "samples": samples,
            "summary": {"duration_s": 0.8, "cpu_busy_fraction": rng(0.3, 0.3), "load1": rng(1.0, 1.0), "cpu_freq_mhz": None,
                        "gpus": [{"index": 0, "sm_clock_mhz": rng(1410 if throttled else 1980, 1980), "max_sm_clock_mhz": 1980,
                                  "power_w": rng(690.0, 690.0), "temperature_c": rng(70, 70), "gpu_util_percent": rng(99, 99),
                                  "throttled_samples": 2 if throttled else 0, "throttle_reasons": ["sw_power_cap"] if throttled else []}],
                        "throttled": throttled}}


@pytest.mark.parametrize("throttled", [True, False])
def test_the_report_calls_out_throttled_clocks(tmp_path, validate, throttled):
    doc = make_doc([gpu_telemetry(throttled)])
    validate(doc)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    r = run_trainscope(["report", p, "-o", tmp_path / "rep"])
    assert r.rc == 0, r.err
    html = (tmp_path / "rep" / "index.html").read_text()
    assert "Telemetry" in html
    assert ("1410-1980 MHz" if throttled else "1980-1980 MHz") in html
    assert ("clocks throttled in 2 of 5 samples (sw_power_cap)" in html) == throttled
