"""Was a run measured on a machine busy with something else? Read from its telemetry records.

Three signs, each a reason `compare` will not decide on that run's numbers:
- other processes used more than `max_others_busy` of the CPUs (median over the run): the telemetry's
  `cpu_busy_others_fraction`, busy time minus the run's own processes and their children;
- for results without that figure, the 1-minute load average above `max_load_per_cpu` x the host's
  hardware threads. It is the weaker sign: it counts the run's own processes, and it still carries for a
  minute whatever ran before (a build), so it is only used when the better figure is missing;
- a GPU whose clocks were throttled or held low under load (the telemetry summary's `throttled`).
"""
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
    out = []
    for t in result.records_of("telemetry"):
        s, host = t["summary"], t["host"]
        others = _median(s.get("cpu_busy_others_fraction"))
        if others is not None:
            if others > policy.max_others_busy:
                out.append(f"other processes used {others:.0%} of {host}'s CPUs (limit {policy.max_others_busy:.0%})")
        else:
            load, cpus = _median(s.get("load1")), _cpus(result, host)
            if load is not None and cpus and load > policy.max_load_per_cpu * cpus:
                out.append(f"load {load:.1f} on {host}'s {cpus} CPU(s) (limit {policy.max_load_per_cpu:g} per CPU)")
    return out


def reasons(result: Result, policy: Policy) -> list[str]:
    """One short sentence per sign of contention in `result` (empty when none, or when it has no telemetry)."""
    out = busy_host_reasons(result, policy)
    for t in result.records_of("telemetry"):
        s, host = t["summary"], t["host"]
        if s.get("throttled"):
            gpus = [str(g["index"]) for g in s.get("gpus", []) if g.get("throttled_samples") or g.get("low_clock_samples")]
            out.append(f"GPU {','.join(gpus) or '?'} on {host} throttled")
    return out


def has_telemetry(result: Result) -> bool:
    return bool(result.records_of("telemetry"))
