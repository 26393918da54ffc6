"""The readers take the stream of a run that did not finish (reports/common/stream.py): the run line, the records, a
line torn by the kill left out; a training run's steps made into its train record when it never wrote one,
and dropped when it did; the result marked incomplete in the report and in compare's verdict.

data/train-killed.jsonl is the stream of `trainscope train --model mlp --steps 100000 --no-ceiling --label killed`
killed with kill -9 after its 6th step (warm-up 2: 4 timed steps), as the binary wrote it."""
import copy
import json

import pytest
from synthetic import ROOT, make_doc, make_record

from reports.compare.compare import compare, format_json, verdict_line
from reports.common.errors import InputError
from reports.common.load import load_result
from reports.common.policy import Policy
from reports.common.stream import fold_training

KILLED = ROOT / "tests" / "reports" / "data" / "train-killed.jsonl"


def lines():
    return [json.loads(x) for x in KILLED.read_text().splitlines()]


def write_lines(tmp_path, objs, tail=""):
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(o) + "\n" for o in objs) + tail)
    return p


def test_a_killed_run_reads_as_its_train_record_marked_incomplete():
    r = load_result(KILLED)
    assert r.incomplete == ("the run did not finish (killed, hung or crashed): 6 record(s) streamed; "
                            "1 training run(s) read from their steps")
    (train,) = r.records
    assert train["kind"] == "train" and not train["completed"] and train["steps_done"] == 6
    assert [p["step"] for p in train["loss_curve"]] == list(range(6))
    assert train["loss"] == {"initial": train["loss_curve"][0]["loss"], "final": train["loss_curve"][-1]["loss"]}
    steps = [x for x in lines() if x["kind"] == "train_progress"]
    timed = [x["step_us"] for x in steps if x["timed"]]
    assert train["timed_steps"] == len(timed) == 4 and train["step_samples_us"] == timed
    ordered = sorted(timed)
    assert train["step_time_us"]["median"] == pytest.approx((ordered[1] + ordered[2]) / 2)
    assert train["throughput_per_s"] == pytest.approx(train["items_per_step"] / (train["step_time_us"]["median"] * 1e-6))
    assert train["phases_us"]["forward"]["n"] == 4
    assert train["error"].startswith("the run stopped after train step 5 without writing its train record")


def test_a_line_torn_by_the_kill_is_left_out_and_only_that_one(tmp_path):
    text = KILLED.read_text()
    torn = tmp_path / "torn.jsonl"
    torn.write_text(text + '{"kind": "train_progress", "train_st')
    assert load_result(torn).records[0]["steps_done"] == 6
    first, rest = text.split("\n", 1)
    inside = tmp_path / "inside.jsonl"
    inside.write_text(first + '\n{"kind": "train_progress", "train_st\n' + rest)
    with pytest.raises(InputError, match=r"inside.jsonl: line 2: not JSON"):
        load_result(inside)


def test_a_finished_stream_is_complete_and_its_progress_is_summed_up_by_its_record(tmp_path):
    objs = lines()
    made = load_result(KILLED).records[0]
    train = dict(made, completed=True)
    train.pop("error")
    end = dict(objs[0], ended_at="2026-11-25T02:00:00.000Z")
    r = load_result(write_lines(tmp_path, objs + [train, end]))
    assert r.incomplete == "" and r.records == [train]


def test_a_document_with_no_end_time_is_read_and_marked_incomplete(write_doc):
    doc = make_doc([make_record()])
    doc["run"]["ended_at"] = None  # a stream wrapped by hand: what the schema refused
    r = load_result(write_doc("wrapped.json", doc))
    assert r.incomplete.startswith("the run did not finish") and len(r.records) == 1


def test_what_is_not_a_stream_is_one_error(tmp_path):
    for text, message in [('{"kind": "collective"}\n{"kind": "run"}\n', "neither a JSON document nor a stream"),
                          ('{"kind": "run"}\n[1, 2]\n', "line 2: not a record")]:
        p = tmp_path / "x.jsonl"
        p.write_text(text)
        with pytest.raises(InputError, match=message):
            load_result(p)


def test_steps_are_folded_per_run_where_runs_follow_each_other():
    objs = [x for x in lines() if x["kind"] == "train_progress"]
    about = objs[0]["train"]
    other = dict(copy.deepcopy(about), world_size=2, completed=True)  # the next scale point: another run
    other.pop("error")
    folded, made = fold_training(objs + [other])
    assert made == 1 and [x["world_size"] for x in folded] == [1, 2] and folded[1] is other
    same = dict(copy.deepcopy(about), completed=True)  # the run's own record: its steps are summed up there
    folded, made = fold_training(objs + [{"kind": "kernel_ceiling"}, same])
    assert made == 0 and folded == [{"kind": "kernel_ceiling"}, same]
    folded, made = fold_training(objs[1:])  # steps without their run's description cannot be placed
    assert made == 0 and folded == []


def test_compare_marks_an_incomplete_side_and_never_passes_it():
    killed = load_result(KILLED)
    finished = copy.deepcopy(killed)
    finished.incomplete = ""
    # 4 steps on a busy machine: limits that let the same samples pass, so that only the end of the run decides
    quiet = Policy(threshold=10.0, min_samples=2, max_cv=10.0, max_others_busy=1.0, max_load_per_cpu=1e9)
    cmp = compare(finished, killed, quiet)
    assert all(r.outcome.value == "pass" for r in cmp.rows)  # the same samples
    assert cmp.outcome.value == "inconclusive" and cmp.exit_code == 3
    assert verdict_line(cmp) == ("verdict: inconclusive — a run did not finish, so what it did not measure cannot pass; "
                                 f"incomplete: candidate {KILLED}: {killed.incomplete}")
    assert json.loads(format_json(cmp))["incomplete"] == [f"candidate {KILLED}: {killed.incomplete}"]
