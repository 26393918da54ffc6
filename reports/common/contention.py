"""Was a run measured on a machine busy with something else? Read from its telemetry records.

Three signs, each a reason `compare` will not decide on that run's numbers:
- other processes used more than `max_others_busy` of the CPUs (median over the run): the telemetry's
  `cpu_busy_others_fraction`, busy time minus the run's own processes and their children;
- for results without that figure, the 1-minute load average above `max_load_per_cpu` x the host's
  hardware threads. It is the weaker sign: it counts the run's own processes, and it still carries for a
  minute whatever ran before (a build), so it is only used when the better figure is missing;
- a GPU whose clocks were throttled or held low under load (the telemetry summary's `throttled`).

`accept` reads the same signs per host (by_host), and one more that every kernels step records whether or not
telemetry ran: the share of the CPUs other processes took while the host's compute ceiling was measured, and
while its kernels were timed (their median), each record's `others_cpu_fraction`.
"""
from collections import defaultdict
from statistics import median
from typing import Any

from .load import Result
from .policy import Policy


def _cpus(result: Result, host: str) -> int | None:
    for h in result.run["hosts"]:
        if h["hostname"] == host:
            return h["cpu"].get("threads") or h["cpu"].get("cores")
    return None


def _median(rng: Any) -> float | None:
    return rng["median"] if isinstance(rng, dict) else None


def busy_host_reasons(result: Result, policy: Policy) -> list[str]:
    """One short sentence per host of `result` that other work kept busy (the first two signs): what `compare`
    refuses to decide on and the report's Telemetry section names."""
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
        others = _median(s.get("cpu_busy_others_fraction"))
        if others is not None:
            if others > policy.max_others_busy:
                out.append((host, f"other processes used {others:.0%} of {host}'s CPUs (limit {policy.max_others_busy:.0%})",
                            True))
        else:
            load, cpus = _median(s.get("load1")), _cpus(result, host)
            if load is not None and cpus and load > policy.max_load_per_cpu * cpus:
                out.append((host, f"load {load:.1f} on {host}'s {cpus} CPU(s) (limit {policy.max_load_per_cpu:g} per CPU)",
                            True))
        if s.get("throttled"):
            gpus = [str(g["index"]) for g in s.get("gpus", []) if g.get("throttled_samples") or g.get("low_clock_samples")]
            out.append((host, f"GPU {','.join(gpus) or '?'} on {host} throttled", False))
    return out


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
            share = rec.get("others_cpu_fraction") if rec["kind"] in ("kernel", "kernel_ceiling") else None
            if isinstance(share, (int, float)) and not isinstance(share, bool):
                what = "its ceilings were measured" if rec["kind"] == "kernel_ceiling" else "its kernels were timed"
                shares[(_measuring_host(result, rec), what)].append(float(share))
        for (host, what), xs in shares.items():
            if median(xs) > policy.max_others_busy:
                out[host].append(f"other processes used {median(xs):.0%} of {host}'s CPUs while {what} "
                                 f"(limit {policy.max_others_busy:.0%})")
    return {h: list(dict.fromkeys(w)) for h, w in out.items()}


def has_telemetry(result: Result) -> bool:
    return bool(result.records_of("telemetry"))
