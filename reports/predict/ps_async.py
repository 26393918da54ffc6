"""`--sync ps-async`'s step, predicted as its steady state (issue #41).

Its ranks share no step (workloads/parallel/async_ps.h): a worker's step c waits only until every shard it holds is
at version >= c - S (--staleness S), computes, and sends each server its gradient's shard without waiting; a server
applies a clock once every worker's gradient of it is in and sends the new version to every worker. So there is no
list of ops whose members meet to replay: the plan gives each rank its own compute (a worker's forwards and
backwards, a server's update of its shard: `schedule`) and the facts below (`ps_async`: workers, servers, S, the
bytes of one shard), and the step is the period P of the steady state, the largest of three bounds:

- **a rank's own work per step**: its compute, a worker's host time outside its phases (the data wait: the
  calibration's, compute.py) and its server's update (one core does both where a worker serves), plus its transfers:
  each shard it sends a remote server and each version it sends a remote worker crosses its link once each way (a
  send and, in the other direction, the matching receive), `t` each, the send fit (step_costs.POINT_TO_POINT) at
  the shard's bytes between the two. Where collectives move only while their ranks wait in the library (--progress
  in-waits: MPI's, and the engine pumps its transfers only while it waits) the transfers add to the work; where they
  move on their own (independent: NCCL's stream) the larger of the two is the bound.
- **the staleness chain**: version c - S must exist before step c starts, and it needs the slowest worker's step
  c - S computed (its host time with it), its shard sent (t), the server's update (u) and the version back (t): S + 1
  steps span that chain, so (S + 1) P >= host + compute + 2 t + u. S = 0 is the synchronous parameter server: the
  chain is the step.

Each rank's figures: its compute and update as the calibration costs them, the rest of P its time waiting for
versions and gradients, which a measured ps-async record counts as exposed transfer (its `communication`). Not
modelled: a worker slower than the others by more than the staleness absorbs (every worker is taken to compute at the
calibration's rate), a server's summing of the workers' gradients (element-wise, beside its update), and the start and
end of a run (the steady state only)."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from ..common.errors import InputError
from ..common.json_types import JsonObject, Record
from .replay import Progress, RankTimes, StepReplay
from .schedule import Compute, Optimizer

TRANSFER_OP = "send"  # a shard or a version: one point-to-point transfer (step_costs.POINT_TO_POINT's series)
GROUP = "dp"  # the group the plan and a measured record name the workers' and servers' waits by


class Bound(Enum):
    """Which of the steady state's bounds sets the step."""
    RANK = "a rank's own work"
    STALENESS = "the staleness chain"


@dataclass(frozen=True)
class Facts:
    """A rank's `ps_async` in its train_plan record."""
    workers: int
    servers: int
    dedicated: bool
    staleness: int
    shard_bytes: int
    shard: int | None
    worker: bool

    @staticmethod
    def of(record: Record) -> Facts:
        f = record["ps_async"]
        return Facts(int(f["workers"]), int(f["servers"]), bool(f["dedicated"]), int(f["staleness"]),
                     int(f["shard_bytes"]), None if f["shard"] is None else int(f["shard"]), bool(f["worker"]))


@dataclass(frozen=True)
class AsyncPsStep:
    step_us: float
    bound: Bound
    bound_rank: int  # the rank whose own work is the largest
    rank_us: float  # that rank's work per step (its transfers included as --progress says)
    chain_us: float  # the staleness chain over S + 1 steps
    transfer_us: float  # one shard (or version) between a worker and a server
    staleness: int

    def describe(self) -> str:
        return (f"ps-async steady state: the step is {self.bound.value} (rank {self.bound_rank}'s own work "
                f"{self.rank_us:.1f} us per step; the chain of a step, its shard to the server, the update and the version "
                f"back {self.chain_us * (self.staleness + 1):.1f} us over S + 1 = {self.staleness + 1} step(s): "
                f"{self.chain_us:.1f} us each); one shard {self.transfer_us:.1f} us")

    def as_json(self) -> JsonObject:
        return {"bound": self.bound.name.lower(), "bound_rank": self.bound_rank, "rank_us": self.rank_us,
                "chain_us": self.chain_us, "transfer_us": self.transfer_us, "staleness": self.staleness}


def is_async_ps(records: list[Record]) -> bool:
    return "ps_async" in records[0]


def _server_rank(f: Facts, k: int) -> int:
    """The rank that serves shard k: the last ranks when dedicated, else the first workers."""
    return f.workers + k if f.dedicated else k


def _transfers(rank: int, f: Facts) -> int:
    """The shards this rank sends remote servers and the versions it sends remote workers, per step (each also
    crossing its link the other way: the matching receives)."""
    sends = sum(1 for k in range(f.servers) if _server_rank(f, k) != rank) if f.worker else 0
    serves = (f.workers - (1 if f.worker else 0)) if f.shard is not None else 0
    return sends + serves


def steady_state(facts: Mapping[int, Facts], own_us: Mapping[int, tuple[float, float, float]],
                 transfer_us: Callable[[int, int], float], progress: Progress) -> tuple[AsyncPsStep, StepReplay]:
    """The period of the steady state. own_us: each rank's (compute, update, host) per step (own_work); transfer_us(a,
    b): one shard between ranks a and b."""
    first = next(iter(facts.values()))
    worker_ranks = [r for r, f in facts.items() if f.worker]
    server_ranks = {f.shard: r for r, f in facts.items() if f.shard is not None}
    if not worker_ranks or sorted(server_ranks) != list(range(first.servers)):
        raise InputError(f"a ps-async plan of {len(facts)} ranks names no worker or not every one of its {first.servers} "
                         "server(s): not a plan trainscope writes")
    t = max(transfer_us(w, s) for w in worker_ranks for s in server_ranks.values() if w != s) \
        if any(w != s for w in worker_ranks for s in server_ranks.values()) else 0.0

    def work(rank: int) -> float:
        own = sum(own_us[rank])
        moving = _transfers(rank, facts[rank]) * t
        return own + moving if progress is Progress.IN_WAITS else max(own, moving)

    works = {r: work(r) for r in facts}
    busiest = max(works, key=lambda r: (works[r], -r))
    update = max(own_us[r][1] for r in server_ranks.values())
    chain = (max(own_us[r][0] + own_us[r][2] for r in worker_ranks) + 2 * t + update) / (first.staleness + 1)
    step = max(works[busiest], chain)
    figures = AsyncPsStep(step, Bound.RANK if works[busiest] >= chain else Bound.STALENESS, busiest, works[busiest], chain,
                          t, first.staleness)
    ranks = tuple(RankTimes(r, step, own_us[r][0], own_us[r][1], 0.0, step - sum(own_us[r]), 0.0, 0.0,
                            {GROUP: step - sum(own_us[r])}, own_us[r][2]) for r in sorted(facts))
    return figures, StepReplay(step, ranks, ())


def own_work(events: Sequence[object], rank: int, compute_us: Callable[[Compute | Optimizer, int], float],
             host_us: float) -> tuple[float, float, float]:
    """A rank's (compute, update, host) per step from its parsed schedule (compute and optimizer events only) and its
    host time outside them (a worker's: a server's step loads no data)."""
    compute = update = 0.0
    for e in events:
        if isinstance(e, Optimizer):
            update += compute_us(e, rank)
        elif isinstance(e, Compute):
            compute += compute_us(e, rank)
        else:
            raise InputError(f"rank {rank}'s ps-async schedule issues an op: its ranks share no step, so a plan of it "
                             "has compute alone")
    return compute, update, host_us
