"""A trace directory as {rank: trace document}, whoever wrote it: trainscope's own files (DIR/rank-<r>.json, trace-v1
or trace-v2) or PyTorch profiler traces (reports/traces/pytorch_trace.py). In what this returns, a span's `cat` is its role in
the analysis (kernels/trace.h's categories: step, phase, compute, communication, wait; kernel, memcpy, memset), which a
trace-v2 file keeps in args.role beside Kineto's category and a trace-v1 file gave as its `cat`."""
import re
from pathlib import Path

from ..common.errors import InputError
from ..common.files import read_input
from ..common.strict_json import loads
from ..common.json_types import TraceDoc
from ..common.load import trace_format, validate_trace
from .pytorch_trace import load_pytorch_dir

RANK_FILE = re.compile(r"rank-(\d+)\.json")


def with_roles(doc: TraceDoc, fmt: str) -> TraceDoc:
    """The document with each span's role as its `cat` (trace-v1's already are)."""
    if fmt != "trace-v1":
        for e in doc["traceEvents"]:
            if e["ph"] == "X":
                e["cat"] = e["args"]["role"]
    return doc


def load_trace_docs(directory: str | Path) -> dict[int, TraceDoc]:
    """{rank: the rank's trace document}, its spans' roles as their `cat`."""
    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"{d}: not a directory of trace files")
    numbered = [(int(m.group(1)), p) for p in d.iterdir() if (m := RANK_FILE.fullmatch(p.name))]
    if not numbered:
        return load_pytorch_dir(d)
    ranks: dict[int, TraceDoc] = {}
    for _, f in sorted(numbered):
        try:
            doc = loads(read_input(f), str(f))
        except ValueError as e:  # json.JSONDecodeError included
            raise InputError(f"{f}: not a trace file ({e})") from None
        fmt = trace_format(doc, str(f))
        validate_trace(doc, str(f))
        rank = doc["distributedInfo"]["rank"]
        if rank in ranks:
            raise InputError(f"{f}: rank {rank} again (another file of {d} is that rank's)")
        ranks[rank] = with_roles(doc, fmt)
    return ranks
