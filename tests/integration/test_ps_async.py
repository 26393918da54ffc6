"""--sync ps-async (issue #21): the asynchronous parameter server with bounded staleness. With --staleness 0
it is the synchronous parameter server (the same final parameters), with dedicated server processes
(--ps-servers) or with workers serving the shards; with S > 0 a fast worker runs ahead of a straggler by at
most S updates, and the record says how far behind every step was. Combinations it cannot run are one line."""
import json

import pytest

from helpers import run_trainscope

STEPS = 8
MLP = ["--model", "mlp", "--preset", "tiny", "--batch", 16, "--lr", 3e-3, "--optimizer", "adamw", "--weight-decay", 0.1]


def train(tmp_path, name, args, np=None, env=None, steps=STEPS):
    out = tmp_path / f"{name}.json"
    r = run_trainscope(["train", "--no-ceiling", "--steps", steps, "--warmup-steps", 1, "--json", out] + [str(a) for a in args],
                       np=np, env=env, timeout=600)
    assert r.rc == 0, r.err
    doc = json.loads(out.read_text())
    (rec,) = [x for x in doc["records"] if x["kind"] == "train"]
    return doc, rec


def assert_same_parameters(a, b, rtol=1e-5):
    assert a["parameter_norms"].keys() == b["parameter_norms"].keys()
    for name, norm in b["parameter_norms"].items():
        assert a["parameter_norms"][name] == pytest.approx(norm, rel=rtol, abs=1e-7), name


@pytest.mark.parametrize("np,flags", [(3, ["--ps-servers", 1]), (4, ["--ps-servers", 2]), (2, ["--ps-shards", 2])],
                         ids=["2-workers-1-server", "2-workers-2-servers", "2-workers-serving"])
def test_staleness_0_is_the_synchronous_parameter_server(tmp_path, validate, np, flags):
    """Every step waits for every earlier update: the parameters after the run are sync ps's with the same
    workers (2, batch 8 each), whoever serves; every step ran 0 updates behind."""
    _, sync = train(tmp_path, "sync", MLP + ["--sync", "ps"], np=2)
    doc, rec = train(tmp_path, "async", MLP + ["--sync", "ps-async", "--staleness", 0] + flags, np=np)
    validate(doc)
    assert_same_parameters(rec, sync)
    ps = rec["ps_async"]
    assert ps["staleness_bound"] == 0 and ps["workers"] == 2 and ps["staleness_max"] == 0
    assert ps["staleness_counts"] == [2 * STEPS]  # both workers' steps, all current
    assert rec["layout"]["sync"] == "ps-async" and rec["items_per_step"] == 16


def test_one_worker_and_one_server_train_as_one_process(tmp_path):
    """The worker's own loss is the global one when it is the only worker: the curve is one process's."""
    _, one = train(tmp_path, "one", MLP)
    _, rec = train(tmp_path, "ps", MLP + ["--sync", "ps-async", "--ps-servers", 1], np=2)
    for a, b in zip(rec["loss_curve"], one["loss_curve"], strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5) and a["staleness"] == 0
    assert_same_parameters(rec, one)


def test_a_fast_worker_runs_at_most_staleness_updates_ahead_of_a_straggler(tmp_path, validate):
    """Worker 1 sleeps 10 ms before every step: worker 0 runs ahead until it is S updates ahead, then waits;
    no step is more than S behind, and the run still trains the model (the loss falls by 7% over 60 steps
    here; 5% for one process)."""
    S, steps = 2, 60
    args = ["--model", "mlp", "--preset", "tiny", "--batch", 32, "--lr", 1e-2, "--optimizer", "adamw"]
    doc, rec = train(tmp_path, "stale", args + ["--sync", "ps-async", "--staleness", S, "--ps-servers", 1], np=3,
                     env={"TRAINSCOPE_FAULT": "delay:rank=1:ms=10"}, steps=steps)
    validate(doc)
    ps = rec["ps_async"]
    assert ps["staleness_max"] == S, ps  # the fast worker reached the bound
    assert sum(ps["staleness_counts"]) == 2 * steps and len(ps["staleness_counts"]) == S + 1
    assert all(0 <= p["staleness"] <= S for p in rec["loss_curve"])
    losses = [p["loss"] for p in rec["loss_curve"]]
    assert sum(losses[-10:]) / 10 < 0.97 * losses[0]


@pytest.mark.parametrize("S", [1, 4])
def test_a_dedicated_server_keeps_serving_workers_that_run_ahead(tmp_path, S):
    """mlp small's 4.6 MiB gradients: the server finishes an update before a worker has taken the previous
    version, and waits for that send while it serves (it once read a worker's state it does not have there and
    crashed); every step stays within the bound."""
    args = ["--model", "mlp", "--preset", "small", "--batch", 32, "--lr", 1e-3, "--sync", "ps-async", "--staleness", S,
            "--ps-servers", 1]
    _, rec = train(tmp_path, f"s{S}", args, np=3, steps=12)
    assert rec["ps_async"]["staleness_max"] <= S and sum(rec["ps_async"]["staleness_counts"]) == 2 * 12


@pytest.mark.parametrize("np,args,line", [
    (2, ["--staleness", 1], "--staleness and --ps-servers are --sync ps-async's"),
    (2, ["--sync", "ps-async", "--ps-servers", 2], "--ps-servers 2: must leave at least one of the 2 rank(s) to train"),
    (2, ["--sync", "ps-async", "--staleness", -1], "--staleness -1: must be between 0 (synchronous) and 1000"),
    (2, ["--sync", "ps-async", "--tp", 2], "--sync ps-async trains data parallel only"),
    (2, ["--sync", "ps-async", "--zero", 1], "--sync ps-async shards the optimizer on its servers already"),
    (2, ["--sync", "ps-async", "--clip-norm", 1], "--sync ps-async with --clip-norm"),
    (2, ["--sync", "ps-async", "--eval-every", 2], "--sync ps-async with --eval-every"),
    (2, ["--sync", "ps-async", "--optimizer", "lamb"], "--sync ps-async with --optimizer lamb"),
    (2, ["--sync", "ps-async", "--precision", "bfloat16"], "--sync ps-async with --precision bfloat16"),
])
def test_what_ps_async_cannot_run_is_one_line(tmp_path, np, args, line):
    r = run_trainscope(["train", "--no-ceiling", "--steps", 3, "--json", tmp_path / "x.json"] + [str(a) for a in args], np=np)
    assert r.rc == 2, r.err
    assert any(line in e for e in r.error_lines()), r.err
    assert not (tmp_path / "x.json").exists()
