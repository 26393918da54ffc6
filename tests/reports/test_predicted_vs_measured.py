"""A prediction (`predict train --json`) beside the measured train records of its job: the report's "Predicted vs
measured" section (exact cells on synthetic records, the band's finding, hostile names escaped) and compare's line
under the train row. The prediction is made by the command itself on test_predict_train.py's inputs, whose every
figure is exact: a step of 150 us (compute 80 + optimizer 20 + an all-reduce of 50), band 140..160; MFU 50% of the
calibration's measured ceiling and 25% of its datasheet peak; states 4.5 MiB, activations 1.5, total 6.5 per rank."""
import json

import pytest
from synthetic import make_doc, make_train, stats
from test_predict_train import PEAKS, averaging_window, calibration_train, measured_memory, plan_doc, plan_record, sweep_records

from reports.__main__ import main
from reports.common.load import load_results
from reports.common.predicted_vs_measured import MEASURED
from reports.html.sections.prediction import SECTION

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
NAME = "mlp tiny dp=2 at 2 rank(s)"


def measured_train(step=200.0, preset="tiny", layout="dp=2", **extra):
    """A dp=2 run of the plan's job: each rank 200 us a step, compute 100 (of which forward and backward alone 30 + 60),
    waiting 10, transfer 60, data 5 and idle 15 (host time 20); states 5 MiB,
    activations 1.5, total 8; MFU 40% of its ceiling, 20% of the datasheet peak."""
    rec = make_train(backend="cpu", device="cpu", precision="float32", world_size=2, preset=preset,
                     layout={"name": layout, "dp": 2, "tp": 1, "pp": 1, "zero": 0, "sync": "allreduce", "overlap": True},
                     step_time_us=stats([step] * 20), step_samples_us=[step] * 20,
                     ranks=[{"rank": r, "dp_rank": r, "tp_rank": 0, "pp_rank": 0, "step_us": step, "compute_us": 100.0,
                             "communication_us": 70.0, "exposed_communication_us": 70.0, "waiting_for_peers_us": 10.0,
                             "exposed_transfer_us": 60.0, "pipeline_wait_us": 0.0, "data_us": 5.0, "idle_us": 15.0,
                             "forward_compute_us": 30.0, "backward_compute_us": 60.0}
                            for r in (0, 1)],
                     memory=measured_memory(), mfu=PEAKS)
    rec.update(extra)
    return rec


def predicted(write_doc, tmp_path, *flags, preset="tiny", layout="dp=2", peaks=PEAKS):
    """The path of `predict train --json` over a dp=2 plan of `preset` and `layout`, calibrated by a run stating
    `peaks` (None: a run that states no MFU)."""
    stated = {"mfu": peaks} if peaks else {}
    cal = write_doc("cal.json", make_doc([calibration_train(preset=preset, **stated)] + sweep_records()))
    plans = [plan_record(r) for r in (0, 1)]
    for p in plans:
        p.update(preset=preset, layout=layout)
    plan = write_doc("plan.json", plan_doc(plans))
    out = tmp_path / "pred.json"
    assert main(["predict", "train", "--calibration", str(cal), "--plan", str(plan), *map(str, flags),
                 "--json", str(out)]) == 0
    return out


def section(paths, labels):
    return SECTION.build(load_results([str(p) for p in paths], labels), None)


def table(blocks, caption_start):
    return next(b for b in blocks if b["kind"] == "table" and b["caption"].startswith(caption_start))


def test_the_prediction_beside_a_measured_run_cell_by_cell(write_doc, tmp_path):
    pred = predicted(write_doc, tmp_path, "--fabric", "ib-ndr", "--compute-speedup", "2", "--target-ms", "0.13")
    run = write_doc("run.json", make_doc([measured_train()]))
    blocks = section([pred, run], ["predicted", "measured"])
    name = NAME  # the one result of predictions: named by its job alone
    (alert,) = [b for b in blocks if b["kind"] == "alert"]
    assert alert["text"] == ("1 measured step(s) outside the predicted band (a slow link, a straggler, a bug, or the "
                             f"model's own error): {name}, measured in measured: measured 0.200 ms, predicted 0.150 ms "
                             "(band 0.140..0.160), error -25.0%, outside the band")
    steps = table(blocks, "Predicted and measured step")
    assert steps["columns"][-2:] == ["MFU vs measured ceiling", "MFU vs datasheet"]
    assert steps["rows"] == [[name, "measured", "0.150", "0.140..0.160", "0.200", "-25.0%", "no", "50.0% / 40.0%",
                              "25.0% / 20.0%"]]
    per_rank = table(blocks, "Per rank")
    assert per_rank["columns"] == ["prediction", "measured in", "rank", "coordinates", "step", "compute", "optimizer",
                                   "host", "exposed", "waiting", "pipeline wait", "exposed by group"]
    # Compute: the replay's 80 us against the record's forward and backward alone, 90; the optimizer as predicted
    # alone; host: none in the calibration, the record's data and idle time 20 us; exposed: the replay's blocked 50 us
    # against the record's 70, all dp's.
    assert per_rank["rows"][1] == [name, "measured", 1, "dp1", "0.150 / 0.200 (-25.0%)", "0.080 / 0.090 (-11.1%)", "0.020",
                                   "0.000 / 0.020 (-100.0%)", "0.050 / 0.070 (-28.6%)", "0.000 / 0.010 (-100.0%)", "0.000 / 0.000", "dp 0.050"]
    memory = table(blocks, "Memory per rank")
    assert memory["columns"] == ["prediction", "measured in", "rank", "coordinates", "states", "activations", "total"]
    assert memory["rows"][0] == [name, "measured", 0, "dp0", "4.5 / 5.0 (-10.0%)", "1.5 / 1.5 (+0.0%)",
                                 "6.5 / 8.0 (-18.8%)"]
    # ib-ndr: 100 us of compute + the all-reduce's 10 us latency + 40000 B at 50 GB/s (0.8 us); compute 2x: 50 + 50.
    assert [row[1:] for row in table(blocks, "What-if")["rows"]] == [
        ["this cluster (as calibrated)", "-", "-", "0.150", "1.00x"],
        ["ib-ndr", "fabric", "InfiniBand NDR 400 Gb/s, 50 GB/s per direction (datasheet), latencies as fitted, for every op", "0.111",
         "1.35x"],
        ["compute 2x (fastest)", "compute", "compute 2 times the calibration's speed", "0.100", "1.50x"]]
    (target,) = [b["text"] for b in blocks if b["kind"] == "text"]
    assert target == (f"{name}: to reach 0.130 ms: every collective's bandwidth 2.00x faster; compute 1.25x faster")


def test_without_a_run_among_the_inputs_its_own_measured_figures_are_shown(write_doc, tmp_path):
    run = write_doc("run.json", make_doc([measured_train(step=150.0)]))
    pred = predicted(write_doc, tmp_path, "--measured", run)
    blocks = section([pred], None)
    assert not [b for b in blocks if b["kind"] == "alert"]  # 150 us: within the band
    assert table(blocks, "Predicted and measured step")["rows"] == [
        [NAME, f"--measured {run}", "0.150", "0.140..0.160", "0.150", "+0.0%", "yes", "50.0% / 40.0%", "25.0% / 20.0%"]]
    assert table(blocks, "Memory per rank")["rows"][1][4:] == ["4.5 / 5.0 (-10.0%)", "1.5 / 1.5 (+0.0%)",
                                                               "6.5 / 8.0 (-18.8%)"]
    two = section([pred, pred], ["a", "b"])  # several results of predictions: each named by its result's label too
    assert [row[:2] for row in table(two, "Predicted and measured step")["rows"]] == [
        [f"a: {NAME}", f"--measured {run}"], [f"b: {NAME}", f"--measured {run}"]]
    alone = section([predicted(write_doc, tmp_path, peaks=None)], None)
    assert table(alone, "Predicted and measured step")["rows"] == [
        [NAME, "-", "0.150", "0.140..0.160", "-", "-", "-", "-", "-"]]
    (why,) = [b["text"] for b in alone if b["kind"] == "text"]  # no peak: a dash, and why
    assert why == (f"{NAME}: no MFU against a measured GEMM ceiling: {tmp_path / 'cal.json'}'s train run states no MFU "
                   "(its steps untimed, or written before MFU was)")
    assert table(alone, "Per rank")["rows"][1][3:] == ["dp1", "0.150", "0.080", "0.020", "0.000", "0.050", "0.000",
                                                       "0.000", "dp 0.050"]
    assert table(alone, "Memory per rank")["rows"][1][3:] == ["dp1", "4.5", "1.5", "6.5"]
    assert not [b for b in alone if b["kind"] == "table" and b["caption"].startswith("What-if")]


def test_a_run_of_another_job_is_not_put_beside(write_doc, tmp_path):
    pred = predicted(write_doc, tmp_path)
    others = [measured_train(precision="bfloat16"), measured_train(world_size=4), measured_train(layout="dp=2 zero=1"),
              measured_train(completed=False)]
    blocks = section([pred, write_doc("run.json", make_doc(others))], ["p", "r"])
    assert [row[1] for row in table(blocks, "Predicted and measured step")["rows"]] == ["-"]


def test_hostile_preset_and_layout_are_text(write_doc, tmp_path):
    pred = predicted(write_doc, tmp_path, preset=HOSTILE, layout=HOSTILE)
    run = write_doc("run.json", make_doc([measured_train(preset=HOSTILE, layout=HOSTILE)], label=HOSTILE))
    out = tmp_path / "rep"
    assert main(["report", str(pred), str(run), "-o", str(out)]) == 0
    html = (out / "index.html").read_text()
    assert 'id="prediction"' in html and "Predicted vs measured" in html
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    md = (out / "summary.md").read_text()
    assert "## Predicted vs measured" in md and "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
    assert "outside the predicted band" in md  # the finding, in the banner's list too
    assert '<a href="#prediction">Predicted vs measured</a>' in html


def test_compare_puts_the_predicted_step_beside_the_measured_one(write_doc, tmp_path, capsys):
    """The prediction's result given as one more baseline: a line under the train row, the verdict and exit code as
    without it (the prediction is no baseline run: the method line still says one run a side)."""
    pred = predicted(write_doc, tmp_path)
    capsys.readouterr()
    base = write_doc("base.json", make_doc([measured_train(step=190.0)]))
    cand = write_doc("cand.json", make_doc([measured_train()]))
    md, js = tmp_path / "c.md", tmp_path / "c.json"
    plain = main(["compare", str(base), str(cand)])
    without = capsys.readouterr().out
    assert main(["compare", str(base), str(pred), str(cand), "--markdown", str(md), "--json", str(js)]) == plain
    out = capsys.readouterr().out
    line = (f"predicted: candidate measured 0.200 ms, predicted 0.150 ms (band 0.140..0.160), error -25.0%, outside the "
            f"band ({pred})")
    assert line in out and line not in without
    lines = [x.strip() for x in out.splitlines()]
    assert lines[lines.index(line) - 1].endswith("[step_time_us]")  # under the train row's step time
    kept = "".join(x for x in out.splitlines(keepends=True) if line not in x)
    assert kept.replace(f"{base}, {pred}", str(base)) == without
    assert "measured 0.200 ms, predicted 0.150 ms" in md.read_text()
    (row,) = [r for r in json.loads(js.read_text())["rows"] if r["metric"] == "step_time_us"]
    assert row["predicted"]["step_us"] == pytest.approx(150.0) and row["predicted"]["band_us"] == pytest.approx([140, 160])


def test_a_windows_mean_step_is_put_beside_the_measured_mean_not_the_median(write_doc, tmp_path, capsys):
    """Model averaging every 2 steps, predicted 125 us a step (band 115..135: test_predict_train's window). Its run took
    100 us for three steps in four and 400 us for the fourth: median 100 us, mean 175 us. Beside a window's mean step
    are the run's mean (predict train --measured, the report, compare) and no per-rank medians."""
    cal = write_doc("cal.json", make_doc([calibration_train()] + sweep_records()))
    plan = write_doc("plan.json", plan_doc([plan_record(r, sched=averaging_window()) for r in (0, 1)]))
    samples = [100.0, 100.0, 100.0, 400.0] * 5
    averaging = measured_train(step=100.0, step_time_us=stats(samples), step_samples_us=samples, timed_steps=20)
    run = write_doc("run.json", make_doc([averaging]))
    pred = tmp_path / "pred.json"
    assert main(["predict", "train", "--calibration", str(cal), "--plan", str(plan), "--measured", str(run),
                 "--json", str(pred)]) == 0
    out = capsys.readouterr().out
    assert "# measured step (mean of 20): 175.0 us; error (predicted - measured) / measured -28.6%" in out
    (rec,) = load_results([str(pred)])[0].records
    assert rec["window_steps"] == 2 and rec["measured"]["step_us"] == 175.0
    # A window's per-rank timings are the record's medians (a step that does not communicate): left out; memory is
    # each rank's peak over the run, the same for a window as for one step.
    assert all(r[f.field] is None for r in rec["measured"]["ranks"] for f in MEASURED)
    beside = "measured 0.175 ms, predicted 0.125 ms (band 0.115..0.135), error -28.6%, outside the band"
    (alert,) = [b for b in section([pred, run], ["predicted", "measured"]) if b["kind"] == "alert"]
    assert alert["text"].endswith(f"{NAME}, measured in measured: {beside}")
    base = write_doc("base.json", make_doc([measured_train(step=100.0)]))
    main(["compare", str(base), str(pred), str(run)])
    assert f"predicted: candidate {beside} ({pred})" in capsys.readouterr().out
