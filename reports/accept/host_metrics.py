"""The metrics an acceptance rules file can address (rules.py), per record kind: where the number is in the
record, which way is better, the peak it is a fraction of (when the record carries one), and which hosts
the number speaks for. The one place to edit when a new figure should be judged per host.

Which hosts a record speaks for (Where):
- HOST: the record names its host (`host`), or the two hosts of a pair (`src_host`, `dst_host`: a slow
  pair counts against both; each host's value is then the median of its pairs, so one bad host does not
  fail every peer it was paired with);
- MEASURING_HOST: the record's `host` (the kernels and their ceilings: the first process of each host
  measures that host); a record without one (older results, where process 0 alone measured) is process 0's host;
- RUN: every host of the run (a collective or a training run's throughput involves them all);
- PER_RANK: each entry of a per-rank list (`ranks` of a train record) on the host its rank ran on.
"""
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..common import identity as ids
from ..common.json_types import Record, number
from ..common.load import Result


class Where(str, Enum):
    HOST = "host"
    MEASURING_HOST = "measuring host"
    RUN = "run"
    PER_RANK = "per rank"


class Better(str, Enum):
    HIGHER = "higher"
    LOWER = "lower"


@dataclass(frozen=True)
class HostMetric:
    kind: str
    name: str
    path: tuple[str, ...]          # the number, from the record (PER_RANK: from each entry of `entries`)
    better: Better
    unit: str
    where: Where
    peak: tuple[str, ...] = ()     # the record's datasheet or ceiling peak of the same unit, when it carries one
    entries: str = ""              # PER_RANK: the record's list of per-rank entries


def _metrics(*ms: HostMetric) -> dict[str, HostMetric]:
    return {f"{m.kind}.{m.name}": m for m in ms}


H, L = Better.HIGHER, Better.LOWER
METRICS = _metrics(
    HostMetric("link", "bandwidth_gbps", ("bandwidth_gbps",), H, "GB/s", Where.HOST, peak=("link", "peak_gbps")),
    HostMetric("link", "latency_us", ("latency_us", "median"), L, "us", Where.HOST),
    HostMetric("collective", "busbw_gbps", ("busbw_gbps",), H, "GB/s", Where.RUN),
    HostMetric("collective", "time_us", ("time_us", "median"), L, "us", Where.RUN),
    HostMetric("kernel", "tflops", ("tflops",), H, "TFLOP/s", Where.MEASURING_HOST, peak=("roofline", "attainable_tflops")),
    HostMetric("kernel", "time_us", ("time_us", "median"), L, "us", Where.MEASURING_HOST),
    HostMetric("kernel_ceiling", "value", ("value",), H, "", Where.MEASURING_HOST),  # unit: the record's own
    HostMetric("train", "throughput_per_s", ("throughput_per_s",), H, "items/s", Where.RUN),
    HostMetric("train", "step_time_us", ("step_time_us", "median"), L, "us", Where.RUN),
    HostMetric("train", "rank_step_us", ("step_us",), L, "us", Where.PER_RANK, entries="ranks"),
    HostMetric("train", "rank_compute_us", ("compute_us",), L, "us", Where.PER_RANK, entries="ranks"),
    HostMetric("telemetry", "cpu_freq_mhz", ("summary", "cpu_freq_mhz", "median"), H, "MHz", Where.HOST),
)

# What a rule's `where` may select records by, per kind: record fields, and `link_type` (shm, network,
# nvlink...; pairs of different link types are never one fleet). `step` (the suite step) is selectable
# on every kind.
SELECTORS: dict[str, tuple[str, ...]] = {
    "link": ("test", "engine", "direction", "bytes", "memory", "p2p", "src", "dst", "link_type"),
    "collective": ("op", "backend", "dtype", "redop", "bytes", "in_place", "graph", "transport", "algo", "proto"),
    "kernel": ("op", "shape_name", "dtype", "backend"),
    "kernel_ceiling": ("ceiling", "level"),
    "train": ("model", "preset", "backend", "precision", "label", "transport"),
    "telemetry": (),
}
# What makes two records of a kind without a compare identity (identity.py) the same measurement: a ceiling
# by its probe (each GEMM size or copy level is compared with the same probe on the other hosts).
SAME = {"kernel_ceiling": ("ceiling", "level", "source"), "telemetry": ()}
LOCATION_KEYS = ("host", "src_host", "dst_host", "src", "dst")  # never part of what makes two hosts' figures alike


def selector_value(record: Record, key: str) -> Any:
    if key == "link_type":
        return record.get("link", {}).get("type")
    return record.get(key)


def _number(obj: Any, path: tuple[str, ...]) -> float | None:
    for k in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(k)
    return number(obj)


def same_measurement(metric: HostMetric, record: Record) -> tuple[Any, ...]:
    """What makes figures of different hosts comparable (their fleet median is taken together): the record's
    identity less where it ran. GPU endpoints (cuda:N) stay in it, since pairs of GPUs differ by topology."""
    ident = ids.identity(record)
    pairs = list(ident[1:]) if ident is not None else [(k, record.get(k)) for k in SAME[metric.kind]]
    kept = [(k, v) for k, v in pairs
            if k not in LOCATION_KEYS or (k in ("src", "dst") and str(v).startswith("cuda:"))]
    if metric.kind == "link":
        kept.append(("link_type", selector_value(record, "link_type")))
    return tuple(kept)


def run_hosts(result: Result) -> list[str]:
    by_host = (result.run.get("launcher") or {}).get("ranks_by_host") or {}
    return list(by_host) or [h["hostname"] for h in result.run["hosts"]]


def host_of_rank(result: Result, rank: int) -> str | None:
    """Through the launcher's ranks_by_host; a run on one host has all its ranks there."""
    by_host = (result.run.get("launcher") or {}).get("ranks_by_host") or {}
    for host, ranks in by_host.items():
        if rank in ranks:
            return str(host)
    hosts = run_hosts(result)
    return hosts[0] if len(hosts) == 1 else None


@dataclass(frozen=True)
class Value:
    host: str
    value: float
    peak: float | None
    unit: str


def values(metric: HostMetric, result: Result, record: Record) -> Iterator[Value]:
    """The record's figure for each host it speaks for (none when the record lacks it: a latency test has
    no bandwidth)."""
    peak = _number(record, metric.peak) if metric.peak else None
    unit = metric.unit or str(record.get("unit", ""))
    if metric.where == Where.PER_RANK:
        for entry in record.get(metric.entries) or []:
            v, host = _number(entry, metric.path), host_of_rank(result, entry.get("rank", -1))
            if v is not None and host is not None:
                yield Value(host, v, None, unit)
        return
    v = _number(record, metric.path)
    if v is None:
        return
    if metric.where == Where.HOST:
        hosts = [record[k] for k in ("host", "src_host", "dst_host") if record.get(k)]
    elif metric.where == Where.MEASURING_HOST:
        hosts = [record["host"] if record.get("host") else host_of_rank(result, 0) or run_hosts(result)[0]]
    else:
        hosts = run_hosts(result)
    for host in dict.fromkeys(hosts):  # a pair on one host counts once for it
        yield Value(str(host), v, peak if peak else None, unit)
