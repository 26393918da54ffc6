"""`trainscope import`: other tools' output (nccl-tests text and JSON, OSU's collective tests) as one result
document (schema/result-v1.schema.json), so that compare and report put a team's existing numbers beside
trainscope's. Each record carries a `source` (tool, program, file, line); its one value per size is its one
sample (import_records.py). The format is told from the text, or forced with --from.

What the other tools' output does not say stays unknown in the document: the hosts' inventory (null or empty,
with a reason), the spread over ranks (null), the run's time (the file's modification time, the tools'
text carries no date).
"""
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from . import import_nccl_tests as nccl_tests
from . import import_osu as osu
from . import launcher_prefixes
from ..common.files import read_input
from .import_records import Tool, Where
from ..common.json_types import JsonObject, Record, ResultDoc
from ..common.result_document import Envelope, checked, result_document, timestamp
from ..common.strict_json import loads, violation


class Format(str, Enum):
    NCCL_TESTS_TEXT = "nccl-tests text"
    NCCL_TESTS_JSON = "nccl-tests JSON"
    OSU = "OSU"


@dataclass
class Imported:
    """One file's records and what its output says about where it ran."""
    path: str
    tool: Tool
    benchmark: str
    version: str | None
    backend: str
    ranks: list[JsonObject]  # rank, host, pid, device, bus, gpu (nccl-tests), or none (OSU)
    size: int                # ranks of the run
    records: list[Record]
    environment: dict[str, str] = field(default_factory=dict)
    nccl: str | None = None  # the NCCL library version the output names


def detect(text: str, where: Where) -> Format:
    if text.lstrip().startswith("{"):
        try:
            doc = loads(text, where.path)
        except json.JSONDecodeError:
            doc = None
        if nccl_tests.looks_like_json(doc):
            return Format.NCCL_TESTS_JSON
    elif nccl_tests.looks_like_text(text):
        return Format.NCCL_TESTS_TEXT
    elif osu.looks_like(text):
        return Format.OSU
    where.fail("neither nccl-tests output (text with its '# nThread ... nGpus' header, or its -J JSON) nor OSU output "
               "(a '# OSU MPI ... Test' title)")


def _nccl_version(code: int | None) -> str | None:
    """NCCL's version code (22807) as its version (2.28.7)."""
    if not code:
        return None
    if code >= 10000:  # NCCL 2.9 on: major * 10000 + minor * 100 + patch
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def import_file(path: str, forced: Tool | None, op: str | None, ranks: int | None) -> Imported:
    text = read_input(path)
    where = Where(path, None)
    if not text.strip():
        where.fail("empty file: nothing to import")
    if not text.lstrip().startswith("{"):
        text = launcher_prefixes.strip(text)
    fmt = detect(text, where) if forced is None else None
    if forced == Tool.OSU or fmt == Format.OSU:
        if ranks is None:
            where.fail("OSU's output does not say how many ranks ran: give --ranks")
        if op is not None:
            where.fail("--op is for nccl-tests output that does not name its test; OSU's names it")
        records, version, benchmark = osu.parse(text, path, ranks)
        return Imported(path, Tool.OSU, benchmark, version, "mpi", [], ranks, records)
    if ranks is not None:
        where.fail("--ranks is for OSU output: nccl-tests' output names its ranks")
    if fmt == Format.NCCL_TESTS_JSON or (fmt is None and text.lstrip().startswith("{")):
        parsed = nccl_tests.parse_json(text, path, op)
        code = loads(text, path).get("nccl_version")
        nccl = _nccl_version(code if isinstance(code, int) and not isinstance(code, bool) else None)
    else:
        parsed = nccl_tests.parse_text(text, path, op)
        nccl = _library_version(text)
    return Imported(path, Tool.NCCL_TESTS, parsed.benchmark, parsed.version, "nccl", parsed.ranks.entries,
                    len(parsed.ranks.entries), parsed.records, parsed.environment, nccl)


def _library_version(text: str) -> str | None:
    for line in text.splitlines()[:50]:
        if "nccl-library=" in line:
            code = line.split("nccl-library=", 1)[1].split()[0]
            return _nccl_version(int(code)) if code.isdigit() else None
    return None


def _host(name: str, gpus: list[str], nccl: str | None, tool: Tool) -> JsonObject:
    """A host the output names, with what it does not say left unknown (null or empty, with the reason)."""
    why = f"not inventoried: imported from {tool.value} output"
    named = f" (it names {len(gpus)} GPU(s): {', '.join(sorted(set(gpus)))})" if gpus else ""
    return {"hostname": name, "os": "unknown",
            "cpu": {"model": None, "threads": None, "memory_bytes": None, "sockets": None, "cores": None, "numa_nodes": None,
                    "numa": []},
            "gpus": {"available": bool(gpus), "reason": why + named, "devices": [], "links": {"reason": why}},
            "nics": {"rdma": [], "rdma_reason": why, "net": []},
            "versions": {k: None for k in ("trainscope", "git_commit", "mpi", "driver", "cuda_driver", "cuda_runtime", "cublas",
                                           "cudnn")} | {"nccl": nccl}}


def _modified(paths: Sequence[str]) -> str:
    return timestamp(max(os.stat(p).st_mtime for p in paths))


def _process_index(f: Imported) -> dict[tuple[str, int], int]:
    """Each (host, pid) the ranks ran in, numbered in rank order."""
    index: dict[tuple[str, int], int] = {}
    for r in f.ranks:
        index.setdefault((r["host"], r["pid"]), len(index))
    return index


def _processes(f: Imported) -> int:
    return len(_process_index(f)) or f.size  # OSU: one rank per process


def _layout(f: Imported) -> JsonObject:
    index = _process_index(f)
    return {"step": f"import {Path(f.path).name}", "backend": f.backend, "size": f.size,
            "gpus_per_process": max(1, f.size // _processes(f)),
            "ranks": [{"rank": r["rank"], "device": f"cuda:{r['device']}", "process": index[(r["host"], r["pid"])],
                       "host": r["host"]} for r in f.ranks]}


def document(files: list[Imported], label: str | None, argv: Sequence[str]) -> ResultDoc:
    hosts: dict[str, list[str]] = {}
    for f in files:
        for r in f.ranks:
            hosts.setdefault(r["host"], []).append(r["gpu"])
    tools = sorted({f.tool for f in files}, key=lambda t: t.value)
    nccl = next((f.nccl for f in files if f.nccl), None)
    host_objects = [_host(h, gpus, nccl, tools[0]) for h, gpus in hosts.items()] or [_host("unknown", [], nccl, tools[0])]
    layouts = [_layout(f) for f in files]
    processes = max(_processes(f) for f in files)
    when = _modified([f.path for f in files])
    env: dict[str, str] = {}
    for f in files:
        env.update(f.environment)
    config: JsonObject = {"label": label or f"{' + '.join(t.value for t in tools)} ({', '.join(f.benchmark for f in files)})",
                          "source": [{"tool": f.tool.value, "version": f.version, "benchmark": f.benchmark, "file": f.path,
                                      "records": len(f.records)} for f in files]}
    world = {"processes": processes, "hosts": len(host_objects), "bootstrap": "mpi" if processes > 1 else "single"}
    return result_document("import", argv, config, Envelope(host_objects, world, layouts, env, when, when),
                           [r for f in files for r in f.records])


def import_results(paths: Sequence[str], forced: str | None, op: str | None, ranks: int | None, label: str | None,
                   argv: Sequence[str] = ()) -> ResultDoc:
    """The result document of the files' records, validated against the schema."""
    tool = Tool(forced) if forced else None
    files = [import_file(p, tool, op, ranks) for p in paths]
    for f in files:
        for rec in f.records:
            if why := violation(rec):  # a figure computed from the row that no result may hold (an infinite bandwidth)
                src = rec["source"]
                Where(src["file"], src.get("line")).fail(f"the record made of it would hold what no result may: {why}")
    return checked(document(files, label, argv), "the imported document")
