"""compare judges a train record's quality like its speed: the final training loss and, where the run evaluated,
the held-out loss and accuracy are metrics of their own (lower loss, higher accuracy is better), each against a
relative threshold of its own, with no interval (a fixed seed trains bit for bit alike on one build). Real runs:
a learning rate 100x over, the same run twice, a run without evaluations; then the cases records can hold."""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from helpers import run_trainscope
from synthetic import ROOT, make_doc, make_train, noisy, stats

from reports.common.load import load_result
from reports.common.option_facts import config_version, options
from reports.common.policy import Policy, apply
from reports.compare.compare import Outcome, compare, format_json, format_junit, format_markdown, format_table

# A tiny MLP, 30 steps; evaluations on a small held-out split keep each one short.
MLP = ["--model", "mlp", "--preset", "tiny", "--steps", 30, "--no-ceiling", "--warmup-steps", 1]
EVAL = ["--synthetic-size", 2048, "--eval-every", 10, "--eval-batches", 4]
# Time is not these tests' subject, and the machine they run on may be busy: the candidate takes the baseline's step
# times (same_time), whose interval against themselves a few noisy steps still widen past 5%, and contention decides
# nothing here.
QUIET = 'max_others_busy = 100\nmax_load_per_cpu = 1e9\n[thresholds]\n"train.step_time_us" = 100\n[max_cvs]\ntrain = 100\n'


def train(tmp_path, name, *args):
    out = tmp_path / f"{name}.json"
    r = run_trainscope(["train", "--json", out, *MLP, *args], timeout=300)
    assert r.rc == 0, r.err
    return json.loads(out.read_text())


def the_train_record(doc):
    (rec,) = [r for r in doc["records"] if r["kind"] == "train"]
    return rec


def compare_cli(tmp_path, base, cand, *options):
    paths = []
    for name, doc in (("base", base), ("cand", cand)):
        paths.append(tmp_path / f"{name}-cmp.json")
        paths[-1].write_text(json.dumps(doc))
    policy = tmp_path / "quiet.toml"
    policy.write_text(QUIET)
    return subprocess.run([sys.executable, "-m", "reports", "compare", *map(str, paths), "--policy", str(policy),
                           "--json", str(tmp_path / "cmp.json"), *options], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def rows_of(tmp_path):
    return {r["metric"]: r for r in json.loads((tmp_path / "cmp.json").read_text())["rows"]}


def same_time(base, cand):
    """Both runs with one quiet series of step times, and the baseline's telemetry: what is compared is the training,
    not the machine's load (made one after the other beside other tests, the runs' own times may be as noisy as
    cv 98%, which leaves even identical samples' interval too wide to pass)."""
    samples = noisy(2000.0, 20.0, n=30)
    for doc in (base, cand):
        r = the_train_record(doc)
        r["step_time_us"], r["step_samples_us"] = stats(samples), samples
        r["throughput_per_s"] = r["items_per_step"] / (r["step_time_us"]["median"] * 1e-6)
    cand["records"] = ([r for r in cand["records"] if r["kind"] != "telemetry"]
                       + [r for r in base["records"] if r["kind"] == "telemetry"])
    return cand


def test_a_learning_rate_100x_over_is_a_regression_naming_the_loss(tmp_path):
    base = train(tmp_path, "base", *EVAL)
    lr = the_train_record(base)["config"]["lr"]
    cand = same_time(base, train(tmp_path, "lr100", *EVAL, "--lr", 100 * lr))
    # A build whose optimizer applied the learning rate 100x over: its options say what the baseline's say (the
    # identity pairs them), its training went wrong.
    the_train_record(cand)["config"]["lr"] = lr
    r = compare_cli(tmp_path, base, cand, "--junit", tmp_path / "cmp.xml")
    assert r.returncode == 1, r.stdout + r.stderr
    rows = rows_of(tmp_path)
    assert rows["final_loss"]["outcome"] == "regression" and rows["final_loss"]["change"] > 0.5
    assert rows["step_time_us"]["outcome"] == "pass"
    assert {"eval_loss", "eval_accuracy"} <= rows.keys()
    verdict = r.stdout.splitlines()[-1]
    assert verdict.startswith("verdict: regression") and "worse in quality" in verdict and "final_loss" in verdict
    failures = [c.get("name") for c in ET.parse(tmp_path / "cmp.xml").getroot().iter("testcase") if c.find("failure") is not None]
    assert any(name.endswith("[final_loss]") for name in failures)


def test_the_same_run_twice_passes_with_its_losses_unchanged(tmp_path):
    base = train(tmp_path, "one", *EVAL)
    cand = same_time(base, train(tmp_path, "two", *EVAL))
    r = compare_cli(tmp_path, base, cand)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = rows_of(tmp_path)
    for metric in ("final_loss", "eval_loss", "eval_accuracy"):
        assert rows[metric]["outcome"] == "pass" and rows[metric]["change"] == 0.0  # bit for bit: one build, one seed
    assert "no loss or accuracy worse beyond 5%" in r.stdout.splitlines()[-1]


def test_a_run_without_evaluations_compares_its_time_and_final_loss(tmp_path):
    base = train(tmp_path, "base")
    r = compare_cli(tmp_path, base, same_time(base, train(tmp_path, "cand")))
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(rows_of(tmp_path)) == ["final_loss", "step_time_us"]


def train_record(loss=2.2, evaluated=None, seed=1234, last_step=29, **extra):
    """A synthetic train record of train's defaults: its final loss, and (loss, accuracy) of its last evaluation."""
    config = {o.key: o.default for o in options("train") if o.recorded} | {"seed": seed}
    samples = noisy(2000.0, 20.0, n=10)
    rec = make_train(config=config, config_version=config_version(), step_time_us=stats(samples), step_samples_us=samples,
                     loss={"initial": 2.3, "final": loss},
                     loss_curve=[{"step": s, "loss": loss, "lr": 0.1, "grad_norm": 1.0} for s in range(last_step + 1)
                                 if loss is not None], **extra)
    if evaluated is not None:
        rec["eval"] = {"every": 10, "batches": 4, "split": None, "seconds": 0.1,
                       "points": [{"step": last_step + 1, "loss": evaluated[0], "accuracy": evaluated[1], "items": 64,
                                   "seconds": 0.1, "elapsed_s": 1.0, "train_s": 0.9}]}
    return rec


def judged(write_doc, base, cand, policy=None):
    b, c = (load_result(write_doc(n, make_doc([r]))) for n, r in (("b.json", base), ("c.json", cand)))
    cmp = compare(b, c, policy)
    return cmp, {r.metric: r for r in cmp.rows}


def test_accuracy_is_better_higher_and_each_figure_has_its_direction(write_doc):
    cmp, rows = judged(write_doc, train_record(evaluated=(1.0, 0.80)), train_record(loss=2.0, evaluated=(1.0, 0.60)))
    assert rows["eval_accuracy"].outcome == Outcome.REGRESSION and rows["eval_accuracy"].change == pytest.approx(0.25)
    assert rows["final_loss"].outcome == Outcome.IMPROVEMENT and rows["eval_loss"].outcome == Outcome.PASS
    assert cmp.exit_code == 1 and "eval_accuracy" in format_table(cmp).splitlines()[-1]


def test_the_quality_threshold_is_its_own_and_can_be_set_per_metric(write_doc, tmp_path):
    base, cand = train_record(loss=2.0), train_record(loss=2.2)  # 10% worse
    assert judged(write_doc, base, cand)[1]["final_loss"].outcome == Outcome.REGRESSION
    # A kind's threshold (and the run's) is for its times; a quality figure's is quality_threshold or KIND.METRIC.
    loose_times = Policy(threshold=0.5, thresholds={"train": 0.5})
    assert judged(write_doc, base, cand, loose_times)[1]["final_loss"].outcome == Outcome.REGRESSION
    assert judged(write_doc, base, cand, Policy(quality_threshold=0.15))[1]["final_loss"].outcome == Outcome.PASS
    assert apply(Policy(), {"quality_threshold": 15}).quality_threshold == 0.15  # a policy file's key, in percent
    b, c = write_doc("b.json", make_doc([base])), write_doc("c.json", make_doc([cand]))
    r = subprocess.run([sys.executable, "-m", "reports", "compare", b, c, "--threshold-for", "train.final_loss=15",
                        "--json", tmp_path / "o.json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode != 2, r.stderr
    assert rows_of_file(tmp_path / "o.json")["final_loss"]["outcome"] == "pass"


def rows_of_file(path):
    return {r["metric"]: r for r in json.loads(path.read_text())["rows"]}


@pytest.mark.parametrize("cand, why", [
    (train_record(loss=9.0, seed=7), "trained from other seeds (1234 vs 7)"),
    (train_record(loss=9.0, last_step=19), "taken at other steps (29 vs 19)"),
], ids=["seed", "steps"])
def test_losses_of_other_seeds_or_steps_are_not_compared(write_doc, cand, why):
    _, rows = judged(write_doc, train_record(), cand)
    assert rows["final_loss"].outcome == Outcome.INCONCLUSIVE and rows["final_loss"].reason == why


def test_a_figure_on_one_side_only_is_inconclusive_and_none_on_both_no_row(write_doc):
    cmp, rows = judged(write_doc, train_record(evaluated=(1.0, 0.8)), train_record())
    assert rows["eval_loss"].outcome == Outcome.INCONCLUSIVE and rows["eval_loss"].reason == "no held-out loss in the candidate"
    assert cmp.outcome == Outcome.INCONCLUSIVE
    _, rows = judged(write_doc, train_record(loss=None), train_record(loss=None))
    assert sorted(rows) == ["step_time_us"]


def test_quality_rows_in_every_output(write_doc):
    cmp, _ = judged(write_doc, train_record(evaluated=(1.0, 0.8)), train_record(loss=4.4, evaluated=(1.0, 0.8)))
    assert "[final_loss]  (final training loss worse beyond 5.0%)" in format_table(cmp)
    assert "| regression | train mlp tiny cuda bfloat16 1 rank(s) 8 items/step | final_loss |" in format_markdown(cmp)
    names = {c.get("name") for c in ET.fromstring(format_junit(cmp)).iter("testcase")}
    assert {"train mlp tiny cuda bfloat16 1 rank(s) 8 items/step [final_loss]",
            "train mlp tiny cuda bfloat16 1 rank(s) 8 items/step [eval_loss]"} <= names  # no two cases of one name
    row = next(r for r in json.loads(format_json(cmp))["rows"] if r["metric"] == "final_loss")
    assert row["family"] == "quality" and row["change"] == pytest.approx(1.0) and row["low"] is None


def test_the_reports_overlay_sets_the_quality_figures_side_by_side(write_doc, tmp_path):
    a = make_doc([train_record(loss=2.0, evaluated=(1.5, 0.5))])
    b = make_doc([train_record(loss=2.5, evaluated=(1.5, 0.4))])
    out = tmp_path / "ab"
    r = subprocess.run([sys.executable, "-m", "reports", "report", write_doc("a.json", a), write_doc("b.json", b), "-o", out,
                        "--label", "a", "--label", "b"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    html = (out / "index.html").read_text().replace("\n", "")
    assert "<caption>Final training loss, the runs side by side, change against a</caption>" in html
    assert "<td>2.0000</td><td>2.5000</td><td>+25.0%</td>" in html
    assert "<td>0.5000</td><td>0.4000</td><td>-20.0%</td>" in html  # held-out accuracy
