"""What the importers of other tools' output (importers.py) share: the error that names file and line, the
parsing of one number, and the collective record an imported row becomes.

An imported row is one average per size, not samples: its record holds that value as its one sample, with
the statistics of one value (n = 1), and a `source` naming the tool, its program, the file and the line;
compare reads that marker and calls the record inconclusive (summary only), never a pass.
"""
import math
import re
from dataclasses import dataclass
from enum import Enum
from typing import NoReturn

from ..common.errors import InputError
from ..common.json_types import JsonObject, Record
from ..common.strict_json import INT_MAX


class Tool(str, Enum):
    NCCL_TESTS = "nccl-tests"
    OSU = "osu"


@dataclass
class Where:
    """A place in an input file, for the one-line errors."""
    path: str
    line: int | None = None  # 1-based; None: the file as a whole (JSON)

    def fail(self, message: str) -> NoReturn:
        at = f"line {self.line}: " if self.line is not None else ""
        raise InputError(f"{self.path}: {at}{message}")

    def at(self, line: int) -> "Where":
        return Where(self.path, line)


def number(text: str, where: Where, what: str, minimum: float = 0.0) -> float:
    """A finite number of at least `minimum` (a time, a bandwidth), or a one-line error naming it."""
    try:
        v = float(text)
    except ValueError:
        where.fail(f"{what} {text!r} is not a number")
    if not math.isfinite(v) or v < minimum:
        where.fail(f"{what} {text!r} must be a finite number of at least {minimum:g}")
    return v


def integer(text: str, where: Where, what: str, minimum: int = 0, maximum: int = INT_MAX) -> int:
    """A whole number in ASCII digits from `minimum` to `maximum` (at most 2^63-1, what a result may hold: strict_json.py),
    or a one-line error naming it."""
    if not re.fullmatch(r"[0-9]{1,19}", text) or not minimum <= int(text) <= maximum:
        where.fail(f"{what} {text[:40]!r} must be a whole number from {minimum} to {maximum}")
    return int(text)


def stats_of_one(v: float) -> JsonObject:
    """The statistics of a single value: all of them that value, no spread, n = 1."""
    return {"min": v, "median": v, "mean": v, "p95": v, "max": v, "stdev": 0.0, "cv": 0.0, "n": 1}


def source(tool: Tool, version: str | None, benchmark: str, where: Where) -> JsonObject:
    s: JsonObject = {"tool": tool.value, "version": version, "benchmark": benchmark, "file": where.path}
    if where.line is not None:
        s["line"] = where.line
    return s


@dataclass
class Row:
    """One size of one collective as another tool reports it: the figures trainscope's record also has."""
    op: str
    backend: str
    dtype: str
    redop: str | None
    root: int | None
    ranks: int
    processes: int
    bytes: int
    count: int
    in_place: bool
    iters: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    bus_factor: float
    wrong: int | None  # None: the tool did not check the result
    graph: int = 0


def collective_record(row: Row, src: JsonObject) -> Record:
    """The collective record of schema/result-v1.schema.json for one imported row; `timer` is the host's
    clock (nccl-tests and OSU time with the host's wall clock), and there is no spread over ranks to give."""
    return {"kind": "collective", "op": row.op, "backend": row.backend, "dtype": row.dtype, "redop": row.redop,
            "root": row.root, "ranks": row.ranks, "processes": row.processes, "bytes": row.bytes, "count": row.count,
            "in_place": row.in_place, "graph": row.graph, "iters": row.iters, "trials": 1, "timer": "steady_clock",
            "time_us": stats_of_one(row.time_us), "samples_us": [row.time_us], "host_time_us": stats_of_one(row.time_us),
            "algbw_gbps": row.algbw_gbps, "bus_factor": row.bus_factor, "busbw_gbps": row.busbw_gbps, "rank_spread": None,
            "check": {"performed": row.wrong is not None, "passed": None if row.wrong is None else row.wrong == 0,
                      "wrong": row.wrong or 0},
            "source": src}
