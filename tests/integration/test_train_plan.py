"""`trainscope train ... --plan N` (issue #41): what each rank of a layout at N ranks holds, planned in one process by
the trainer's own placement, is what the real run at N ranks records, rank by rank: the layout's model-state formula
exactly, and the activation buffers. Each rank's one-step schedule (or window of steps, where they differ: model
averaging every K) has exactly the collectives the run counted, and is well formed: every op waited for after its
issue, the members' ops matching, a replay that finishes. Plus its refusals, one line each."""
import json
from collections import Counter, defaultdict

import pytest

from helpers import run_trainscope

MLP = ["--model", "mlp", "--preset", "tiny", "--batch", 8]
TRANSFORMER = ["--model", "transformer", "--preset", "tiny", "--batch", 8]
CNN = ["--model", "cnn", "--preset", "tiny", "--batch", 8]
# Expert parallelism's exchanges depend on the routing, which a plan takes balanced (layers/moe.h): at a capacity a
# quarter of a balanced expert's share, every expert of this seed's routers overflows it on every rank, so each rank
# sends each expert `capacity` rows, the exchange the plan assumes, and the run's alltoallv bytes are comparable.
MOE = ["--model", "transformer", "--preset", "moe-tiny", "--batch", 8, "--capacity-factor", 0.25]
AVERAGE_EVERY_3 = ["--sync", "average", "--average-every", 3]
RUN = ["--steps", 2, "--warmup-steps", 1, "--no-ceiling"]
# name: (model, layout flags, ranks)
LAYOUTS = {
    "dp2-zero0-micro2": (MLP, ["--micro-batches", 2], 2),
    "dp2-zero0-overlap-off": (TRANSFORMER, ["--overlap", "off"], 2),
    "dp2-zero1": (TRANSFORMER, ["--zero", 1, "--bucket-mb", 0.05], 2),
    "dp2-zero2-micro2": (MLP, ["--zero", 2, "--micro-batches", 2], 2),
    "dp2-zero3": (MLP, ["--zero", 3], 2),
    "dp2-zero3-prefetch0": (TRANSFORMER, ["--zero", 3, "--prefetch", 0, "--micro-batches", 2], 2),
    "tp2": (TRANSFORMER, ["--tp", 2, "--recompute", "full"], 2),
    "tp2-mlp-paired": (MLP, ["--tp", 2, "--set", "depth=3"], 2),  # 4 Linears in 2 pairs: every FLOP split
    "pp2": (TRANSFORMER, ["--pp", 2, "--micro-batches", 4, "--pp-schedule", "gpipe"], 2),
    "pp2-1f1b": (TRANSFORMER, ["--pp", 2, "--micro-batches", 4, "--pp-schedule", "1f1b"], 2),
    "dp2xpp2": (MLP, ["--pp", 2, "--micro-batches", 2], 4),
    "ps": (MLP, ["--sync", "ps"], 2),
    # ps-async: each rank's own compute (no ops: its ranks share no step) and the facts of its steady state.
    "ps-async-dedicated": (MLP, ["--sync", "ps-async", "--staleness", 1, "--ps-servers", 1], 3),
    "ps-async-shards2": (MLP, ["--sync", "ps-async", "--ps-shards", 2], 2),
    # Windows of 2 and 3 steps (the run's K timed steps hold one averaging, wherever the cadence starts: RUNS).
    "dp2-average-every2": (MLP, ["--sync", "average", "--average-every", 2], 2),
    "dp2-average-every2-optimizer": (TRANSFORMER, ["--sync", "average", "--average-every", 2, "--average-optimizer"], 2),
    "dp3-average-every3-sgd-optimizer": (MLP[:-1] + [12], [*AVERAGE_EVERY_3, "--average-optimizer", "--optimizer", "sgd"], 3),
    "dp2-syncbn-micro2": (CNN, ["--sync-bn", "on", "--micro-batches", 2], 2),
    "ep2-recompute-micro2": (MOE, ["--ep", 2, "--recompute", "full", "--micro-batches", 2], 2),
    "ep2xdp2": (MOE, ["--ep", 2], 4),
    "ep2xtp2": (MOE, ["--ep", 2, "--tp", 2], 4),
    "ep2xpp2": (MOE, ["--ep", 2, "--pp", 2, "--micro-batches", 2], 4),
    "ep2xdp2-zero2": (MOE, ["--ep", 2, "--zero", 2], 4),
    "ep2xdp2-zero1-lamb": (MOE, ["--ep", 2, "--zero", 1, "--optimizer", "lamb"], 4),
    "ep2xdp2-zero3": (MOE, ["--ep", 2, "--zero", 3, "--prefetch", 2], 4),
}
# A layout's run where RUN's timed step is not a multiple of its window: K timed steps after the warm-up one.
RUNS = {name: ["--steps", every + 1, "--warmup-steps", 1, "--no-ceiling"] for name, every in
        (("dp2-average-every2", 2), ("dp2-average-every2-optimizer", 2), ("dp3-average-every3-sgd-optimizer", 3))}


def records(path, kind):
    return [r for r in json.loads(path.read_text())["records"] if r["kind"] == kind]


@pytest.fixture(scope="module", params=list(LAYOUTS))
def pair(request, tmp_path_factory, validate):
    """The layout planned for N ranks in one process, and trained for real at N ranks."""
    model, layout, ranks = LAYOUTS[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    plan_path, run_path = tmp / "plan.json", tmp / "run.json"
    r = run_trainscope(["train", *model, *layout, "--plan", ranks, "--json", plan_path])
    assert r.rc == 0, r.err
    plan_doc = json.loads(plan_path.read_text())
    validate(plan_doc)
    r = run_trainscope(["train", *model, *layout, *RUNS.get(request.param, RUN), "--json", run_path], np=ranks,
                       timeout=300)
    assert r.rc == 0, r.err
    (train,) = records(run_path, "train")
    return records(plan_path, "train_plan"), train


def test_one_record_per_rank(pair):
    plan, train = pair
    assert [p["rank"] for p in plan] == list(range(train["world_size"]))
    assert all(p["layout"] == train["layout"]["name"] for p in plan)


def test_model_state_formula_is_the_runs_rank_by_rank(pair):
    plan, train = pair
    assert [p["formula_bytes"] for p in plan] == [m["formula_bytes"] for m in train["memory"]["ranks"]]


def test_activations_are_the_runs_rank_by_rank(pair):
    """The plan counts the buffers the run allocates before its first step (its stage model's, the pipeline's kept
    inputs); the steps hold no other activation buffer, so the run's peak is the plan's."""
    plan, train = pair
    assert [p["activation_bytes"] for p in plan] == [m["peak_bytes"]["activations"] for m in train["memory"]["ranks"]]


def test_flops_add_up_to_the_runs(pair):
    """Each rank's flops_per_step counts its stage's layers whole (the model's FLOPs, whatever slice it holds): one
    tensor-parallel slice's ranks (tp_rank 0: what predict's MFU sums) add up to the run's count (3 forwards per
    micro-batch, per data-parallel rank), and every slice counts the same."""
    plan, train = pair
    assert sum(p["flops_per_step"] for p in plan if p["coordinates"].get("tp_rank", 0) == 0) == \
        pytest.approx(train["flops_per_step"])
    assert sum(p["flops_per_step"] for p in plan) == pytest.approx(train["flops_per_step"] * train["layout"]["tp"])


def issues(plan):
    return [e for e in plan["schedule"]["events"] if "issue" in e]


def steps(plan):
    """The steps the schedule's window spans (1: every step alike)."""
    return plan["schedule"]["steps"]


def test_schedule_has_the_runs_collectives(pair):
    """The record's collectives are process 0's: rank 0's planned ops, per (group, size, op, bytes), over the timed
    steps (a multiple of the window's: any K consecutive steps hold one of each of its steps), are its rows exactly."""
    plan, train = pair
    windows, rest = divmod(train["timed_steps"], steps(plan[0]))
    assert rest == 0
    planned = Counter((e["group"], e["group_size"], e["op"], e["bytes"]) for e in issues(plan[0]))
    rows = {(c["group"], c["group_size"], c["op"], c["bytes"]): c["count"] for c in train["collectives"]}
    assert {k: n * windows for k, n in planned.items()} == rows


def test_schedule_waits_for_every_op_after_issuing_it(pair):
    plan, _ = pair
    for p in plan:
        events = p["schedule"]["events"]
        issued = {e["issue"]: i for i, e in enumerate(events) if "issue" in e}
        assert len(issued) == len(issues(p)), "ids unique"
        waits = [(e["wait"], i) for i, e in enumerate(events) if "wait" in e]
        assert sorted(w for w, _ in waits) == sorted(issued)
        assert all(issued[w] < i for w, i in waits)
        assert [e.get("compute") for e in events].count("optimizer") == steps(p)


def shares(p, tp):
    """Each layer's forward FLOPs the rank computes: its slice's, 1/tp, where tensor parallelism splits the layer, its
    whole forward_flops where the layer is replicated: the transformer's LM head (its embeddings are not layers, its
    layernorms count no FLOPs), the mlp's last Linear when it has no partner (an odd count of Linears: mlp.cpp)."""
    whole = {lay["index"]: lay["forward_flops"] for lay in p["layers"]}
    if tp == 1:
        return whole
    assert p["stages"] == 1, "the rule below needs the whole model's layers"
    if p["preset"].startswith("moe"):  # a block's attention is split, its mixture whole (moe.h): the record has no parts
        pytest.skip("a mixture-of-experts block's share under tp is its attention's slice and its experts whole")
    computing = [i for i, f in whole.items() if f > 0]
    replicated = {computing[-1]} if p["model"] == "transformer" or len(computing) % 2 else set()
    return {i: f if i in replicated else f / tp for i, f in whole.items()}


def test_schedule_computes_each_ranks_share_of_the_plans_flops(pair):
    """Forward and backward (2 forwards) of every layer and micro-batch, each at the FLOPs the rank computes (its
    tensor-parallel slice's share; the record's flops_per_step stay the model's): at tp 1 the plan's 3 forwards per
    micro-batch, with every layer split the model's over tp, in each step of the window. Recomputation (--recompute, a
    pipeline stage's forward run again) is extra, its own events."""
    plan, train = pair
    tp = train["layout"]["tp"]
    for p in plan:
        share = shares(p, tp)
        computed = [e for e in p["schedule"]["events"] if e.get("compute") in ("forward", "backward")]
        for e in computed:
            assert e["flops"] == pytest.approx(share[e["layer"]] * (2 if e["compute"] == "backward" else 1)), e
        whole = sum(lay["forward_flops"] for lay in p["layers"])
        assert sum(e["flops"] for e in computed) == \
            pytest.approx(p["flops_per_step"] * steps(p) * sum(share.values()) / whole)
        if tp > 1 and p["model"] == "mlp":  # tp2-mlp-paired: every Linear split, the rank computes the model's / tp
            assert sum(share.values()) == whole / tp
            assert sum(e["flops"] for e in computed) == pytest.approx(p["flops_per_step"] * steps(p) / tp)


def test_members_see_the_same_ops(pair):
    """The k-th collective on a members list is one operation on every member (same op and bytes); the k-th send from
    a to b is the k-th recv at b from a, of the same bytes."""
    plan, _ = pair
    seen = defaultdict(dict)  # (members, kind) -> rank -> [(op, bytes)]
    for p in plan:
        for e in issues(p):
            assert p["rank"] in e["members"] and e["members"] == sorted(e["members"])
            if e["op"] in ("send", "recv"):
                a, b = (p["rank"], e["peer"]) if e["op"] == "send" else (e["peer"], p["rank"])
                seen[(a, b), "p2p"].setdefault(e["op"], []).append(e["bytes"])
            else:
                seen[tuple(e["members"]), "collective"].setdefault(p["rank"], []).append((e["op"], e["bytes"]))
    for (members, kind), by in seen.items():
        if kind == "p2p":
            assert by.get("send") == by.get("recv"), members
        else:
            assert sorted(by) == list(members) and len({tuple(v) for v in by.values()}) == 1, members


def test_schedule_replays_to_the_end(pair):
    """Every rank's events run in order, an op done once each of its sides issued it, a wait blocking until then:
    the ranks' schedules together finish (no rank waits for an op its peers never issue)."""
    plan, _ = pair
    events = {p["rank"]: p["schedule"]["events"] for p in plan}
    at = dict.fromkeys(events, 0)
    key_of, posted, counts = {}, defaultdict(set), defaultdict(int)
    progress = True
    while progress:
        progress = False
        for r, evs in events.items():
            while at[r] < len(evs):
                e = evs[at[r]]
                if "issue" in e:
                    side = (r, e["peer"]) if e["op"] == "send" else (e["peer"], r) if e["op"] == "recv" else tuple(e["members"])
                    k = (side, "peer" in e, counts[r, side, "peer" in e])  # the k-th op of its sides
                    counts[r, side, "peer" in e] += 1
                    key_of[r, e["issue"]] = k
                    posted[k].add(r)
                elif "wait" in e:
                    k = key_of[r, e["wait"]]
                    if posted[k] != set(k[0]):
                        break
                at[r] += 1
                progress = True
    assert at == {r: len(evs) for r, evs in events.items()}


@pytest.mark.parametrize("args,line", [
    (["--plan", -1], "--plan"),
    (["--tp", 3, "--plan", 2], "--tp"),
])
def test_refusals_are_one_line(args, line):
    r = run_trainscope(["train", *MLP, *args])
    assert r.rc == 2, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1 and line in r.err


def test_refused_under_mpirun():
    r = run_trainscope(["train", *MLP, "--plan", 2], np=2)
    assert r.rc != 0
    assert "without mpirun" in r.err


def test_ps_async_plans_each_ranks_compute_and_the_facts_its_run_has(pair):
    """ps-async's ranks share no step: a worker's schedule is its forwards and backwards and its shard's update (none
    for a worker that serves nothing), a dedicated server's the update alone; the facts are the run's: as many
    workers, servers and staleness, a worker's bytes per step its shards', every parameter in one server's shard."""
    plan, train = pair
    if "ps_async" not in train:  # every other layout's steps are a schedule of ops: no facts of a steady state
        assert not [p["rank"] for p in plan if "ps_async" in p]
        return
    facts = [p["ps_async"] for p in plan]
    run = train["ps_async"]
    servers = run["servers"] or train["layout"]["ps_shards"]  # the record's servers are the dedicated ones
    assert {(f["workers"], f["servers"], f["dedicated"], f["staleness"]) for f in facts} == \
        {(run["workers"], servers, run["servers"] > 0, run["staleness_bound"])}
    assert {f["servers"] * f["shard_bytes"] for f in facts} == {run["bytes_per_step"]}
    assert sorted(f["shard"] for f in facts if f["shard"] is not None) == list(range(servers))
    assert sum(f["shard_elements"] for f in facts) == train["parameters"]
    for p, f in zip(plan, facts):
        events = p["schedule"]["events"]
        assert not issues(p) and [e["elements"] for e in events if e.get("compute") == "optimizer"] == [f["shard_elements"]]
        computed = Counter(e["compute"] for e in events if e.get("compute") in ("forward", "backward"))
        layers = len(p["layers"]) * p["micro_batches"]
        assert computed == (Counter(forward=layers, backward=layers) if f["worker"] else Counter()), p["rank"]
        assert f["worker"] == (p["rank"] < run["workers"]) and (p["flops_per_step"] > 0) == f["worker"]


def test_ps_async_says_what_its_plan_is_on_the_console():
    r = run_trainscope(["train", *MLP, "--sync", "ps-async", "--ps-servers", 1, "--plan", 3])
    assert r.rc == 0, r.err
    assert "# schedule: --sync ps-async: each rank's own compute (its workers' forwards and backwards, its servers' " \
        "updates), no ops: its ranks share no step, each worker sending " in r.out


def test_a_window_of_steps_is_said_on_the_console():
    r = run_trainscope(["train", *MLP, "--sync", "average", "--average-every", 3, "--plan", 2])
    assert r.rc == 0, r.err
    assert "communication ops per window of 3 steps (they differ) per rank" in r.out


@pytest.mark.parametrize("model", [MLP, TRANSFORMER], ids=["mlp", "transformer"])
def test_zero3_sends_a_layers_gradients_beside_the_next_layers_backward(model, tmp_path):
    """ZeRO-3 keeps two layers' gradient buffers (the formula's in-flight gradients): the reduce-scatter of one
    layer's gradients is retired only after the next layer with parameters has run its backward beside it, and at most
    one is in flight when the next is sent. Until 2026-11-30 it was retired before that backward: nothing hid it."""
    path = tmp_path / "plan.json"
    r = run_trainscope(["train", *model, "--zero", 3, "--plan", 2, "--json", path])
    assert r.rc == 0, r.err
    events = records(path, "train_plan")[0]["schedule"]["events"]
    sends = {e["issue"]: i for i, e in enumerate(events) if e.get("op") == "reduce_scatter"}
    retired = {e["wait"]: i for i, e in enumerate(events) if e.get("wait") in sends}
    backward = [i for i, e in enumerate(events) if e.get("compute") == "backward"]
    order = sorted(sends, key=sends.get)
    assert len(order) > 2
    for sent, following in zip(order, order[1:]):
        assert retired[sent] < sends[following]  # one in flight at a time
        # The backward of the layer whose gradients are sent next (the last before they are); the embeddings' (the
        # leading group's, sent last) is not a layer's compute in the plan.
        beside = [i for i in backward if sends[sent] < i < sends[following]]
        if following != order[-1] or beside:
            assert beside and beside[-1] < retired[sent], (sent, events)
