"""nccl-tests' output as trainscope collective records: its text table (stdout) and its JSON file (-J,
nccl-tests 2.18 and later). The layouts are those of NVIDIA/nccl-tests src/util.cu (writeDeviceReport,
writeResultHeader, writeBenchmarkLine*, the JSON writer) and src/common.cu; the samples in
tests/reports/data/import are written in them.

nccl-tests' size column is what trainscope calls bytes (the whole buffer of gather-type ops) and its count
the per-rank count; its bus factors are trainscope's; its time is the mean iteration time, averaged over the
ranks (its -a default), measured with the host's clock.
"""
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..common.collective_facts import bus_factor, names as collective_names
from .import_records import Row, Tool, Where, collective_record, integer, number, source
from ..common.json_types import JsonObject, Record
from ..common.strict_json import loads

# nccl-tests' type names (current and those of older releases) -> trainscope's dtypes; the others
# (uint32, int64, uint64, fp8) have no trainscope counterpart.
DTYPES = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16", "int32": "int32",
          "int8": "int8", "uint8": "uint8", "int": "int32", "char": "int8"}
REDOPS = {"sum", "prod", "max", "min", "avg"}
NO_REDOP = "none"  # what nccl-tests prints in the redop column of an op that does not reduce
TEXT_MARKERS = ("# nccl-tests version", "# Collective test starting:")
RUN_HEADER = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\b.*?\bwarmup iters:\s*(\d+)\s+iters:\s*(\d+)"
                        r"(?:.*?\bgraph:\s*(\d+))?")
VERSION = re.compile(r"^#\s*nccl-tests version\s+(\S+)")
STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$")
# The results table's column header (time, or cputime with -C); per-iteration (-P) and timestamp columns are not read.
TABLE = re.compile(r"^#\s+size\s+count\s+type\s+redop\s+root\s+(?:cpu)?time\s+algbw\s+busbw\s+#wrong"
                   r"\s+(?:cpu)?time\s+algbw\s+busbw\s+#wrong\s*$")
FOOTER = re.compile(r"^#\s*(Out of bounds values|Avg bus bandwidth)\s*:")
NOISE = re.compile(r"\bNCCL (INFO|WARN)\b")  # NCCL_DEBUG lines between the rows
PLACEMENT_COLUMNS = 4  # time, algbw, busbw, #wrong


def looks_like_text(text: str) -> bool:
    return any(m in text for m in TEXT_MARKERS) or any(RUN_HEADER.match(line) for line in text.splitlines()[:200])


def looks_like_json(doc: Any) -> bool:
    return isinstance(doc, dict) and "results" in doc and "config" in doc


def op_of(benchmark: str | None, forced: str | None, where: Where) -> str:
    """The trainscope op of a nccl-tests program (all_reduce_perf, all_reduce_perf_mpi), or --op's."""
    named = None
    if benchmark:
        named = re.sub(r"_perf(_mpi)?$", "", os.path.basename(benchmark))
        if named not in collective_names():
            where.fail(f"nccl-tests program {benchmark!r} measures no collective trainscope has "
                       f"(trainscope's: {', '.join(collective_names())})")
    if forced and named and forced != named:
        where.fail(f"--op {forced}, but the output is of {benchmark}")
    op = forced or named
    if not op:
        where.fail("the output does not name its test (nccl-tests before 2.16 print no '# Collective test starting:' line): "
                   "give --op")
    return op


@dataclass
class Ranks:
    """Where the ranks ran, from the '#  Rank N ... on HOST device D [bus] GPU' lines (or the JSON's devices)."""
    entries: list[JsonObject] = field(default_factory=list)  # rank, host, pid, device, bus, gpu

    @property
    def processes(self) -> int:
        return len({(e["host"], e["pid"]) for e in self.entries})


def _row(op: str, cells: list[str], where: Where, ranks: Ranks, iters: int, graph: int) -> list[Row]:
    """The records of one table row: out of place, then in place (a row of nine cells has only in place)."""
    if len(cells) not in (5 + PLACEMENT_COLUMNS, 5 + 2 * PLACEMENT_COLUMNS):
        where.fail(f"a row of {len(cells)} cells, expected {5 + 2 * PLACEMENT_COLUMNS} "
                   "(size count type redop root, then time algbw busbw #wrong out of place and in place)")
    size, count = integer(cells[0], where, "size", 1), integer(cells[1], where, "count", 1)
    dtype, redop, root = _dtype(cells[2], where), _redop(cells[3], where), _root(cells[4], where)
    placements = [cells[i:i + PLACEMENT_COLUMNS] for i in range(5, len(cells), PLACEMENT_COLUMNS)]
    in_place_flags = [False, True] if len(placements) == 2 else [True]
    rows = []
    for (t, alg, bus, wrong), in_place in zip(placements, in_place_flags):
        wrong_n = None if wrong == "N/A" else int(number(wrong, where, "#wrong"))
        rows.append(_checked(Row(op, "nccl", dtype, redop, root, len(ranks.entries), ranks.processes, size, count, in_place,
                                 iters, number(t, where, "time"), number(alg, where, "algbw"), number(bus, where, "busbw"),
                                 bus_factor(op, len(ranks.entries)), wrong_n, graph), where))
    return rows


def _checked(row: Row, where: Where) -> Row:
    """busbw is algbw times the op's factor on this many ranks, up to the table's rounding to 0.01: a file whose
    figures disagree is not of the op or rank count it names."""
    if row.time_us <= 0:
        where.fail(f"time {row.time_us:g} us: an iteration takes some time")
    expected = row.algbw_gbps * row.bus_factor
    if abs(row.busbw_gbps - expected) > 0.01 * (1 + row.bus_factor) + 0.01 * expected:
        where.fail(f"busbw {row.busbw_gbps:g} is not algbw {row.algbw_gbps:g} x {row.bus_factor:g} ({row.op}'s bus factor "
                   f"on {row.ranks} ranks): the output's op or rank count is not what it says")
    return row


def _dtype(name: str, where: Where) -> str:
    if name not in DTYPES:
        where.fail(f"type {name!r} has no trainscope dtype (known: {', '.join(DTYPES)})")
    return DTYPES[name]


def _redop(name: str, where: Where) -> str | None:
    if name == NO_REDOP:
        return None
    if name not in REDOPS:
        where.fail(f"redop {name!r} is not one of {', '.join(sorted(REDOPS))} or {NO_REDOP}")
    return name


def _root(text: str, where: Where) -> int | None:
    text = text.strip()
    if text == "-1":
        return None  # nccl-tests' root of an op without one
    return integer(text, where, "root")


@dataclass
class Parsed:
    records: list[Record]
    ranks: Ranks
    version: str | None
    benchmark: str
    environment: dict[str, str]


def parse_text(text: str, path: str, forced_op: str | None) -> Parsed:
    ranks, version, benchmark = Ranks(), None, None
    header: re.Match[str] | None = None
    table_at = 0
    rows: list[tuple[int, list[str]]] = []
    ended = False
    for n, line in enumerate(text.splitlines(), 1):
        where = Where(path, n)
        s = line.strip()
        if not s or NOISE.search(s):
            continue
        if m := RUN_HEADER.match(s):
            if header:
                where.fail("a second nccl-tests run in one file: import each run's output on its own")
            header = m
        elif m := VERSION.match(s):
            version = m.group(1)
        elif m := STARTING.match(s):
            benchmark = m.group(1)
        elif m := RANK.match(s):
            ranks.entries.append({"rank": int(m.group(1)), "pid": int(m.group(2)), "host": m.group(3),
                                  "device": int(m.group(4)), "bus": m.group(5), "gpu": m.group(6).strip()})
        elif TABLE.match(s):
            if not header:
                where.fail("a results table before the '# nThread ... nGpus ... iters: ...' header line")
            table_at = n
        elif FOOTER.match(s):
            ended = bool(table_at)
        elif s.startswith("#"):
            if s.lstrip("# ").startswith("size") and "count" in s and not table_at:
                where.fail("a results table with columns trainscope does not read (per-iteration -P or timestamp "
                           "columns): run without them, or import the JSON output (-J)")
        elif table_at and not ended:
            rows.append((n, s.split()))
    where = Where(path, None)
    if not header:
        where.fail("no '# nThread ... nGpus ... iters: ...' header line: not nccl-tests output")
    if not table_at:
        where.fail("no results table (the '#  size  count  type  redop  root  time  algbw ...' header line)")
    if not rows:
        Where(path, table_at).fail("the results table has no rows")
    if not ranks.entries:
        where.fail("no '#  Rank N ... on HOST device D' lines: cannot tell how many ranks ran")
    iters, graph = int(header.group(4)), int(header.group(5) or 0)
    op = op_of(benchmark, forced_op, where)
    records = []
    for n, cells in rows:
        w = Where(path, n)
        records += [collective_record(r, source(Tool.NCCL_TESTS, version, benchmark or f"{op}_perf", w))
                    for r in _row(op, cells, w, ranks, iters, graph)]
    return Parsed(records, ranks, version, benchmark or f"{op}_perf", {})


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: Where, at: str) -> Any:
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, kind) or isinstance(v, bool):
        where.fail(f"{at}.{key} is missing or not {'a number' if kind in ((int, float), float) else 'of the right type'}")
    return v


def parse_json(text: str, path: str, forced_op: str | None) -> Parsed:
    where = Where(path)
    try:
        doc = loads(text, path)
    except json.JSONDecodeError as e:
        where.fail(f"not JSON: {e}")
    if not looks_like_json(doc):
        where.fail("not nccl-tests JSON output (no 'config' and 'results')")
    config = doc["config"]
    args = doc.get("args")
    benchmark = args[0] if isinstance(args, list) and args and isinstance(args[0], str) else None
    op = op_of(benchmark, forced_op, where)
    ranks = Ranks()
    devices = _field(config, "devices", list, where, "config")
    for i, d in enumerate(devices):
        at = f"config.devices[{i}]"
        ranks.entries.append({"rank": _field(d, "rank", int, where, at), "pid": _field(d, "pid", int, where, at),
                              "host": _field(d, "hostname", str, where, at), "device": _field(d, "device", int, where, at),
                              "bus": _field(d, "device_hex", str, where, at), "gpu": _field(d, "device_info", str, where, at)})
    if not ranks.entries:
        where.fail("config.devices is empty: cannot tell how many ranks ran")
    iters = _field(config, "iterations", int, where, "config")
    graph = _field(config, "graph", int, where, "config")
    results = _field(doc, "results", list, where, "the document")
    if not results:
        where.fail("results is empty")
    records = []
    for i, r in enumerate(results):
        at = f"results[{i}]"
        cells = [str(_field(r, "size", int, where, at)), str(_field(r, "count", int, where, at))]
        cells += [_field(r, key, str, where, at) for key in ("type", "redop", "root")]
        for placement in ("out_of_place", "in_place"):
            body = r.get(placement)
            if body is None and placement == "out_of_place":
                continue  # nccl-tests writes null where it ran in place only
            p = f"{at}.{placement}"
            t = body.get("time", body.get("cpu_time")) if isinstance(body, dict) else None
            if not isinstance(t, (int, float)) or isinstance(t, bool):
                where.fail(f"{p}.time is missing" if t is None else f"{p}.time is {t!r}, not a number")
            wrong = body.get("nwrong")
            cells += [str(t)] + [str(_field(body, key, (int, float), where, p)) for key in ("alg_bw", "bus_bw")]
            cells.append("N/A" if wrong is None else str(wrong))
        w = Where(f"{path} ({at})")
        records += [collective_record(row, source(Tool.NCCL_TESTS, None, os.path.basename(benchmark or f"{op}_perf"), where))
                    for row in _row(op, cells, w, ranks, iters, graph)]
    env = doc.get("env") if isinstance(doc.get("env"), list) else []
    environment = dict(e.split("=", 1) for e in env if isinstance(e, str) and e.startswith("NCCL_") and "=" in e)
    return Parsed(records, ranks, None, os.path.basename(benchmark or f"{op}_perf"), environment)
