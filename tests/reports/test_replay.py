"""The step replay (reports/predict/replay.py) on synthetic schedules with known costs: every expected figure is
written out from the schedule by hand (no timing). Costs are binary fractions, so sums are exact and compared with ==."""
import pytest
from hypothesis import given, settings, strategies as st

from reports.common.collective_facts import collective
from reports.common.errors import InputError
from reports.predict.fit import Fit
from reports.predict.formulas import AlgorithmFit
from reports.predict.replay import Progress, replay
from reports.predict.schedule import Compute, Optimizer, Phase, parse_window


class Costs:
    """Compute from a table per (rank, phase) (layer-independent unless `per_layer` says), ops from a function."""

    def __init__(self, phases=None, op=None, per_layer=None, late=None, host=None):
        self.phases = {"forward": 10.0, "backward": 20.0, "recompute": 10.0, "optimizer": 5.0, **(phases or {})}
        self.host = host or {}  # rank -> its host time per step (none unless given)
        self.op = op or (lambda op, group_size, nbytes: 0.0)
        self.per_layer = per_layer or {}  # layer -> forward time
        self.late = late or {}  # rank -> time added to its first forward of layer 0, micro-batch 0
        self.asked = []

    def compute_us(self, event, rank):
        if isinstance(event, Optimizer):
            return self.phases["optimizer"]
        assert isinstance(event, Compute)
        t = self.per_layer.get(event.layer, self.phases[event.phase.value])
        if event.phase is Phase.FORWARD and event.layer == 0 and event.micro_batch == 0:
            t += self.late.get(rank, 0.0)
        return t

    def host_us(self, rank):
        return self.host.get(rank, 0.0)

    def op_us(self, op, group_size, nbytes, members, in_place=False):
        self.asked.append((op, group_size, nbytes))
        return self.op(op, group_size, nbytes)


def fwd(layer, micro=0):
    return {"compute": "forward", "layer": layer, "micro_batch": micro, "flops": 100}


def bwd(layer, micro=0):
    return {"compute": "backward", "layer": layer, "micro_batch": micro, "flops": 200}


def opt():
    return {"compute": "optimizer", "elements": 1000}


def issue(id, op, members, nbytes, group="dp", peer=None):
    e = {"issue": id, "op": op, "group": group, "group_size": len(members), "members": list(members), "bytes": nbytes}
    if peer is not None:
        e["peer"] = peer
    return e


def wait(id):
    return {"wait": id}


# Ring all_reduce per step: alpha 1.5 us, beta 2^-10 us per byte. On 2 ranks 2(p-1) alpha + 2(p-1)/p n beta = 3 + n/1024.
RING = AlgorithmFit(collective("all_reduce"), Fit.single(1.5, 2.0 ** -10))


def ring_costs(**kw):
    return Costs(op=lambda op, p, n: RING.time_us(p, n), **kw)


def two_bucket_dp(nbytes=(4096, 16384)):
    """Two layers, data parallel on [0, 1]: layer 1's gradient bucket reduced while layer 0's backward runs."""
    return [fwd(0), fwd(1), bwd(1), issue(0, "all_reduce", (0, 1), nbytes[0]), bwd(0),
            issue(1, "all_reduce", (0, 1), nbytes[1]), wait(0), wait(1), opt()]


def test_data_parallel_with_a_ring_all_reduce_of_a_known_fit():
    """forwards 0..20, backward of layer 1 to 40; its bucket (3 + 4096/1024 = 7 us) runs 40..47 under layer 0's backward
    (40..60); layer 0's bucket (3 + 16 = 19 us) 60..79, exposed; the optimizer 79..84."""
    r = replay({0: two_bucket_dp(), 1: two_bucket_dp()}, ring_costs())
    assert RING.time_us(2, 4096) == 7.0 and RING.time_us(2, 16384) == 19.0
    assert r.step_us == 84.0
    for t in r.ranks:
        assert (t.step_us, t.compute_us, t.optimizer_us, t.waiting_us, t.transfer_us, t.pipeline_wait_us, t.idle_us) == \
            (84.0, 60.0, 5.0, 0.0, 19.0, 0.0, 0.0)
    assert [(o.op, o.members, o.bytes, o.start_us, o.end_us) for o in r.ops] == \
        [("all_reduce", (0, 1), 4096, 40.0, 47.0), ("all_reduce", (0, 1), 16384, 60.0, 79.0)]
    assert [o.issues for o in r.ops] == [((0, 0), (1, 0)), ((0, 1), (1, 1))]


def test_the_ring_cost_is_asked_at_the_groups_size():
    four = {r: [fwd(0), issue(7, "all_reduce", (0, 1, 2, 3), 1024), wait(7)] for r in range(4)}
    c = ring_costs()
    r = replay(four, c)
    assert c.asked == [("all_reduce", 4, 1024)]
    assert r.step_us == 10.0 + 6 * 1.5 + 1.5 * 1024 * 2.0 ** -10  # 2(p-1) alpha + 2(p-1)/p n beta at p = 4


def test_a_late_rank_shows_as_the_others_waiting_and_the_op_as_transfer():
    """Rank 1's first forward 12.5 us late: rank 0 waits 12.5 us for it, then the op's 19 us (both buckets' op 0 ends
    before layer 0's backward does, on both ranks)."""
    late = 12.5
    r = replay({0: two_bucket_dp(), 1: two_bucket_dp()}, ring_costs(late={1: late}))
    zero, one = r.rank(0), r.rank(1)
    assert (zero.waiting_us, zero.transfer_us) == (late, 19.0)
    assert (one.waiting_us, one.transfer_us) == (0.0, 19.0)
    assert zero.exposed_us == late + 19.0
    assert r.step_us == 84.0 + late and zero.step_us == one.step_us == r.step_us
    assert r.ops[1].last_arrival_us == 60.0 + late and r.ops[1].start_us == 60.0 + late


# ---- a window of steps: model averaging every K steps (the schedule's "steps") ----

def averaging_window(every, nbytes=4096):
    """--sync average --average-every K on [0, 1], one layer: K steps of forward, backward and optimizer, the K-th
    followed by the parameters' all-reduce, waited for (AverageSync::afterUpdate)."""
    events = []
    for step in range(every):
        events += [fwd(0), bwd(0), opt()]
    return {"events": events + [issue(0, "all_reduce", (0, 1), nbytes), wait(0)], "steps": every}


def test_a_window_of_k_steps_is_replayed_as_its_mean_step():
    """4 steps of 10 + 20 + 5 = 35 us, then the averaging's all-reduce (3 + 4096/1024 = 7 us) exposed: a window of
    147 us, a mean step of 36.75 us with 30 us compute, 5 us optimizer and 1.75 us exposed transfer per step."""
    events, steps = parse_window({0: averaging_window(4), 1: averaging_window(4)})
    assert steps == 4
    r = replay(events, ring_costs(), steps=steps)
    assert (r.steps, r.window_us, r.step_us) == (4, 147.0, 36.75)
    for t in r.ranks:
        assert (t.step_us, t.compute_us, t.optimizer_us, t.waiting_us, t.transfer_us, t.pipeline_wait_us, t.idle_us) == \
            (36.75, 30.0, 5.0, 0.0, 1.75, 0.0, 0.0)
    assert [(o.op, o.start_us, o.end_us) for o in r.ops] == [("all_reduce", 140.0, 147.0)]  # the window's time


def test_a_window_of_one_step_is_the_step_and_a_plan_without_steps_is_one():
    one = averaging_window(1)
    old = {"events": one["events"]}  # a plan from before windows
    assert parse_window({0: old, 1: one}) == ({0: one["events"], 1: one["events"]}, 1)
    r = replay(parse_window({0: old, 1: old})[0], ring_costs())
    assert r.steps == 1 and r.step_us == r.window_us == 35.0 + 7.0


WINDOW_ERRORS = {
    "steps zero": ({0: averaging_window(2) | {"steps": 0}}, "rank 0's schedule: \"steps\" is 0, not an integer >= 1"),
    "steps not an int": ({0: averaging_window(2) | {"steps": 2.0}}, "\"steps\" is 2.0"),
    "unknown key": ({0: averaging_window(2) | {"window": 2}}, "rank 0: the schedule is"),
    "no events": ({0: {"steps": 1}}, "not an object of \"events\" and \"steps\""),
    "optimizers": ({0: averaging_window(2) | {"steps": 3}},
                   "rank 0: its schedule spans 3 step(s) but has 2 optimizer event(s), one per step"),
    "ranks differ": ({0: averaging_window(2), 1: averaging_window(4)},
                     "rank 0's schedule spans 2 step(s), rank 1's 4: the ranks' windows differ"),
}


@pytest.mark.parametrize("case", WINDOW_ERRORS)
def test_a_bad_window_is_one_error_line(case):
    schedules, message = WINDOW_ERRORS[case]
    with pytest.raises(InputError) as e:
        parse_window(schedules)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_an_ops_placement_other_than_true_or_false_is_one_error_line(value):
    """A plan read without the result schema (replay's callers in Python): in_place is checked here too."""
    events = [issue(0, "all_reduce", [0], 64) | {"in_place": value}, wait(0)]
    with pytest.raises(InputError) as e:
        replay({0: events}, Costs())
    assert f'"in_place" is {value!r}, not true or false' in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("steps", [0, -2, True, 1.5])
def test_the_replays_steps_are_a_count(steps):
    with pytest.raises(InputError, match="steps: an integer >= 1"):
        replay({0: [fwd(0)]}, Costs(), steps=steps)


# ---- pipelines: the trainer's order (workloads/parallel/pipeline.cpp) ----
#
# pipelineSchedule: GPipe runs every forward (micro-batches 0..M-1), then every backward in reverse (M-1..0). 1F1B:
# stage s runs min(S - s - 1, M) warm-up forwards, then alternates one forward and one backward while forwards are left,
# then the remaining backwards, micro-batches in ascending order. pipelinePlan/Pipeline::step: before the first op it
# posts the receive that op needs; then per op it waits for everything the previous step posted (receives first, then
# sends), computes, and posts together the op's send (activation to s + 1 after a forward, gradient to s - 1 after a
# backward; none at the ends) and the receive the next op needs (activation from s - 1 before a forward, gradient
# from s + 1 before a backward); after the last op it waits for what that posted.

def pipeline_order(kind, stage, stages, micros):
    if kind == "gpipe":
        return [(True, i) for i in range(micros)] + [(False, i) for i in reversed(range(micros))]
    warmup = min(stages - stage - 1, micros)
    ops, f, b = [(True, i) for i in range(warmup)], warmup, 0
    while f < micros:
        ops += [(True, f), (False, b)]
        f, b = f + 1, b + 1
    return ops + [(False, i) for i in range(b, micros)]


def pipeline_events(kind, stage, stages, micros, nbytes=4096):
    first, last = stage == 0, stage == stages - 1
    events, ids, posted = [], iter(range(10 ** 6)), []

    def post(kind_, peer):
        id = next(ids)
        events.append(issue(id, kind_, sorted((stage, peer)), nbytes, group="pp", peer=peer) | {"group_size": stages})
        posted.append((kind_ == "recv", id))

    def receive_for(forward):
        if forward and not first:
            post("recv", stage - 1)
        if not forward and not last:
            post("recv", stage + 1)

    ops = pipeline_order(kind, stage, stages, micros)
    receive_for(ops[0][0])
    for k, (forward, micro) in enumerate(ops):
        events.extend(wait(id) for receives in (True, False) for is_recv, id in posted if is_recv == receives)
        posted.clear()
        events.append(fwd(stage, micro) if forward else bwd(stage, micro))
        if forward and not last:
            post("send", stage + 1)
        if not forward and not first:
            post("send", stage - 1)
        if k + 1 < len(ops):
            receive_for(ops[k + 1][0])
    events.extend(wait(id) for receives in (True, False) for is_recv, id in posted if is_recv == receives)
    return events


def test_the_generator_follows_the_trainers_1f1b_order():
    assert pipeline_order("1f1b", 0, 4, 8)[:5] == [(True, 0), (True, 1), (True, 2), (True, 3), (False, 0)]
    assert pipeline_order("1f1b", 3, 4, 8)[:3] == [(True, 0), (False, 0), (True, 1)]
    assert pipeline_order("1f1b", 1, 4, 2) == [(True, 0), (True, 1), (False, 0), (False, 1)]
    # Two stages, one micro-batch: what each posts, and waits for receives first.
    pp = {"group": "pp", "group_size": 2}
    assert pipeline_events("1f1b", 0, 2, 1) == [
        fwd(0), issue(0, "send", (0, 1), 4096, peer=1) | pp, issue(1, "recv", (0, 1), 4096, peer=1) | pp,
        wait(1), wait(0), bwd(0)]
    assert pipeline_events("1f1b", 1, 2, 1) == [
        issue(0, "recv", (0, 1), 4096, peer=0) | pp, wait(0), fwd(1), bwd(1), issue(1, "send", (0, 1), 4096, peer=0) | pp,
        wait(1)]


@pytest.mark.parametrize("kind", ["1f1b", "gpipe"])
@pytest.mark.parametrize("stages,micros,tf,tb", [(4, 8, 3.0, 5.0), (4, 8, 1.0, 2.0), (2, 3, 2.5, 4.0), (3, 1, 1.0, 1.0)])
def test_a_pipeline_of_equal_stages_takes_m_plus_s_minus_1_forwards_and_backwards(kind, stages, micros, tf, tb):
    schedules = {s: pipeline_events(kind, s, stages, micros) for s in range(stages)}
    c = Costs(phases={"forward": tf, "backward": tb})
    r = replay(schedules, c)
    assert r.step_us == (micros + stages - 1) * (tf + tb)
    for t in r.ranks:
        assert t.compute_us == micros * (tf + tb)
        # The bubble is the rank's time blocked in receives and in sends a neighbour has not taken yet, and its idle.
        assert t.pipeline_wait_us + t.idle_us == (stages - 1) * (tf + tb)
        assert t.waiting_us == t.transfer_us == 0.0
    assert {o.op for o in r.ops} == {"send"} and len(r.ops) == 2 * (stages - 1) * micros
    assert set(c.asked) == {("send", stages, 4096)}


def test_a_pipeline_transfer_adds_its_cost_on_each_stage_boundary():
    """One micro-batch through 3 stages, transfers of 0.5 us: 3 forwards, 3 backwards, 4 transfers in sequence."""
    schedules = {s: pipeline_events("1f1b", s, 3, 1) for s in range(3)}
    r = replay(schedules, Costs(phases={"forward": 1.0, "backward": 2.0}, op=lambda op, p, n: 0.5))
    assert r.step_us == 3 * 1.0 + 3 * 2.0 + 4 * 0.5
    assert r.rank(0).pipeline_wait_us == 2 * 2.0 + 2 * 1.0 + 4 * 0.5  # the other stages' work and every transfer


# ---- ZeRO-3: the gather of layer i + 1 issued before layer i's compute ----

def zero3_events(layers):
    """Gather layer 0 and wait; then per layer i: issue the gather of i + 1, wait for i's, compute i."""
    events = [issue(0, "all_gather", (0, 1), 1000)]
    for i in range(layers):
        if i + 1 < layers:
            events.append(issue(i + 1, "all_gather", (0, 1), 1000 * (i + 2)))
        events += [wait(i), fwd(i)]
    return events


@pytest.mark.parametrize("compute,gather", [([10.0, 4.0, 8.0], [6.0, 13.0, 3.0]), ([2.0, 2.0, 2.0, 2.0], [1.0, 5.0, 5.0, 1.0]),
                                            ([7.0, 7.0], [0.5, 0.25])])
def test_a_prefetched_gather_is_exposed_by_what_the_previous_layers_compute_does_not_hide(compute, gather):
    by_bytes = {1000 * (i + 1): g for i, g in enumerate(gather)}
    c = Costs(per_layer=dict(enumerate(compute)), op=lambda op, p, n: by_bytes[n])
    r = replay({0: zero3_events(len(compute)), 1: zero3_events(len(compute))}, c)
    exposed = gather[0] + sum(max(0.0, g - c_) for g, c_ in zip(gather[1:], compute))
    for t in r.ranks:
        assert t.compute_us == sum(compute)
        assert t.transfer_us == exposed and t.waiting_us == 0.0
    assert r.step_us == sum(compute) + exposed


def test_in_waits_a_prefetched_gather_hides_behind_nothing():
    """MPI's progress: a gather moves only once its members wait for it (the next layer's, issued early, does not move
    while this one's wait runs), so prefetching hides nothing and every gather is exposed whole."""
    compute, gather = [10.0, 4.0, 8.0], [6.0, 13.0, 3.0]
    by_bytes = {1000 * (i + 1): g for i, g in enumerate(gather)}
    c = Costs(per_layer=dict(enumerate(compute)), op=lambda op, p, n: by_bytes[n])
    r = replay({0: zero3_events(3), 1: zero3_events(3)}, c, Progress.IN_WAITS)
    for t in r.ranks:
        assert (t.compute_us, t.transfer_us, t.waiting_us) == (sum(compute), sum(gather), 0.0)
    assert r.step_us == sum(compute) + sum(gather)


def test_in_waits_a_bucket_sent_during_the_backward_waits_for_the_backward_to_end():
    """two_bucket_dp's first bucket (7 us) no longer runs under layer 0's backward: both buckets start at 60 (the
    wait), one after the other on the communicator: 60..67, 67..86; the optimizer to 91."""
    r = replay({0: two_bucket_dp(), 1: two_bucket_dp()}, ring_costs(), Progress.IN_WAITS)
    assert r.step_us == 91.0
    assert [(o.start_us, o.end_us) for o in r.ops] == [(60.0, 67.0), (67.0, 86.0)]
    assert all(t.transfer_us == 26.0 for t in r.ranks)


def test_in_waits_a_wait_for_a_later_op_moves_the_earlier_ones_first():
    """Each rank issues A then B on one communicator and waits for B before A (ZeRO-3 retires a layer's gradients
    late): the wait for B lets A move first (the communicator runs it first), then B; nothing deadlocks."""
    events = [fwd(0), issue(1, "reduce_scatter", (0, 1), 64), issue(2, "all_gather", (0, 1), 128), wait(2), fwd(1),
              wait(1)]
    c = Costs(op=lambda op, p, n: {64: 3.0, 128: 5.0}[n])
    r = replay({0: events, 1: events}, c, Progress.IN_WAITS)
    assert [(o.op, o.start_us, o.end_us) for o in r.ops] == [("reduce_scatter", 10.0, 13.0), ("all_gather", 13.0, 18.0)]
    assert r.step_us == 28.0  # 10 + 3 + 5 + 10: A was done before the second wait


def test_in_waits_a_rank_blocked_on_one_communicator_moves_its_ops_on_another():
    """Rank 0 waits for B (on [0, 1, 2]) before A (on [0, 1]); rank 1 waits for A first: blocked in B's wait, rank 0
    lets A move, and rank 1 blocked in A's lets B move: both run from 0 (two communicators), no deadlock of the
    mode's making (without the rule, each would wait for the other's arrival)."""
    zero = [issue(1, "all_reduce", (0, 1), 64), issue(2, "all_reduce", (0, 1, 2), 128), wait(2), wait(1)]
    one = [issue(1, "all_reduce", (0, 1), 64), issue(2, "all_reduce", (0, 1, 2), 128), wait(1), wait(2)]
    two = [issue(2, "all_reduce", (0, 1, 2), 128), wait(2)]
    c = Costs(op=lambda op, p, n: {64: 3.0, 128: 5.0}[n])
    r = replay({0: zero, 1: one, 2: two}, c, Progress.IN_WAITS)
    assert [(o.bytes, o.start_us, o.end_us) for o in r.ops] == [(64, 0.0, 3.0), (128, 0.0, 5.0)]


def test_in_waits_a_rank_blocked_on_a_transfer_moves_its_collectives():
    """Hypothesis found it: rank 0 waits for the all-reduce, rank 1 for a receive from rank 0 over the same two
    ranks. A transfer is on none of the collectives' communicators, so blocked in it, rank 1 lets the all-reduce
    move; rank 0's send went eagerly. Both end, no deadlock."""
    zero = [issue(0, "all_reduce", (0, 1), 0), issue(2, "send", (0, 1), 0, group="pp", peer=1), wait(0), wait(2)]
    one = [issue(2, "recv", (0, 1), 0, group="pp", peer=0), issue(0, "all_reduce", (0, 1), 0), wait(2), wait(0)]
    r = replay({0: zero, 1: one}, Costs(op=lambda op, p, n: 1.0), Progress.IN_WAITS)
    assert r.step_us == 1.0 and len(r.ops) == 2


def test_in_waits_leaves_a_pipelines_transfers_independent():
    """Sends and receives go eagerly under MPI too: the 1F1B pipeline's step is the same in both modes."""
    schedules = {s: pipeline_events("1f1b", s, 2, 4) for s in range(2)}
    c = Costs(op=lambda op, p, n: 2.0)
    assert replay(schedules, c, Progress.IN_WAITS).step_us == replay(schedules, c).step_us


# ---- communicators ----

def test_two_ops_on_one_communicator_run_one_after_the_other():
    both = [issue(0, "all_reduce", (0, 1), 1), issue(1, "all_reduce", (0, 1), 2), wait(0), wait(1)]
    r = replay({0: both, 1: both}, Costs(op=lambda op, p, n: {1: 3.0, 2: 4.0}[n]))
    assert r.step_us == 7.0
    assert [(o.start_us, o.end_us) for o in r.ops] == [(0.0, 3.0), (3.0, 7.0)]
    assert r.rank(0).transfer_us == 7.0


def test_ops_on_different_members_lists_overlap():
    r = replay({0: [issue(0, "all_reduce", (0, 1), 1), issue(1, "all_reduce", (0, 2), 2), wait(0), wait(1)],
                1: [issue(0, "all_reduce", (0, 1), 1), wait(0)],
                2: [issue(5, "all_reduce", (0, 2), 2), wait(5)]},
               Costs(op=lambda op, p, n: {1: 3.0, 2: 4.0}[n]))
    assert r.step_us == 4.0
    assert [(o.members, o.start_us, o.end_us) for o in r.ops] == [((0, 1), 0.0, 3.0), ((0, 2), 0.0, 4.0)]
    assert r.rank(1).idle_us == 1.0


def test_a_queued_collective_counts_its_queue_as_transfer_not_waiting():
    """Rank 1 issues the second op at 5 us while the first (10 us) still runs: rank 0, blocked from 0 us, waited 5 us
    for rank 1 and then 5 us queued plus the op's own 2 us."""
    r = replay({0: [issue(0, "all_reduce", (0, 1), 1), issue(1, "all_reduce", (0, 1), 2), wait(1), wait(0)],
                1: [issue(0, "all_reduce", (0, 1), 1), fwd(0), issue(1, "all_reduce", (0, 1), 2), wait(0), wait(1)]},
               Costs(phases={"forward": 5.0}, op=lambda op, p, n: {1: 10.0, 2: 2.0}[n]))
    assert r.step_us == 12.0
    assert (r.rank(0).waiting_us, r.rank(0).transfer_us) == (5.0, 7.0)
    assert (r.rank(1).waiting_us, r.rank(1).transfer_us) == (0.0, 7.0)


# ---- exposed communication per group ----

def test_the_blocked_time_splits_by_the_group_of_the_op_waited_for():
    """Tensor-parallel sum after the forward (3 us), the gradients' all-reduce after the backward (4 us), rank 1's forward
    2 us late: rank 0 waits 2 us for it on tp, then 3 us of transfer; both ranks 4 us on dp. A group the rank issues
    on but never blocks in (the gradient norm's sum, hidden behind the optimizer) is listed at 0."""
    def events():
        return [fwd(0), issue(0, "all_reduce", (0, 1), 8, group="tp"), wait(0), bwd(0),
                issue(1, "all_reduce", (0, 1), 16, group="dp"), wait(1),
                issue(2, "all_reduce", (0, 1), 32, group="dp-tp"), opt(), wait(2)]
    c = Costs(op=lambda op, p, n: {8: 3.0, 16: 4.0, 32: 5.0}[n], late={1: 2.0})
    r = replay({0: events(), 1: events()}, c)
    assert r.rank(0).exposed_by_group_us == {"dp": 4.0, "dp-tp": 0.0, "tp": 5.0}
    assert r.rank(1).exposed_by_group_us == {"dp": 4.0, "dp-tp": 0.0, "tp": 3.0}
    assert list(r.rank(0).exposed_by_group_us) == ["dp", "dp-tp", "tp"]  # ascending by name
    assert (r.rank(0).waiting_us, r.rank(0).transfer_us) == (2.0, 7.0)


def test_a_pipelines_waits_are_its_groups_and_a_rank_without_ops_has_none():
    """test_a_pipeline_transfer_adds_its_cost_on_each_stage_boundary's pipeline: stage 0's 8 us of pipeline wait are pp's.
    A rank of a one-rank replay issues nothing: no group."""
    schedules = {s: pipeline_events("1f1b", s, 3, 1) for s in range(3)}
    r = replay(schedules, Costs(phases={"forward": 1.0, "backward": 2.0}, op=lambda op, p, n: 0.5))
    assert r.rank(0).exposed_by_group_us == {"pp": 2 * 2.0 + 2 * 1.0 + 4 * 0.5}
    assert all(t.exposed_by_group_us == {"pp": t.pipeline_wait_us} for t in r.ranks)
    assert replay({0: [fwd(0), opt()]}, Costs()).rank(0).exposed_by_group_us == {}


# ---- bad input: one line each, naming the rank and the op ----

AR = (0, 1)
ERRORS = {
    "no ranks": ({}, "no rank's schedule"),
    "not a list": ({0: {"events": []}}, "rank 0: the schedule is dict"),
    "unknown key": ({0: [fwd(0) | {"stream": 1}]}, "rank 0 event 0: unknown key(s) stream"),
    "missing key": ({0: [{"compute": "forward", "layer": 0, "flops": 1}]}, "rank 0 event 0: missing micro_batch"),
    "bad phase": ({0: [{"compute": "sideways", "layer": 0, "micro_batch": 0, "flops": 1}]}, "\"compute\" is 'sideways'"),
    "two kinds": ({0: [{"wait": 0, "issue": 0}]}, "exactly one of"),
    "negative bytes": ({0: [issue(0, "all_reduce", AR, -1), wait(0)]}, "\"bytes\" is -1"),
    "bool id": ({0: [{"wait": True}]}, "\"wait\" is True"),
    "duplicate id": ({0: [issue(3, "all_reduce", AR, 1), issue(3, "all_reduce", AR, 1), wait(3)], 1: []},
                     "rank 0 event 1: op id 3 issued twice (events 0 and 1)"),
    "unknown wait": ({0: [wait(9)]}, "rank 0 event 0: a wait for op 9, which this rank has not issued before it"),
    "wait before issue": ({0: [wait(2), issue(2, "all_reduce", AR, 1)]}, "rank 0 event 0: a wait for op 2"),
    "never waited": ({0: [issue(4, "all_reduce", AR, 8)], 1: []},
                     "rank 0 event 0: op 4 (all_reduce on dp [0, 1], 8 bytes) is issued but never waited for"),
    "not a member": ({0: [issue(1, "all_reduce", (1, 2), 8), wait(1)]}, "rank 0 event 0: op 1 (all_reduce on dp [1, 2], "
                     "8 bytes): its members do not include rank 0"),
    "group size": ({0: [issue(1, "all_reduce", AR, 8) | {"group_size": 4}, wait(1)]}, "group_size 4 but 2 members"),
    "unsorted members": ({0: [issue(1, "all_reduce", (1, 0), 8), wait(1)]}, "members not ascending"),
    "send without peer": ({0: [issue(1, "send", AR, 8), wait(1)]}, "missing peer"),
    "peer on a collective": ({0: [issue(1, "all_reduce", AR, 8) | {"peer": 1}, wait(1)]}, "unknown key(s) peer"),
    "peer not the member": ({0: [issue(1, "send", (0, 2), 8, peer=1), wait(1)]},
                            "rank 0 event 0: op 1 (send to rank 1 on dp of 2, 8 bytes): a send's members are this rank and "
                            "its peer"),
    "member without schedule": ({0: [issue(1, "all_reduce", (0, 1, 2), 8), wait(1)], 1: []},
                                "rank 0's op 1 (all_reduce on dp [0, 1, 2], 8 bytes): rank 2 of its members has no schedule"),
    "ops disagree": ({0: [issue(1, "all_reduce", AR, 8), wait(1)], 1: [issue(5, "all_gather", AR, 8), wait(5)]},
                     "rank 1's op 5 (all_gather on dp [0, 1], 8 bytes) and rank 0's op 1 (all_reduce on dp [0, 1], 8 bytes) "
                     "are both the 1st op on ranks [0, 1] but disagree"),
    "group size disagrees": ({0: [issue(1, "send", AR, 8, "pp", 1) | {"group_size": 4}, wait(1)],
                              1: [issue(2, "recv", AR, 8, "pp", 0), wait(2)]},
                             "rank 1's op 2 (recv from rank 0 on pp of 2, 8 bytes) and rank 0's op 1 (send to rank 1 on pp of 4, "
                             "8 bytes) are both the 1st transfer from rank 0 to rank 1 but disagree"),
    "bytes disagree": ({0: [issue(1, "all_reduce", AR, 8), wait(1)], 1: [issue(5, "all_reduce", AR, 16), wait(5)]},
                       "rank 1's op 5 (all_reduce on dp [0, 1], 16 bytes) and rank 0's op 1"),
    "transfer bytes disagree": ({0: [issue(1, "send", AR, 8, "pp", 1), wait(1)], 1: [issue(2, "recv", AR, 4, "pp", 0), wait(2)]},
                                "rank 1's op 2 (recv from rank 0 on pp of 2, 4 bytes) and rank 0's op 1 (send to rank 1 on pp "
                                "of 2, 8 bytes) are both the 1st transfer from rank 0 to rank 1 but disagree"),
    "never issued": ({0: [issue(1, "all_reduce", AR, 8), wait(1), issue(2, "all_reduce", AR, 8), wait(2)],
                      1: [issue(1, "all_reduce", AR, 8), wait(1)]},
                     "rank 0's op 2 (all_reduce on dp [0, 1], 8 bytes) is the 2nd op on ranks [0, 1], which rank 1 never "
                     "issues: a deadlock"),
    "recv never sent": ({0: [issue(1, "recv", AR, 8, "pp", 1), wait(1)], 1: []},
                        "rank 0's op 1 (recv from rank 1 on pp of 2, 8 bytes) is the 1st transfer from rank 1 to rank 0, "
                        "which rank 1 never issues: a deadlock"),
    "receive cycle": ({0: [issue(1, "recv", AR, 8, "pp", 1), wait(1), issue(2, "send", AR, 8, "pp", 1), wait(2)],
                       1: [issue(1, "recv", AR, 8, "pp", 0), wait(1), issue(2, "send", AR, 8, "pp", 0), wait(2)]},
                      "deadlock: rank 0 waits for its op 1 (recv from rank 1 on pp of 2, 8 bytes), which rank 1 has not "
                      "issued: rank 1 waits for its op 1 (recv from rank 0 on pp of 2, 8 bytes)"),
    "collective order": ({0: [issue(1, "all_reduce", AR, 8), wait(1), issue(2, "all_reduce", (0, 2), 8), wait(2)],
                          1: [issue(1, "all_reduce", (1, 2), 8), wait(1), issue(2, "all_reduce", AR, 8), wait(2)],
                          2: [issue(1, "all_reduce", (0, 2), 8), wait(1), issue(2, "all_reduce", (1, 2), 8), wait(2)]},
                         "deadlock: rank 0 waits for its op 1 (all_reduce on dp [0, 1], 8 bytes), which rank 1 has not "
                         "issued: rank 1 waits for its op 1 (all_reduce on dp [1, 2], 8 bytes)"),
    "rank not an int": ({"0": []}, "schedule of '0': a rank is an integer"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_a_bad_schedule_is_one_error_line(case):
    schedules, message = ERRORS[case]
    with pytest.raises(InputError) as e:
        replay(schedules, Costs())
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_cost_that_is_no_time_is_an_error(bad):
    with pytest.raises(InputError, match=r"the cost model gives .* us for rank 0 event 0 \(forward of layer 0, micro-batch 0"):
        replay({0: [fwd(0)]}, Costs(phases={"forward": bad}))


# ---- a property: random valid schedules ----

@st.composite
def valid_schedules(draw):
    """Ranks issue ops in one global order (each op at every member, its wait anywhere after its issue): such a
    schedule cannot deadlock, since the earliest op still open would have a member blocked on an earlier one."""
    n = draw(st.integers(2, 4))
    events = {r: [] for r in range(n)}
    pending = {r: [] for r in range(n)}  # issued, not yet waited
    next_id = [0] * n
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["compute", "collective", "transfer", "wait"]))
        if kind == "compute":
            r = draw(st.integers(0, n - 1))
            events[r].append(fwd(0, draw(st.integers(0, 3))) | {"flops": draw(st.integers(0, 50))})
        elif kind == "wait":
            r = draw(st.integers(0, n - 1))
            if pending[r]:
                events[r].append(wait(pending[r].pop(draw(st.integers(0, len(pending[r]) - 1)))))
        else:
            members = sorted(draw(st.sets(st.integers(0, n - 1), min_size=2, max_size=n if kind == "collective" else 2)))
            nbytes = draw(st.integers(0, 64))
            for r in members:
                if kind == "collective":
                    e = issue(next_id[r], "all_reduce", members, nbytes)
                else:
                    peer = members[1] if r == members[0] else members[0]
                    e = issue(next_id[r], "send" if r == members[0] else "recv", members, nbytes, "pp", peer)
                events[r].append(e)
                pending[r].append(next_id[r])
                next_id[r] += 1
    for r in range(n):
        events[r] += [wait(id) for id in pending[r]] + [opt()]
    return events


def test_a_ranks_host_time_comes_before_its_steps_first_event_and_once_per_step_of_a_window():
    """Rank 1 spends 40 us outside the events before each step (the data wait): its issue of the step's first gather
    comes after it. Moving from its issue on, the gather starts at 40 and ends at 50, and rank 0, computing from 0,
    waits from 10: 30 us for rank 1 to arrive, 10 of transfer; a step of 55 us. Moving only in waits, it starts when
    rank 1 waits at 50 (40 + its forward): rank 0 waits 40 us, then 10; a step of 65."""
    schedules = {r: [issue(1, "all_gather", (0, 1), 64), fwd(0), wait(1), opt()] for r in (0, 1)}
    for progress, step, waiting, one_blocked in ((Progress.INDEPENDENT, 55, 30, 0), (Progress.IN_WAITS, 65, 40, 10)):
        r = replay(schedules, Costs(op=lambda op, n, b: 10.0, host={1: 40.0}), progress)
        zero, one = r.rank(0), r.rank(1)
        assert r.step_us == step and (zero.host_us, one.host_us) == (0, 40)
        assert (zero.waiting_us, zero.transfer_us) == (waiting, 10)
        assert (one.compute_us, one.blocked_us, one.idle_us) == (10, one_blocked, 0)
    # A window of two steps without ops: 7 us before each (7 + 10 + 20 + 5) x 2 over 2 steps.
    window = replay({0: [fwd(0), bwd(0), opt(), fwd(0), bwd(0), opt()]}, Costs(host={0: 7.0}), steps=2)
    assert (window.step_us, window.rank(0).host_us) == (42, 7)


class FlopCosts:
    def compute_us(self, event, rank):
        return float(event.flops) / 4 if isinstance(event, Compute) else 1.0 + rank

    def host_us(self, rank):
        return 0.5 * rank

    def op_us(self, op, group_size, nbytes, members, in_place=False):
        return group_size + nbytes / 8


@settings(max_examples=150, deadline=None)
@given(valid_schedules(), st.sampled_from(list(Progress)))
def test_a_valid_schedule_replays_with_no_negative_time(schedules, progress):
    """In either mode of progress: a schedule that replays in one replays in the other (no deadlock of the mode's
    making), and MPI's is never faster than independent progress."""
    r = replay(schedules, FlopCosts(), progress)
    if progress is Progress.IN_WAITS:
        assert r.step_us >= replay(schedules, FlopCosts()).step_us
    assert r.step_us == max(t.step_us for t in r.ranks)
    for t in r.ranks:
        assert min(t.idle_us, t.waiting_us, t.transfer_us, t.pipeline_wait_us) >= 0
        assert r.step_us >= t.compute_us + t.optimizer_us + t.host_us
        assert t.host_us == 0.5 * t.rank  # one step: its host time once
        assert t.compute_us + t.optimizer_us + t.host_us + t.blocked_us + t.idle_us == \
            pytest.approx(r.step_us, rel=1e-12, abs=1e-9)
        assert sum(t.exposed_by_group_us.values()) == pytest.approx(t.blocked_us, rel=1e-12, abs=1e-9)
    for o in r.ops:
        assert o.last_arrival_us <= o.start_us <= o.end_us
    # The walk's order of ranks changes nothing.
    assert replay(dict(reversed(list(schedules.items()))), FlopCosts(), progress) == r
