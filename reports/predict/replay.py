"""A training step predicted by replaying every rank's one-step schedule (schedule.py) over a cost model: a discrete-
event walk, so that which communication hides behind which compute, and the pipeline's bubble, come out of the order
the trainer runs things in rather than out of a formula per layout (docs/architecture.md "Prediction").

The semantics, each an assumption the costs are read under:

- Costs (the `Costs` protocol) give a compute event's time on a rank (`compute_us`: forward, backward, recompute,
  optimizer), an op's time once every member has arrived (`op_us(op, group_size, bytes, members)`: a collective, or a
  send/recv pair's transfer, asked as op "send" with the pair's group_size, bytes and two ranks; the members say which
  link the op crosses: placement.py), and a step's host time that is in no event (`host_us`: the wait for the data
  and the work between the phases, which the trainer spends before a step's first event: at the start of the walk,
  and before the first compute after each optimizer of a window).
- Each rank has one compute stream: its compute events run one after another, in program order. An issue takes no
  time and records the rank's arrival at the op. A wait blocks the rank until the op ends (no time if it has).
- A collective is the k-th issue on its `members` list on every member (the CommTracker's rule; op, group and bytes
  must agree). It starts at max(every member's arrival, the end of the op before it on the same members list: one
  communicator runs its ops in order) and ends op_us later. A send a->b is the k-th recv at b from a; its transfer
  starts at max(both issues), and send and recv both end with it. Transfers do not queue behind other ops.
- Communication overlaps compute fully and ops on different communicators do not slow each other (no contention):
  the stated first assumption; contention would be a knob of its own. With Progress.IN_WAITS (MPI) a collective's
  member arrives when it enters a wait rather than at its issue: it overlaps nothing the rank computes meanwhile.
- Per rank (RankTimes): step_us, when its last event ends; compute_us (forward + backward + recompute);
  optimizer_us; host_us; the time blocked in waits, split as the train record splits it: for a collective,
  waiting_us is the part before the op's last member arrived (waiting for a peer: nothing moves before) and
  transfer_us the rest (queueing behind the communicator's previous op included); blocked time in send/recv waits is
  pipeline_wait_us. A rank's clock moves only by compute, host time and blocking, so compute + optimizer + host +
  blocked is its step_us, and its idle_us is the step's time (the slowest rank's) less that. The blocked time is
  split by group too (exposed_by_group_us: the group each op is on, as the plan names it: dp, tp, pp, ...; a
  pipeline's waits under its own), one entry for every group the rank issues an op on (0 where none of its waits
  blocked): the exposed communication per communicator, which sums to the blocked time. Per op (OpTime): its start
  and end, for a trace.
- A window of K steps (the schedule's "steps", schedule.py: model averaging every K steps) is walked as one
  schedule from every rank at 0, and every RankTimes figure and step_us are the window's divided by K: the mean
  step, as a run's mean over a multiple of K steps (OpTime stays in the window's time).

Bad input is one InputError line naming the rank and op: a malformed or inconsistent schedule (schedule.py), a rank
in an op's members with no schedule, the k-th ops on one members list that disagree, an op a member never issues,
and a deadlock (ranks each waiting for an op another has not issued yet). The work is O(events + ops x members):
each rank runs until it waits for an op that has not ended, and resumes when that op's last member arrives."""
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from math import isfinite
from typing import Any, Protocol

from ..common.errors import InputError
from .schedule import Compute, Event, Issue, Optimizer, Wait, parse_schedule

TRANSFER_OP = "send"  # the op a send/recv pair's transfer is costed as


class Progress(Enum):
    """When a member's part of a collective can move.

    INDEPENDENT: from its issue on, whatever the rank does next (NCCL: the op runs on its own stream).
    IN_WAITS: only once the member waits for it (MPI: a nonblocking collective progresses only inside the library,
    and a rank computing a layer enters nothing), for an op its communicator runs after it (which needs it done
    first), or blocks in a wait on another communicator. An op its communicator runs after the one waited for does not
    move then (one communicator's ops run in order, and the rank goes back to computing once its op is done): the
    pessimistic bound, where the optimistic one is INDEPENDENT. A pipeline's sends and receives stay INDEPENDENT:
    small transfers go eagerly, without the receiver's help."""
    INDEPENDENT = "independent"
    IN_WAITS = "in-waits"


class Costs(Protocol):
    def compute_us(self, event: Compute | Optimizer, rank: int) -> float: ...

    def host_us(self, rank: int) -> float: ...

    def op_us(self, op: str, group_size: int, nbytes: int, members: tuple[int, ...], in_place: bool = False) -> float: ...


@dataclass(frozen=True)
class OpTime:
    op: str  # the collective, or "send" for a send/recv pair's transfer
    group: str
    members: tuple[int, ...]
    bytes: int
    index: int  # 0-based: the how-manyth on its members list (collective) or from its sender to its receiver
    sender: int | None  # a transfer's sending rank; None for a collective
    issues: tuple[tuple[int, int], ...]  # (rank, that rank's op id), one per member
    last_arrival_us: float  # when its last member issued it
    start_us: float
    end_us: float


@dataclass(frozen=True)
class RankTimes:
    rank: int
    step_us: float  # when its last event ends
    compute_us: float  # forward + backward + recompute
    optimizer_us: float
    waiting_us: float  # blocked on collectives before their last member arrived
    transfer_us: float  # blocked on collectives after it
    pipeline_wait_us: float  # blocked on sends and receives
    idle_us: float  # the step's time less this rank's step_us
    # blocked time by the group of the op waited for (a pipeline's waits under its group), every group the rank issues
    # an op on, ascending by name: sums to blocked_us
    exposed_by_group_us: dict[str, float] = field(default_factory=dict, hash=False)
    host_us: float = 0.0  # the data wait and the host's work outside the events (Costs.host_us), per step

    @property
    def exposed_us(self) -> float:
        """The collectives' exposed time, as the train record's waiting_for_peers_us + exposed_transfer_us."""
        return self.waiting_us + self.transfer_us

    @property
    def blocked_us(self) -> float:
        return self.waiting_us + self.transfer_us + self.pipeline_wait_us


@dataclass(frozen=True)
class StepReplay:
    step_us: float  # the slowest rank's step_us (a window's: its mean step)
    ranks: tuple[RankTimes, ...]  # ascending rank
    ops: tuple[OpTime, ...]  # by start, then end (in the window's time)
    steps: int = 1  # the steps of the window replayed

    @property
    def window_us(self) -> float:
        return self.step_us * self.steps

    def rank(self, r: int) -> RankTimes:
        return next(t for t in self.ranks if t.rank == r)


@dataclass
class _Op:
    """One operation as every member sees it, matched before the walk; its times filled in during it."""
    first: Issue  # the first member's issue of it (the one the others are checked against)
    index: int
    sender: int | None
    previous: "_Op | None"  # the op before it on its communicator (collectives)
    issues: list[tuple[int, int]] = field(default_factory=list)  # (rank, its op id) of each member
    arrived: set[int] = field(default_factory=set)  # the members whose walk has passed their issue of it
    last_arrival: float = 0.0
    start: float = 0.0
    end: float | None = None  # None until its last member has arrived
    waiters: list[int] = field(default_factory=list)  # ranks blocked in a wait for it

    @property
    def needed(self) -> int:
        return 2 if self.sender is not None else len(self.first.members)


@dataclass
class _Rank:
    events: tuple[Event, ...]
    at: int = 0  # the next event
    clock: float = 0.0
    compute: float = 0.0
    optimizer: float = 0.0
    host: float = 0.0
    next_step: bool = False  # an optimizer was the last compute: the next compute starts a step (after its host time)
    waiting: float = 0.0
    transfer: float = 0.0
    pipeline_wait: float = 0.0
    groups: dict[str, float] = field(default_factory=dict)  # blocked time by the op's group
    pending: list["_Op"] = field(default_factory=list)  # IN_WAITS: collectives issued, not yet moving, in issue order


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _channel(rank: int, e: Issue) -> tuple[Any, ...]:
    """What the k-th issue is counted on: the members list (collective) or the (sender, receiver) pair."""
    if e.peer is None:
        return ("collective", e.members)
    return ("transfer", (rank, e.peer) if e.op == "send" else (e.peer, rank))


def _match(ranks: Mapping[int, tuple[Event, ...]]) -> tuple[list[_Op], dict[tuple[int, int], _Op]]:
    """Every op as one _Op with each member's issue of it, ranks in ascending order so that errors name the same pair
    whatever the input's order; InputError for a member with no schedule, a disagreement or an op a member never issues."""
    ops: dict[tuple[Any, ...], _Op] = {}
    count: dict[tuple[int, tuple[Any, ...]], int] = defaultdict(int)
    of: dict[tuple[int, int], _Op] = {}
    for rank in sorted(ranks):
        for e in ranks[rank]:
            if not isinstance(e, Issue):
                continue
            what = f"rank {rank}'s op {e.id} ({e.describe()})"
            if missing := [m for m in e.members if m not in ranks]:
                raise InputError(f"{what}: rank {missing[0]} of its members has no schedule")
            channel = _channel(rank, e)
            k = count[rank, channel]
            count[rank, channel] = k + 1
            op = ops.get((channel, k))
            if op is None:
                op = ops[channel, k] = _Op(e, k, channel[1][0] if e.peer is not None else None,
                                           ops.get((channel, k - 1)) if e.peer is None else None)
            elif _signature(op.first) != _signature(e):
                first_rank, first_id = op.issues[0]
                raise InputError(f"{what} and rank {first_rank}'s op {first_id} ({op.first.describe()}) are both the "
                                 f"{_ordinal(k + 1)} {_channel_name(channel)} but disagree")
            op.issues.append((rank, e.id))
            of[rank, e.id] = op
    for (channel, k), op in ops.items():
        if len(op.issues) < op.needed:
            rank, id = op.issues[0]
            absent = next(m for m in op.first.members if m not in {r for r, _ in op.issues})
            raise InputError(f"rank {rank}'s op {id} ({op.first.describe()}) is the {_ordinal(k + 1)} "
                             f"{_channel_name(channel)}, which rank {absent} never issues: a deadlock")
    return list(ops.values()), of


def _signature(e: Issue) -> tuple[str, str, int, int]:
    """What every member's issue of one op must agree on (a send and its recv differ only in the op's name)."""
    return ("send/recv" if e.point_to_point else e.op, e.group, e.group_size, e.bytes)


def _channel_name(channel: tuple[Any, ...]) -> str:
    kind, who = channel
    return f"op on ranks {list(who)}" if kind == "collective" else f"transfer from rank {who[0]} to rank {who[1]}"


class _Walk:
    """The discrete-event walk: each rank runs until a wait for an op not yet ended; an op ends when its last member
    arrives (its communicator's previous op has by then: every member issued that one first), which wakes its waiters."""

    def __init__(self, ranks: Mapping[int, tuple[Event, ...]], costs: Costs, progress: Progress) -> None:
        self.costs = costs
        self.progress = progress
        self.ops, self.of = _match(ranks)
        self.ranks = {r: _Rank(events) for r, events in ranks.items()}
        self.issue = {(r, e.id): e for r, events in ranks.items() for e in events if isinstance(e, Issue)}
        self.ready = deque(sorted(ranks))

    def run(self) -> None:
        for rank, s in self.ranks.items():  # the first step's host time, before any of its events (a ZeRO-3 gather's issue)
            self._host(s, rank)
        while self.ready:
            self._advance(self.ready.popleft())
        blocked = sorted(r for r, s in self.ranks.items() if s.at < len(s.events))
        if blocked:
            raise InputError(self._deadlock(blocked[0]))

    def _advance(self, rank: int) -> None:
        s = self.ranks[rank]
        while s.at < len(s.events):
            e = s.events[s.at]
            if isinstance(e, Issue):
                s.groups.setdefault(e.group, 0.0)
                op = self.of[rank, e.id]
                if self.progress is Progress.IN_WAITS and op.sender is None:
                    s.pending.append(op)
                else:
                    self._arrive(op, rank, s.clock)
            elif isinstance(e, Wait):
                op = self.of[rank, e.id]
                self._enter(s, rank, op)
                if op.end is None:
                    op.waiters.append(rank)
                    return
                self._block(s, op)
            else:
                if s.next_step:
                    self._host(s, rank)
                t = self._cost(self.costs.compute_us(e, rank), f"rank {rank} event {s.at} ({e.describe()})")
                s.clock += t
                if isinstance(e, Optimizer):
                    s.optimizer += t
                    s.next_step = True
                else:
                    s.compute += t
            s.at += 1

    def _host(self, s: _Rank, rank: int) -> None:
        t = self._cost(self.costs.host_us(rank), f"rank {rank}'s time outside its events")
        s.clock += t
        s.host += t
        s.next_step = False

    def _enter(self, s: _Rank, rank: int, op: _Op) -> None:
        """IN_WAITS: the rank waits for `op`, so it and the ops its communicator runs before it move from now on; if it
        blocks, so do its ops on other communicators (the library progresses them while it is inside)."""
        blocks = op.end is None or op.end > s.clock  # not done yet, or done only later: the rank sits in the library

        def same_communicator(p: _Op) -> bool:  # a transfer is on none of the collectives' (pending holds collectives)
            return op.sender is None and p.first.members == op.first.members

        moving = [p for p in s.pending if p is op or (same_communicator(p) and p.index < op.index)
                  or (blocks and not same_communicator(p))]
        for p in moving:
            self._arrive(p, rank, s.clock)
        s.pending = [p for p in s.pending if all(p is not m for m in moving)]

    def _arrive(self, op: _Op, rank: int, when: float) -> None:
        op.arrived.add(rank)
        op.last_arrival = max(op.last_arrival, when)
        if len(op.arrived) < op.needed:
            return
        if op.previous is not None:
            assert op.previous.end is not None, "a communicator's ops end in order"
            op.start = max(op.last_arrival, op.previous.end)
        else:
            op.start = op.last_arrival
        e = op.first
        name = TRANSFER_OP if op.sender is not None else e.op
        op.end = op.start + self._cost(self.costs.op_us(name, e.group_size, e.bytes, e.members, e.in_place),
                                       f"{name} of {e.bytes} "
                                       f"bytes on {e.group} ({e.group_size} ranks)")
        self.ready.extend(op.waiters)
        op.waiters.clear()

    @staticmethod
    def _block(s: _Rank, op: _Op) -> None:
        assert op.end is not None
        blocked = max(0.0, op.end - s.clock)
        s.groups[op.first.group] += blocked
        if op.sender is not None:
            s.pipeline_wait += blocked
        else:
            waiting = min(blocked, max(0.0, op.last_arrival - s.clock))
            s.waiting += waiting
            s.transfer += blocked - waiting
        s.clock = max(s.clock, op.end)

    @staticmethod
    def _cost(t: float, what: str) -> float:
        if not isfinite(t) or t < 0:
            raise InputError(f"the cost model gives {t} us for {what}: a time, finite and >= 0")
        return t

    def _deadlock(self, rank: int) -> str:
        """One line: the lowest blocked rank, the op it waits for, a member that has not issued it and what that member
        waits for. Such a member is blocked itself: one whose schedule ended would have issued it (_match checked)."""
        mine = self._waits_for(rank)
        absent = next(m for m in self.of[rank, mine.id].first.members if m not in self.of[rank, mine.id].arrived)
        theirs = self._waits_for(absent)
        return (f"deadlock: rank {rank} waits for its op {mine.id} ({mine.describe()}), which rank {absent} has not "
                f"issued: rank {absent} waits for its op {theirs.id} ({theirs.describe()})")

    def _waits_for(self, rank: int) -> Issue:
        s = self.ranks[rank]
        e = s.events[s.at]
        assert isinstance(e, Wait), "a rank stops only at a wait"
        return self.issue[rank, e.id]

    def result(self, steps: int) -> StepReplay:
        """Per step: the window's figures divided by its steps."""
        step = max((s.clock for s in self.ranks.values()), default=0.0) / steps
        ranks = tuple(RankTimes(r, s.clock / steps, s.compute / steps, s.optimizer / steps, s.waiting / steps,
                                s.transfer / steps, s.pipeline_wait / steps, step - s.clock / steps,
                                {g: v / steps for g, v in sorted(s.groups.items())}, s.host / steps)
                      for r, s in sorted(self.ranks.items()))
        ops = sorted((OpTime(o.first.op if o.sender is None else TRANSFER_OP, o.first.group, o.first.members, o.first.bytes,
                             o.index, o.sender, tuple(sorted(o.issues)), o.last_arrival, o.start, o.end)
                      for o in self.ops if o.end is not None), key=lambda o: (o.start_us, o.end_us))
        return StepReplay(step, ranks, tuple(ops), steps)


def replay(schedules: Mapping[int, Any], costs: Costs, progress: Progress = Progress.INDEPENDENT,
           steps: int = 1) -> StepReplay:
    """The step every rank's schedule (rank -> its list of events, as the format has them) takes over `costs`, its
    collectives progressing as `progress` says; `steps`: the steps the schedules' window spans (schedule.parse_window),
    whose mean step the figures are."""
    if not schedules:
        raise InputError("no rank's schedule to replay")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise InputError(f"a window of {steps!r} steps: an integer >= 1")
    if odd := [r for r in schedules if not isinstance(r, int) or isinstance(r, bool) or r < 0]:
        raise InputError(f"schedule of {odd[0]!r}: a rank is an integer >= 0")
    walk = _Walk({rank: parse_schedule(rank, events) for rank, events in schedules.items()}, costs, progress)
    walk.run()
    return walk.result(steps)
