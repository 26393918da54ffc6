"""Was a run measured on a machine busy with something else? Read from its telemetry records.

Three signs:
- other processes used more than `max_others_busy` of the CPUs (median over the run): the telemetry's
  `cpu_busy_others_fraction`, busy time minus the run's own processes and their children;
- for results without that figure, the 1-minute load average above `max_load_per_cpu` x the host's
  hardware threads. It is the weaker sign: it counts the run's own processes, and it still carries for a
  minute whatever ran before (a build), so it is only used when the better figure is missing;
- a GPU whose clocks were throttled or held low under load (the telemetry summary's `throttled`).

What `compare` does with them (band): contention does not veto a verdict; it widens what counts as noise.
A run's contention is one number, the share of its busiest host's CPUs that other work took (`share`: the
first sign's figure, or from the load average L per CPU the share a CPU-bound process loses to the rest of
the queue, 1 - 1/L; 0 for a run within the policy's limits, so quiet runs compare exactly as before). The
ratio of the two sides' medians may then be off by a factor B either way, B = exp(PER_SHARE_DIFFERENCE x d
+ PER_SHARED_SHARE x s), d the difference between the sides' shares and s the share both had:
- PER_SHARE_DIFFERENCE = 5: contention that differs explains large effects. Seen here: a busy loop that took
  35% of the 2-core VM's CPUs made the tiny transformer's train step 5.5x slower (README, compare's
  inconclusive example); ln 5.5 / 0.35 = 4.9. So 10 points of difference widen the band x1.65, 35 points x5.8,
  a quiet side against one at 88% x81: nothing short of that is decided;
- PER_SHARED_SHARE = 0.25: contention alike on both sides widens little. Each run's own samples already hold
  the spread the load gave it; what they miss is that two runs at one load land apart: two identical CI runs at
  a load of about 4.25 per CPU (a share of 76%) gave 16 false regressions, their records some 10% apart (the test
  that keeps the case, test_the_ci_case_two_identical_runs_on_a_loaded_machine), and 0.25 x 0.76 gives x1.21,
  which covers it. At 88% on both sides it is x1.25: a 2x slowdown with a tight interval stays a regression.
A throttled GPU keeps its veto: the telemetry counts the throttled samples, not by how much the clocks fell,
so no band can be sized for it.

`accept` reads the same signs per host (by_host), and one more that every kernels step records whether or not
telemetry ran: the share of the CPUs other processes took while the host's compute ceiling was measured, and
while its kernels were timed (their median), each record's `others_cpu_fraction`.
"""
import math
from collections import defaultdict
from collections.abc import Sequence
from statistics import median
from typing import Any

from .json_types import number
from .load import Result
from .policy import Policy


def _cpus(result: Result, host: str) -> int | None:
    for h in result.run["hosts"]:
        if h["hostname"] == host:
            return h["cpu"].get("threads") or h["cpu"].get("cores")
    return None


def _median(rng: Any) -> float | None:
    return rng["median"] if isinstance(rng, dict) else None


PER_SHARE_DIFFERENCE = 5.0  # the band's log per unit of difference between the sides' shares (module docstring)
PER_SHARED_SHARE = 0.25     # the band's log per unit of the share both sides had


def busy_host_reasons(result: Result, policy: Policy) -> list[str]:
    """One short sentence per host of `result` that other work kept busy (the first two signs): what widens
    `compare`'s intervals and the report's Telemetry section names."""
    return [why for _, why, busy in _telemetry(result, policy) if busy]


def reasons(result: Result, policy: Policy) -> list[str]:
    """One short sentence per sign of contention in `result` (empty when none, or when it has no telemetry): the
    busy hosts first, then the throttled GPUs."""
    signs = _telemetry(result, policy)
    return [why for _, why, busy in signs if busy] + [why for _, why, busy in signs if not busy]


def _telemetry(result: Result, policy: Policy) -> list[tuple[str, str, bool]]:
    """(host, sentence, whether the sign is other work keeping the host busy) per sign in the telemetry records."""
    out = []
    for t in result.records_of("telemetry"):
        s, host = t["summary"], t["host"]
        busy = _busy(result, host, s, policy)
        if busy:
            out.append((host, busy[1], True))
        if s.get("throttled"):
            gpus = [str(g["index"]) for g in s.get("gpus", []) if g.get("throttled_samples") or g.get("low_clock_samples")]
            out.append((host, f"GPU {','.join(gpus) or '?'} on {host} throttled", False))
    return out


def _busy(result: Result, host: str, summary: dict[str, Any], policy: Policy) -> tuple[float, str] | None:
    """The share of `host`'s CPUs other work took and the sentence that names it, when beyond the policy's limit."""
    others = _median(summary.get("cpu_busy_others_fraction"))
    if others is not None:
        if others <= policy.max_others_busy:
            return None
        return others, f"other processes used {others:.0%} of {host}'s CPUs (limit {policy.max_others_busy:.0%})"
    load, cpus = _median(summary.get("load1")), _cpus(result, host)
    if load is None or not cpus or load <= policy.max_load_per_cpu * cpus:
        return None
    # L runnable tasks per CPU leave a CPU-bound process 1/L of one; the rest is the others' share as the load tells
    # it (an upper bound: the load counts the run's own processes too).
    return max(0.0, 1 - cpus / load), f"load {load:.1f} on {host}'s {cpus} CPU(s) (limit {policy.max_load_per_cpu:g} per CPU)"


def share(result: Result, policy: Policy) -> float:
    """The share of its busiest host's CPUs other work took while `result` ran: 0 when every host was within the
    policy's limits, or when the result has no telemetry (contention unknown: the comparison says so)."""
    shares = [busy[0] for t in result.records_of("telemetry") if (busy := _busy(result, t["host"], t["summary"], policy))]
    return min(1.0, max(shares, default=0.0))


def throttled(result: Result) -> bool:
    return any(t["summary"].get("throttled") for t in result.records_of("telemetry"))


def band(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """By what factor, either way, contention may have moved the ratio of the candidate's median to the
    baseline's: `baseline` and `candidate`, the share of each run of a side (module docstring)."""
    differ = max(max(baseline) - min(candidate), max(candidate) - min(baseline), 0.0)
    shared = min([*baseline, *candidate])
    return math.exp(PER_SHARE_DIFFERENCE * differ + PER_SHARED_SHARE * shared)


def _measuring_host(result: Result, record: dict[str, Any]) -> str:
    """A kernels record's host: its own, or (older results, process 0 alone measured) process 0's."""
    if record.get("host"):
        return str(record["host"])
    by_host = (result.run.get("launcher") or {}).get("ranks_by_host") or {}
    for host, ranks in by_host.items():
        if 0 in ranks:
            return str(host)
    return str(result.run["hosts"][0]["hostname"])


def by_host(results: list[Result], policy: Policy) -> dict[str, list[str]]:
    """The signs of contention per host over `results`: the telemetry's, and the kernels step's own."""
    out: defaultdict[str, list[str]] = defaultdict(list)
    for result in results:
        for host, why, busy in _telemetry(result, policy):
            if busy:  # a throttled GPU is the node's own fault, not other work's: acceptance judges it
                out[host].append(why)
        shares: defaultdict[tuple[str, str], list[float]] = defaultdict(list)
        for rec in result.records:
            share = number(rec.get("others_cpu_fraction")) if rec["kind"] in ("kernel", "kernel_ceiling") else None
            if share is not None:
                what = "its ceilings were measured" if rec["kind"] == "kernel_ceiling" else "its kernels were timed"
                shares[(_measuring_host(result, rec), what)].append(share)
        for (host, what), xs in shares.items():
            if median(xs) > policy.max_others_busy:
                out[host].append(f"other processes used {median(xs):.0%} of {host}'s CPUs while {what} "
                                 f"(limit {policy.max_others_busy:.0%})")
    return {h: list(dict.fromkeys(w)) for h, w in out.items()}


def has_telemetry(result: Result) -> bool:
    return bool(result.records_of("telemetry"))
