"""Expert parallelism's measurement (issue #42): each MoE layer's all-to-alls in the train record, per direction over
the timed steps (process 0's), set against what the routing implies, and their console lines. The planted router skew
(TRAINSCOPE_FAULT=router on rank 0) makes rank 0's routing exact: every token to experts 0 and 1, each keeping its
capacity. No figure here is a time: times and bandwidths are only checked to be there."""
import json
import math
import re

from helpers import run_trainscope

E, K, FACTOR, T = 4, 2, 1.25, 32  # moe-tiny (presets.cpp), --capacity-factor's default
DIRECTIONS = ("dispatch", "combine", "combine_backward", "dispatch_backward")


def train(where, name, args, np=2, env=None):
    out = where / f"{name}.json"
    r = run_trainscope(["train", "--model", "transformer", "--preset", "moe-tiny", "--lr", 1e-3, "--no-ceiling", *args,
                        "--json", out], np=np, env=env, timeout=300)
    assert r.rc == 0, (name, r.err)
    doc = json.loads(out.read_text())
    (rec,) = [x for x in doc["records"] if x["kind"] == "train"]
    return rec, r.out, doc


def test_the_all_to_alls_are_what_a_skewed_routing_sends(tmp_path, validate):
    """Rank 0 (--batch 8 over ep 2, 2 micro-batches: N = 2 x 32 tokens each) routes N tokens to experts 0 and 1, each
    keeping min(N, capacity): it sends K min(N, capacity) rows per micro-batch to the experts (dispatch), and the same
    rows' gradients back to them (combine_backward, the same exchange matrix). What its experts send back (combine,
    dispatch_backward) depends on rank 1's routing: the two are each other's transpose, so they send alike."""
    steps, warmup, micro = 4, 1, 2
    rec, out, doc = train(tmp_path, "skewed", ["--ep", 2, "--batch", 8, "--micro-batches", micro, "--steps", steps,
                                               "--warmup-steps", warmup], env={"TRAINSCOPE_FAULT": "router:rank=0:scale=100"})
    validate(doc)
    tokens = 8 // 2 // micro * T
    capacity = math.ceil(FACTOR * tokens * K / E)
    channels = rec["config"]["resolved"]["model"]["hidden"]
    timed_forwards = (steps - warmup) * micro
    for layer in rec["moe"]["layers"]:
        assert layer["capacity"] == capacity and layer["micro_batches"] == steps * micro  # the routing counts the warmup
        a2a = layer["all_to_all"]
        assert a2a["group_size"] == 2 and set(a2a) == {"group_size", *DIRECTIONS}
        for d in DIRECTIONS:
            x = a2a[d]
            assert x["calls"] == timed_forwards, (layer["layer"], d, x)
            per_call = x["rows_sent"] * channels * 4 / x["calls"]
            # The busiest rank's buffer is at least this rank's, and no rank holds more than E capacity rows.
            assert per_call <= x["bytes_per_call"] <= x["largest_bytes"] <= E * capacity * channels * 4, (d, x)
            assert x["time_per_call_us"] > 0 and x["busbw_gbps"] > 0
        assert a2a["dispatch"]["rows_sent"] == a2a["combine_backward"]["rows_sent"] == timed_forwards * K * min(tokens, capacity)
        assert a2a["combine"]["rows_sent"] == a2a["dispatch_backward"]["rows_sent"]
        assert a2a["dispatch"]["bytes_per_call"] == a2a["combine_backward"]["bytes_per_call"]
        assert a2a["combine"]["bytes_per_call"] == a2a["dispatch_backward"]["bytes_per_call"]
        for passed, first, second in (("forward", "dispatch", "combine"), ("backward", "combine", "dispatch")):
            line = (rf"# moe {re.escape(layer['layer'])} all-to-all {passed} \(rank 0 of ep 2, per call\): {first} [\d.]+ K?i?B "
                    rf"[\d.]+ us \(busbw [\d.e+-]+ GB/s\), {second} [\d.]+ K?i?B [\d.]+ us \(busbw [\d.e+-]+ GB/s\)\n")
            assert re.search(line, out), out


def test_without_a_capacity_limit_every_assignment_goes_and_comes_back(tmp_path):
    """No limit, no warmup: the rows rank 0 dispatched are every assignment its router made."""
    rec, _, _ = train(tmp_path, "unlimited", ["--ep", 2, "--batch", 8, "--steps", 2, "--warmup-steps", 0,
                                              "--capacity-factor", 0])
    for layer in rec["moe"]["layers"]:
        a2a = layer["all_to_all"]
        assert layer["dropped"] == 0
        assert a2a["dispatch"]["rows_sent"] == a2a["combine_backward"]["rows_sent"] == layer["assignments"]
        assert a2a["dispatch"]["calls"] == layer["micro_batches"] == 2


def test_without_expert_parallelism_there_is_no_all_to_all(tmp_path):
    rec, out, _ = train(tmp_path, "dense", ["--batch", 4, "--steps", 3], np=None)
    assert all("all_to_all" not in layer for layer in rec["moe"]["layers"])
    assert "all-to-all" not in out


def test_a_recomputed_forward_exchanges_again_and_is_counted(tmp_path):
    """--recompute runs each mixture's forward a second time in the backward, all-to-alls included: those are traffic
    the step makes, so they count (the routing counts do not: test_moe.py)."""
    rec, _, _ = train(tmp_path, "recompute", ["--ep", 2, "--batch", 8, "--steps", 3, "--warmup-steps", 1, "--recompute", "full"])
    for layer in rec["moe"]["layers"]:
        calls = {d: x["calls"] for d, x in layer["all_to_all"].items() if d != "group_size"}
        assert calls == {"dispatch": 4, "combine": 4, "combine_backward": 2, "dispatch_backward": 2}, calls
