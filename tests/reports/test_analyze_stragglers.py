"""analyze's straggler rule on hand-made traces: a rank's skew of a step is its largest at the step's collectives and
the rank is judged on the median over its steps (the train record's rule, bench/train/arrival_skew.h), so a hold-up
once a step counts in full however many collectives follow it in the step."""
import json

from synthetic import span

from reports.html.plots import PlotSink
from reports.html.profile import build_profile
from reports.traces.analyze import analyze, format_table

STEP_US = 10_000


def write_ranks(d, late_by, collectives_per_step=3, steps=4, evaluation=None):
    """Two ranks of `steps` steps with `collectives_per_step` all-reduces of group "dp0" 100 us apart from 200 us into
    each step; rank 1 starts each step's first all-reduce `late_by` us later (a hold-up before it), rank 0 waiting in
    it until then, and the others together after it. `evaluation`: rank 1's lateness at one more all-reduce after the
    last step (outside every step)."""
    d.mkdir()
    for rank in (0, 1):
        events = []
        for s in range(steps):
            lo = s * STEP_US
            events.append(span(f"step {s}", "step", lo, lo + STEP_US - 1, step=s))
            for k in range(collectives_per_step):
                start = lo + 200 + 100 * k + (late_by if rank == 1 or k > 0 else 0)
                end = lo + 220 + 100 * k + late_by
                events.append(span("all_reduce", "communication", start, end, group="dp0"))
        if evaluation is not None:
            start = steps * STEP_US + 100 + (evaluation if rank == 1 else 0)
            events.append(span("all_reduce", "communication", start, start + 20, group="dp0"))
        (d / f"rank-{rank}.json").write_text(json.dumps({"traceEvents": events,
                                                         "distributedInfo": {"rank": rank, "world_size": 2}}))
    return d


def test_a_hold_up_once_a_step_is_named_however_many_collectives_follow_it(tmp_path):
    result = analyze(write_ranks(tmp_path / "t", late_by=40), threshold_ms=0.01)
    rows = {s["rank"]: s for s in result["stragglers"]}
    # per collective rank 1's skews are 40, 0, 0 in every step: their median 0; per step 40 in each of the 4 steps
    assert (rows[1]["steps"], rows[1]["collectives"], rows[1]["median_skew_us"], rows[1]["max_skew_us"]) == (4, 12, 40, 40)
    assert (rows[0]["steps"], rows[0]["median_skew_us"]) == (4, 0)
    assert result["late_ranks"] == [1] and rows[1]["late"] and not rows[0]["late"]
    out = format_table(result)
    assert "  rank   1: median 0.040, max 0.040 over 4 step(s), 12 collective(s)  <- late" in out
    assert "# stragglers: rank 1" in out


def test_below_the_threshold_nobody_is_named(tmp_path):
    result = analyze(write_ranks(tmp_path / "t", late_by=40), threshold_ms=0.05)
    assert result["late_ranks"] == [] and {s["rank"]: s["median_skew_us"] for s in result["stragglers"]} == {0: 0, 1: 40}


def test_a_collective_outside_the_steps_is_a_step_of_its_own(tmp_path):
    """An evaluation's all-reduce after the last step, rank 1 late there by 500 us: one more step's skew, not part of
    the last step's (the max shows it; the median over the five stays the steps' 40)."""
    result = analyze(write_ranks(tmp_path / "t", late_by=40, evaluation=500), threshold_ms=0.01)
    row = result["stragglers"][1]
    assert (row["steps"], row["collectives"], row["median_skew_us"], row["max_skew_us"]) == (5, 13, 40, 500)


def test_the_reports_straggler_table_has_the_steps(tmp_path):
    """The report's table (analyze's default threshold, 1 ms): rank 1 2 ms late once a step."""
    section = build_profile(write_ranks(tmp_path / "t", late_by=2000), PlotSink(tmp_path))
    table = next(b for b in section["blocks"] if b.get("caption", "").startswith("Arrival skew"))
    assert table["columns"] == ["rank", "steps", "collectives", "median skew", "max skew", "straggler"]
    assert table["rows"] == [[0, 4, 12, "0.000", "0.000", ""], [1, 4, 12, "2.000", "2.000", "late"]]
