"""One rank's step schedule (the `schedule` of a `train_plan` record, issue #41's format), read into
typed events and checked on its own: exactly the format's keys and types, ids unique, every wait on an op issued
before it, every op on a group that holds the rank and waited for before the step ends. What needs every rank's
schedule (matching the ops, deadlocks) is the replay's (replay.py). The checks come first so that the replay never
meets a malformed event: a bad schedule is one error line naming the rank and the event, not a KeyError deep in it.

A schedule is one step, or (its "steps": K > 1) the window of K steps after which a layout's steps repeat (model
averaging every K steps: only the K-th communicates); its events are the K steps in order, one optimizer each, and
the replay's figures are per step, the window's divided by K. Without "steps" (plans before windows) it is one."""
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from math import isfinite
from typing import Any

from ..common.errors import InputError
from ..common.json_types import JsonObject

POINT_TO_POINT = ("send", "recv")  # the ops matched by peer; every other op is a collective matched by members


class Phase(str, Enum):
    FORWARD = "forward"
    BACKWARD = "backward"
    RECOMPUTE = "recompute"  # the forward a recomputed unit runs again in its backward


OPTIMIZER = "optimizer"  # the fourth value of "compute": its own event, it has no layer


@dataclass(frozen=True)
class Compute:
    phase: Phase
    layer: int
    micro_batch: int
    flops: float  # this rank's (a layer's count is a product of shapes the C++ keeps as a double)

    def describe(self) -> str:
        return f"{self.phase.value} of layer {self.layer}, micro-batch {self.micro_batch}"


@dataclass(frozen=True)
class Optimizer:
    elements: int  # the parameter elements this rank updates

    def describe(self) -> str:
        return f"optimizer over {self.elements} elements"


@dataclass(frozen=True)
class Issue:
    id: int
    op: str
    group: str
    group_size: int
    members: tuple[int, ...]  # global ranks, ascending; send/recv: the two ranks
    bytes: int
    peer: int | None  # the other side of a send/recv; None for a collective
    # The trainer calls the collective in place (MPI_IN_PLACE), costed from in-place series where the calibration has
    # them (step_costs.py); False for a plan written before the field, as it was costed then.
    in_place: bool = False

    @property
    def point_to_point(self) -> bool:
        return self.peer is not None

    def describe(self) -> str:
        if self.peer is not None:
            return (f"{self.op} {'to' if self.op == 'send' else 'from'} rank {self.peer} on {self.group} of "
                    f"{self.group_size}, {self.bytes} bytes")
        return f"{self.op} on {self.group} {list(self.members)}, {self.bytes} bytes"


@dataclass(frozen=True)
class Wait:
    id: int


Event = Compute | Optimizer | Issue | Wait

_COMPUTE_KEYS = {"compute", "layer", "micro_batch", "flops"}
_OPTIMIZER_KEYS = {"compute", "elements"}
_ISSUE_KEYS = {"issue", "op", "group", "group_size", "members", "bytes"}


def _int(e: JsonObject, key: str, where: str, least: int | None = 0) -> int:
    v = e[key]
    if not isinstance(v, int) or isinstance(v, bool) or (least is not None and v < least):
        raise InputError(f"{where}: \"{key}\" is {v!r}, not an integer" + (f" >= {least}" if least is not None else ""))
    return v


def _flops(e: JsonObject, where: str) -> float:
    v = e["flops"]
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not isfinite(v) or v < 0:
        raise InputError(f"{where}: \"flops\" is {v!r}, not a finite number >= 0")
    return float(v)


def _str(e: JsonObject, key: str, where: str) -> str:
    v = e[key]
    if not isinstance(v, str) or not v:
        raise InputError(f"{where}: \"{key}\" is {v!r}, not a name")
    return v


def _keys(e: JsonObject, want: set[str], where: str) -> None:
    if set(e) != want:
        extra, missing = sorted(set(e) - want), sorted(want - set(e))
        told = ([f"unknown key(s) {', '.join(extra)}"] if extra else []) + ([f"missing {', '.join(missing)}"] if missing else [])
        raise InputError(f"{where}: " + "; ".join(told))


def _compute(e: JsonObject, where: str) -> Compute | Optimizer:
    phase = e["compute"]
    if phase == OPTIMIZER:
        _keys(e, _OPTIMIZER_KEYS, where)
        return Optimizer(_int(e, "elements", where))
    if phase not in {p.value for p in Phase}:
        raise InputError(f"{where}: \"compute\" is {phase!r}, not one of {', '.join([p.value for p in Phase] + [OPTIMIZER])}")
    _keys(e, _COMPUTE_KEYS, where)
    return Compute(Phase(phase), _int(e, "layer", where), _int(e, "micro_batch", where), _flops(e, where))


def _issue(e: JsonObject, rank: int, where: str) -> Issue:
    op = _str(e, "op", where) if "op" in e else ""
    _keys(e, _ISSUE_KEYS | ({"peer"} if op in POINT_TO_POINT else {"in_place"} & set(e)), where)
    in_place = e.get("in_place", False)
    if not isinstance(in_place, bool):
        raise InputError(f"{where}: \"in_place\" is {in_place!r}, not true or false")
    members = e["members"]
    if not isinstance(members, list) or not all(isinstance(m, int) and not isinstance(m, bool) and m >= 0 for m in members):
        raise InputError(f"{where}: \"members\" is {members!r}, not a list of ranks")
    issue = Issue(_int(e, "issue", where, None), op, _str(e, "group", where), _int(e, "group_size", where, 1),
                  tuple(members), _int(e, "bytes", where), _int(e, "peer", where) if op in POINT_TO_POINT else None,
                  in_place)
    what = f"{where}: op {issue.id} ({issue.describe()})"
    if list(issue.members) != sorted(set(issue.members)):
        raise InputError(f"{what}: members not ascending and distinct")
    if rank not in issue.members:
        raise InputError(f"{what}: its members do not include rank {rank}")
    if issue.peer is not None and (issue.peer == rank or issue.members != tuple(sorted((rank, issue.peer)))):
        raise InputError(f"{what}: a {op}'s members are this rank and its peer, another rank")
    if issue.peer is None and issue.group_size != len(issue.members):
        raise InputError(f"{what}: group_size {issue.group_size} but {len(issue.members)} members")
    return issue


def _event(e: Any, rank: int, where: str) -> Event:
    if not isinstance(e, dict):
        raise InputError(f"{where}: {type(e).__name__}, not an event object")
    kinds = [k for k in ("compute", "issue", "wait") if k in e]
    if len(kinds) != 1:
        raise InputError(f"{where}: an event has exactly one of \"compute\", \"issue\", \"wait\" (it has "
                         f"{', '.join(kinds) or 'none'})")
    if kinds[0] == "compute":
        return _compute(e, where)
    if kinds[0] == "issue":
        return _issue(e, rank, where)
    _keys(e, {"wait"}, where)
    return Wait(_int(e, "wait", where, None))


def parse_schedule(rank: int, events: Any) -> tuple[Event, ...]:
    """One rank's events, typed and checked on their own (module docstring); InputError naming the rank and event."""
    if not isinstance(events, Sequence) or isinstance(events, str):
        raise InputError(f"rank {rank}: the schedule is {type(events).__name__}, not a list of events")
    out = tuple(_event(e, rank, f"rank {rank} event {i}") for i, e in enumerate(events))
    issued: dict[int, tuple[int, Issue]] = {}  # id -> its event's index and the event
    waited: set[int] = set()
    for i, e in enumerate(out):
        if isinstance(e, Issue):
            if e.id in issued:
                raise InputError(f"rank {rank} event {i}: op id {e.id} issued twice (events {issued[e.id][0]} and {i})")
            issued[e.id] = (i, e)
        elif isinstance(e, Wait):
            if e.id not in issued:
                raise InputError(f"rank {rank} event {i}: a wait for op {e.id}, which this rank has not issued before it")
            waited.add(e.id)
    for id, (i, issue) in issued.items():
        if id not in waited:
            raise InputError(f"rank {rank} event {i}: op {id} ({issue.describe()}) is issued but never waited for")
    return out


def parse_window(schedules: Mapping[int, Any]) -> tuple[dict[int, list[Any]], int]:
    """Every rank's schedule object ({"events": [...], "steps": K}) as the replay takes them: the events per rank and the
    steps of the window, which every rank's must agree on; InputError naming the rank otherwise (a "steps" that is not
    an integer >= 1, a window whose optimizer events are not one per step, ranks with different windows)."""
    events: dict[int, list[Any]] = {}
    steps: dict[int, int] = {}
    for rank, s in sorted(schedules.items()):
        if not isinstance(s, dict) or "events" not in s or set(s) - {"events", "steps"}:
            raise InputError(f"rank {rank}: the schedule is {s!r:.80}, not an object of \"events\" and \"steps\"")
        steps[rank] = _int(s, "steps", f"rank {rank}'s schedule", 1) if "steps" in s else 1
        events[rank] = s["events"]
        optimizers = sum(1 for e in parse_schedule(rank, s["events"]) if isinstance(e, Optimizer))
        if optimizers != steps[rank]:
            raise InputError(f"rank {rank}: its schedule spans {steps[rank]} step(s) but has {optimizers} optimizer "
                             "event(s), one per step")
    if len(set(steps.values())) > 1:
        (a, k), (b, m) = sorted(steps.items())[0], next((r, n) for r, n in sorted(steps.items()) if n != steps[min(steps)])
        raise InputError(f"rank {a}'s schedule spans {k} step(s), rank {b}'s {m}: the ranks' windows differ")
    return events, steps[min(steps)] if steps else 1
