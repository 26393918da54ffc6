"""SyncBatchNorm (issue #21): under data parallel the CNN's batch norm normalises over the whole batch
(--sync-bn auto: on for the cnn under --dp on the CPU), so dp ranks train as one process of the same
global batch; with --sync-bn off each rank normalises its own samples, which is one process running one
micro-batch per rank, not the plain one-process run. The record says which (layout.sync_bn), and the
statistics' all-reduces are in its collectives. Bad uses are one line, exit 2, before any work."""
import json

import pytest

from helpers import run_trainscope

STEPS = 5
CNN = ["--model", "cnn", "--preset", "tiny", "--batch", 8, "--lr", 0.05, "--optimizer", "sgd", "--steps", STEPS,
       "--warmup-steps", 1, "--no-ceiling"]
RTOL = 1e-5


def train(tmp_path, name, args, np=None):
    out = tmp_path / f"{name}.json"
    r = run_trainscope(["train", "--json", out] + CNN + list(args), np=np, timeout=600)
    assert r.rc == 0, r.err
    (rec,) = [x for x in json.loads(out.read_text())["records"] if x["kind"] == "train"]
    return rec


def losses(rec):
    return [p["loss"] for p in rec["loss_curve"]]


def close(a, b, rtol=RTOL):
    return len(a) == len(b) and all(abs(x - y) <= rtol * max(1.0, abs(y)) for x, y in zip(a, b))


def test_dp2_trains_as_one_process_with_sync_bn_and_as_micro_batches_without(tmp_path):
    one = train(tmp_path, "one", [])
    micro2 = train(tmp_path, "micro2", ["--micro-batches", 2])
    synced = train(tmp_path, "dp2", [], np=2)
    own = train(tmp_path, "dp2-off", ["--sync-bn", "off"], np=2)
    assert synced["layout"]["sync_bn"] == "on" and own["layout"]["sync_bn"] == "off"
    assert one["layout"]["sync_bn"] == "off", "one process: nothing to synchronise"
    assert close(losses(synced), losses(one)), (losses(synced), losses(one))
    assert close(losses(own), losses(micro2)), (losses(own), losses(micro2))
    # The two references differ (batch statistics over 8 samples or over 4), so the checks above can fail.
    assert not close(losses(one), losses(micro2), 1e-4)
    # Each batch norm layer's sums are float64 all-reduces over the data-parallel group: more of them, and
    # larger than the loss's one value, than the run without SyncBatchNorm issues.
    def small_all_reduces(rec):
        return sum(c["count"] for c in rec["collectives"] if c["op"] == "all_reduce" and 8 < c["bytes"] <= 8 * 1024)
    assert small_all_reduces(synced) > small_all_reduces(own)


@pytest.mark.parametrize("args,line", [
    (["--model", "mlp", "--sync-bn", "on"], "--sync-bn on: the mlp has no batch norm"),
    (["--model", "cnn", "--sync-bn", "maybe"], "--sync-bn"),
    (["--model", "cnn", "--sync-bn", "on", "--device", "cuda"], "--sync-bn on: SyncBatchNorm runs on the CPU only"),
])
def test_bad_sync_bn_is_one_line(args, line):
    r = run_trainscope(["train", "--steps", 2, "--no-ceiling"] + args)
    assert r.rc == 2, r.err
    assert len(r.error_lines()) == 1 and line in r.error_lines()[0], r.err
