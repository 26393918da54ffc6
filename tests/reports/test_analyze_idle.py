"""analyze's idle split on a hand-made one-step trace: the host's idle time waiting (data loader, blocked
waits) vs doing other work, and, with kernel-level spans, the device's idle time while the host waited vs
while the host was busy elsewhere."""
import json

from reports.traces.analyze import analyze


def write_trace(d, kernels):
    x = lambda name, cat, a, b, tid=0: {"ph": "X", "name": name, "cat": cat, "ts": a, "dur": b - a, "pid": 0, "tid": tid}
    events = [x("step 0", "step", 0, 100), x("forward 0", "compute", 0, 60), x("data", "phase", 60, 70), x("wait all_reduce", "wait", 80, 90),
              x("all_reduce", "communication", 75, 95, 1)]
    events[0]["args"] = {"step": 0}
    events += [x(f"kernel {i}", "kernel", a, b, 100) for i, (a, b) in enumerate(kernels)]
    d.mkdir()
    (d / "rank-0.json").write_text(json.dumps({"traceEvents": events, "distributedInfo": {"rank": 0, "world_size": 1}}))
    return d


def test_idle_is_split_into_host_waiting_and_other(tmp_path):
    r = analyze(write_trace(tmp_path / "t", []))["ranks"][0]
    # compute [0,60], communication [75,95] (all exposed), so idle = [60,75] + [95,100] = 20, of which the data wait [60,70] = 10
    assert (r["compute_us"], r["exposed_us"], r["idle_us"]) == (60, 20, 20)
    assert r["idle_host_wait_us"] == 10
    assert "device_busy_us" not in r  # no kernel spans: a CPU run


def test_device_idle_is_split_by_what_the_host_was_doing(tmp_path):
    r = analyze(write_trace(tmp_path / "t", [(5, 25), (30, 55)]))["ranks"][0]
    assert r["device_busy_us"] == 45 and r["device_idle_us"] == 55
    # the device idles [0,5], [25,30], [55,100]; the host waits over [60,70] (data) and [75,95] (exposed communication)
    assert r["device_idle_host_waiting_us"] == 30 and r["device_idle_host_busy_us"] == 25


def test_kernel_breakdown_groups_device_work_and_covers_the_step(tmp_path):
    result = analyze(write_trace(tmp_path / "t", [(5, 25), (30, 55), (40, 50)]))
    k = result["kernels"]
    (rank,) = k["per_rank"]
    assert rank["busy_us"] == 45  # [5,25] and [30,55]: the third kernel runs beside the second (another stream)
    assert rank["sum_over_step"] == 0.55 and rank["busy_over_step"] == 0.45
    assert [g["name"] for g in k["top"]] == ["kernel 1", "kernel 0", "kernel 2"]
    assert k["top"][0]["total_us"] == 25 and k["top"][0]["share"] == 25 / 55


def test_no_kernel_section_without_device_spans(tmp_path):
    assert analyze(write_trace(tmp_path / "t", []))["kernels"] is None
