"""A prediction's error tracked across commits (issue #41): `predict train --measured RUN --json PRED` at each commit,
`history add PRED`, and the history holds the prediction as a series of its own, its predicted step and its absolute
error. A jump in the error (the measured step moved away from a prediction that held) is a change named at its commit
by `history check`; an error that stays is none; a prediction made without a measured run has no error series (no
zeros). The predictions are made by the command itself on test_predict_train.py's inputs: a predicted step of
exactly 150 us at every commit, so that the error is the measured step's alone."""
import pytest
from synthetic import make_doc
from test_predict_train import STEP, calibration_train, plan_doc, plan_record, sweep_records
from test_predicted_vs_measured import measured_train

from reports.__main__ import main
from reports.common.load import load_results

pytest.importorskip("reports.history.store", reason="the history store (issue 38's h-store part) is not here")

# The prediction's series name (common/identity.py's describe): its job, its step, how it was replayed (the calibration
# ran on MPI: auto progress is in-waits).
KEY = "predict train mlp tiny cpu float32 2 rank(s) dp=2 batch 16, micro-batch 8 x 1, progress in-waits"
QUIET = [160.0, 158.0, 163.0, 161.0, 159.0, 162.0]  # measured steps a few percent apart: errors of 5% to 8%
SLOW = [300.0, 310.0, 295.0, 305.0, 298.0, 302.0]   # a straggler: errors of 49% to 52%


def commit(i):
    return f"{i:02d}" * 20


@pytest.fixture
def predict_at(write_doc, tmp_path):
    """predict_at(i, measured_step or None): the paths of commit i's `predict train --json` result, with --measured a
    run of that step, and of that run (none without)."""
    cal = write_doc("cal.json", make_doc([calibration_train()] + sweep_records()))
    plan = write_doc("plan.json", plan_doc([plan_record(0), plan_record(1)]))

    def make(i, step):
        run = None if step is None else str(write_doc(f"run-{i}.json", make_doc([measured_train(step)])))
        out = tmp_path / f"pred-{i}.json"
        assert main(["predict", "train", "--calibration", str(cal), "--plan", str(plan),
                     *(["--measured", run] if run else []), "--json", str(out)]) == 0
        return str(out), run
    return make


def add(predict_at, db, steps, with_runs=False):
    """`history add PRED` per commit; with_runs: `history add RUN PRED`, the measured run beside its prediction."""
    for i, step in enumerate(steps):
        pred, run = predict_at(i, step)
        files = [run, pred] if with_runs and run else [pred]
        assert main(["history", "add", *files, "--commit", commit(i), "--branch", "main", "--db", db]) == 0


def test_the_prediction_states_its_absolute_error(predict_at):
    (res,) = load_results([predict_at(0, 200.0)[0]])  # the schema validated
    (rec,) = res.records
    assert rec["measured"]["error"] == pytest.approx((STEP - 200) / 200)
    assert rec["measured"]["abs_error"] == pytest.approx((200 - STEP) / 200)


def test_a_jump_in_the_error_is_a_change_at_its_commit(predict_at, tmp_path, capsys):
    db = str(tmp_path / "history.sqlite")
    add(predict_at, db, QUIET + SLOW)
    capsys.readouterr()
    assert main(["history", "check", "--db", db, "--match", "predict train"]) == 1
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("REGRESSION")]  # the error only: the prediction held
    assert line.startswith(f"REGRESSION: {KEY} [abs_error] on ")
    assert f"from commit {commit(6)[:10]} (after {commit(5)[:10]}): " in line
    assert "(6 run(s) before, 6 after)" in line
    assert "history check: 2 series up to commit" in out and "1 regression(s) among the newest 10 commits" in out


def test_a_steady_error_is_no_change(predict_at, tmp_path, capsys):
    db = str(tmp_path / "history.sqlite")
    add(predict_at, db, QUIET * 2)
    capsys.readouterr()
    assert main(["history", "check", "--db", db]) == 0
    assert "history check: 2 series up to commit" in capsys.readouterr().out


def test_show_lists_the_predicted_step_and_the_error_of_the_runs_that_had_one(predict_at, tmp_path, capsys):
    """Commits 1 and 3 predicted without a measured run: their error is absent from its series, not a zero. The
    measured runs, added beside their predictions, are series of their own (the train record's)."""
    db = str(tmp_path / "history.sqlite")
    add(predict_at, db, [200.0, None, 300.0, None], with_runs=True)
    capsys.readouterr()
    assert main(["history", "show", "--db", db, "--metric", "step_time_us"]) == 0
    assert capsys.readouterr().out.startswith("train mlp tiny cpu float32 2 rank(s) dp=2 ")
    assert main(["history", "show", "--db", db, "--match", "PREDICT TRAIN"]) == 0
    blocks = capsys.readouterr().out.split("\n\n")
    error, step = (b.splitlines() for b in blocks)
    assert error[0].startswith(f"{KEY} | abs_error (lower is better) | ")
    assert [(ln.split()[0], ln.split()[1], ln.split()[4]) for ln in error[2:]] == [
        ("0", commit(0)[:10], "0.25"), ("2", commit(2)[:10], "0.5")]
    assert step[0].startswith(f"{KEY} | step_us (us, lower is better) | ")
    assert [ln.split()[4] for ln in step[2:]] == ["150"] * 4


def test_predictions_without_a_measured_run_have_no_error_series(predict_at, tmp_path, capsys):
    db = str(tmp_path / "history.sqlite")
    add(predict_at, db, [None] * 4)
    capsys.readouterr()
    assert main(["history", "show", "--db", db, "--metric", "abs_error"]) == 2
    assert capsys.readouterr().err == "trainscope: error: no series in the history matches --metric abs_error\n"


def test_compare_pairs_no_prediction_with_another(predict_at, capsys):
    """Two predictions are no measurements to judge (one figure each, no samples): compare pairs neither
    (identity.NOT_COMPARED), as before they had a history, and says there is nothing to compare."""
    assert main(["compare", predict_at(0, 160.0)[0], predict_at(1, 300.0)[0]]) == 2
    got = capsys.readouterr()
    assert "# 0 compared:" in got.out and "trainscope: error: nothing to compare: no record of " in got.err
