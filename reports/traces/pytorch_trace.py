"""PyTorch profiler traces as trace documents `trainscope analyze` reads: one Chrome trace per rank, as
torch.profiler's export_chrome_trace or tensorboard_trace_handler (*.pt.trace.json) writes it, from Kineto (an object
with traceEvents, distributedInfo and baseTimeNanoseconds) or from the legacy profiler of a build without Kineto (a
bare list of events without categories, times from that process's own start).

Each span gets its role in the analysis as its `cat` (reports/traces/trace_dir.py):
  step           ProfilerStep#N on the host (not its gpu_user_annotation copy on a stream)
  compute        on a GPU trace the kernels that are not communication; on a CPU-only trace the host's cpu_ops (the legacy
                 profiler's events are all ops) less the collectives they run on the same thread
  communication  NCCL's kernels (named nccl..., as HTA classes them) on a GPU trace; on a CPU-only trace the collective
                 ops: c10d's (c10d::allreduce_), the backends' (gloo:all_reduce, nccl:all_reduce) and record_param_comms
  kernel, memcpy, memset  the device's work (Kineto's kernel, gpu_memcpy, gpu_memset)
A collective's group is its Process Group Name. The rank is distributedInfo.rank, or the file's place in the directory
(names in natural order: rank2 before rank10) where a trace has none."""
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..common.errors import InputError
from ..common.files import read_input
from ..common.strict_json import loads
from .intervals import span, subtract, union
from ..common.json_types import TraceDoc, TraceEvent
from ..common.load import validate_trace_events
from .trace_roles import COMMUNICATION, COMPUTE, DEVICE as DEVICE_ROLES, STEP as STEP_ROLE, kineto_categories

STEP = re.compile(r"ProfilerStep#(\d+)")
COMMUNICATION_KERNEL = re.compile(r"nccl", re.IGNORECASE)
COMMUNICATION_OP = re.compile(r"(c10d::|gloo:|nccl:|mpi:|record_param_comms$)")
DEVICE = {kineto_categories()[role]: role for role in DEVICE_ROLES}  # Kineto category -> role
HOST_OP = "cpu_op"  # Kineto's category of an operator; the legacy profiler's events have none and are all operators


def natural_key(p: Path) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)]


def args_of(e: TraceEvent) -> dict[str, Any]:
    a = e.get("args")
    return a if isinstance(a, dict) else {}


def role_span(e: TraceEvent, role: str, **args: Any) -> TraceEvent:
    kept = args_of(e)
    return {"ph": "X", "name": e["name"], "cat": role, "ts": e["ts"], "dur": e["dur"], "pid": e.get("pid", 0),
            "tid": e.get("tid", 0), "args": {**kept, **args}}


def host_compute(ops: Sequence[TraceEvent], collectives: Sequence[TraceEvent]) -> list[TraceEvent]:
    """Per thread, the time its ops ran less the time it ran collectives (their issue, and the ops inside them)."""
    threads: dict[tuple[Any, Any], tuple[list[TraceEvent], list[TraceEvent]]] = {}
    for e in ops:
        threads.setdefault((e.get("pid", 0), e.get("tid", 0)), ([], []))[0].append(e)
    for e in collectives:
        threads.setdefault((e.get("pid", 0), e.get("tid", 0)), ([], []))[1].append(e)
    out = []
    for (pid, tid), (busy, comm) in threads.items():
        for lo, hi in subtract(union(span(e) for e in busy), union(span(e) for e in comm)):
            out.append({"ph": "X", "name": "cpu ops", "cat": COMPUTE, "ts": lo, "dur": hi - lo, "pid": pid, "tid": tid,
                        "args": {}})
    return out


def roles(events: Sequence[TraceEvent]) -> list[TraceEvent]:
    """The spans of one rank's PyTorch trace with their roles as `cat`."""
    spans = [e for e in events if e["ph"] == "X"]
    gpu = any(e.get("cat") == "kernel" for e in spans)
    out: list[TraceEvent] = []
    ops: list[TraceEvent] = []
    collectives: list[TraceEvent] = []
    for e in spans:
        cat = e.get("cat", HOST_OP)
        if (m := STEP.fullmatch(e["name"])) and cat != "gpu_user_annotation":
            out.append(role_span(e, STEP_ROLE, step=int(m.group(1))))
        elif cat in DEVICE:
            out.append(role_span(e, DEVICE[cat]))
            if cat == "kernel":
                comm = bool(COMMUNICATION_KERNEL.search(e["name"]))
                out.append(role_span(e, COMMUNICATION if comm else COMPUTE, **group_of(e) if comm else {}))
        elif not gpu and cat == HOST_OP:
            (collectives if COMMUNICATION_OP.match(e["name"]) else ops).append(e)
    out += [role_span(e, COMMUNICATION, **group_of(e)) for e in collectives]
    return out + host_compute(ops, collectives)


def group_of(e: TraceEvent) -> dict[str, str]:
    return {"group": str(args_of(e).get("Process Group Name", ""))}


def read_trace(f: Path) -> tuple[list[TraceEvent], dict[str, Any]]:
    """(its events, its top-level fields) of one PyTorch trace file."""
    try:
        doc = loads(read_input(f), str(f))
    except ValueError as e:  # json.JSONDecodeError included
        raise InputError(f"{f}: not a trace file ({e})") from None
    events, meta = (doc, {}) if isinstance(doc, list) else (doc.get("traceEvents"), doc) if isinstance(doc, dict) else (None, {})
    if events is None:
        raise InputError(f"{f}: not a Chrome trace (neither a list of events nor an object with traceEvents)")
    validate_trace_events(events, str(f))
    info = meta.get("distributedInfo")
    if info is not None and not (isinstance(info, dict) and isinstance(info.get("rank", 0), int)
                                 and not isinstance(info.get("rank", 0), bool) and info.get("rank", 0) >= 0):
        raise InputError(f"{f}: distributedInfo.rank must be a rank (an integer, 0 or more)")
    base = meta.get("baseTimeNanoseconds", 0)
    if isinstance(base, bool) or not isinstance(base, int) or base < 0:
        raise InputError(f"{f}: baseTimeNanoseconds must be a whole number of nanoseconds, 0 or more")
    return events, meta


def load_pytorch_dir(d: Path) -> dict[int, TraceDoc]:
    """{rank: trace document} of a directory of PyTorch profiler traces (*.json); InputError when it holds none."""
    files = sorted((p for p in d.iterdir() if p.name.endswith(".json") and p.is_file()), key=natural_key)
    if not files:
        raise InputError(f"{d}: no trace files: neither rank-<r>.json (`trainscope train --trace {d}`) "
                         "nor PyTorch profiler traces (*.json)")
    read = [read_trace(f) for f in files]
    # Kineto's times are microseconds since baseTimeNanoseconds (one clock on a host): on one axis once each rank's
    # base is added. The legacy profiler's start at each process's own profiler start, so ranks cannot be compared.
    aligned = all(meta for _, meta in read)
    first = min(meta.get("baseTimeNanoseconds", 0) for _, meta in read)
    ranks: dict[int, TraceDoc] = {}
    for place, (f, (events, meta)) in enumerate(zip(files, read)):
        rank = meta.get("distributedInfo", {}).get("rank", place)
        if rank in ranks:
            raise InputError(f"{f}: rank {rank} again (another file of {d} is that rank's)")
        shift = (meta.get("baseTimeNanoseconds", 0) - first) / 1e3
        spans = [dict(e, ts=e["ts"] + shift) for e in roles(events)]
        ranks[rank] = {"traceEvents": spans, "distributedInfo": {"rank": rank, "world_size": len(files)},
                       "trainscope": {"what": f"PyTorch profiler trace ({'Kineto' if meta else 'legacy profiler'})",
                                      "source": str(f), "clocks_aligned": aligned}}
    return ranks
