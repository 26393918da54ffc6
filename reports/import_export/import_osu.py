"""OSU Micro-Benchmarks' output as trainscope collective records. The layout is that of OMB's
c/util/osu_util_mpi.c (print_preamble: '# OSU MPI Allreduce Latency Test v7.4'; '# Datatype: MPI_FLOAT.'
from 7.0 on; print_only_header and print_stats: '# Size' and 'Avg Latency(us)', with -f the min, max and
iterations columns, with -c a Validation column); the samples in tests/reports/data/import are written in it.

OSU's Avg Latency is the mean iteration time of each rank, averaged over the ranks, measured with
MPI_Wtime. Its size is what each call passes per process (c/mpi/collective/blocking/osu_<op>.c): the whole
buffer for allreduce, reduce and bcast, which is trainscope's (nccl-tests') bytes; one rank's block for
allgather, alltoall, gather and scatter, where trainscope's bytes are the whole receive (or send) buffer, so
size x ranks. Its output does not say how many ranks ran: --ranks gives it. Not read: reduce_scatter (OSU
splits its size over the ranks unevenly where it does not divide, which no trainscope record is), and the
point-to-point tests (osu_latency, osu_bw), which would be link records, needing the hosts and the link's
type that OSU's output does not give.
"""
from dataclasses import dataclass
import re

from ..common.collective_facts import collective
from .import_records import Row, Tool, Where, collective_record, integer, number, source
from ..common.json_types import Record

TITLE = re.compile(r"^#\s*OSU MPI(?:-[A-Z ]+)?\s+(.+?)\s+Test(?:\s+v(\S+))?\s*$")
DATATYPE = re.compile(r"^#\s*Datatype:\s*(\S+?)\.?\s*$")


@dataclass(frozen=True)
class Benchmark:
    program: str
    op: str  # what OSU's size means, its reduction and root follow from the op (its declaration, collective_facts)
    dtype: str  # the MPI datatype OMB before 7.0 pass (they print no '# Datatype:' line); Size is bytes either way


# OSU reduces with MPI_SUM, and the rooted ones use rank 0.
OSU_REDOP, OSU_ROOT = "sum", 0
# Title (after "OSU MPI[-CUDA ...]") -> the benchmark it names.
# OMB 5.x and 6.x (mpi/collective/osu_<op>.c): the reducing ones pass MPI_FLOAT (size / 4 of them), the others
# MPI_CHAR (size of them).
BENCHMARKS = {"Allreduce Latency": Benchmark("osu_allreduce", "all_reduce", "MPI_FLOAT"),
              "Reduce Latency": Benchmark("osu_reduce", "reduce", "MPI_FLOAT"),
              "Broadcast Latency": Benchmark("osu_bcast", "broadcast", "MPI_CHAR"),
              "Allgather Latency": Benchmark("osu_allgather", "all_gather", "MPI_CHAR"),
              "All-to-All Personalized Exchange Latency": Benchmark("osu_alltoall", "alltoall", "MPI_CHAR"),
              "Gather Latency": Benchmark("osu_gather", "gather", "MPI_CHAR"),
              "Scatter Latency": Benchmark("osu_scatter", "scatter", "MPI_CHAR")}
# MPI datatype name -> (trainscope dtype, bytes).
DTYPES = {"MPI_CHAR": ("int8", 1), "MPI_SIGNED_CHAR": ("int8", 1), "MPI_INT": ("int32", 4), "MPI_FLOAT": ("float32", 4)}
AVG, MIN, MAX, ITERATIONS, VALIDATION = "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations", "Validation"
COLUMN = re.compile(r"Avg Latency\(us\)|Min Latency\(us\)|Max Latency\(us\)|Iterations|Validation|P\d+ Tail Lat\(us\)")
VALIDATION_STATUS = {"Pass": 0, "Fail": 1}  # OSU prints whether any element was wrong, not how many
# OMB's iterations per size (util/osu_util.h COLL_LOOP_SMALL / COLL_LOOP_LARGE above LARGE_MESSAGE_SIZE), which
# the output states only with -f: without it, a run with -i ran other counts than these.
LOOP_SMALL, LOOP_LARGE, LARGE_MESSAGE_SIZE = 1000, 100, 8192


def looks_like(text: str) -> bool:
    return any(TITLE.match(line.strip()) for line in text.splitlines()[:200])


def _columns(header: str, where: Where) -> list[str]:
    rest = header.strip()[len("# Size"):]
    columns = COLUMN.findall(rest)
    if COLUMN.sub("", rest).strip() or not columns or columns[0] != AVG:
        where.fail(f"a '# Size' header with columns trainscope does not read: {rest.strip()!r} "
                   f"(it reads {AVG}, with -f {MIN}, {MAX}, {ITERATIONS}, with -c {VALIDATION})")
    return columns


def parse(text: str, path: str, ranks: int) -> tuple[list[Record], str | None, str]:
    """The records of an OSU collective's output, its OMB version and its program's name."""
    bench: Benchmark | None = None
    version = None
    dtype: str | None = None  # the '# Datatype:' line's (OMB 7.0 on), else the benchmark's own
    columns: list[str] = []
    records: list[Record] = []
    for n, line in enumerate(text.splitlines(), 1):
        where = Where(path, n)
        s = line.strip()
        if not s:
            continue
        if m := TITLE.match(s):
            if bench:
                where.fail("a second OSU run in one file: import each run's output on its own")
            title, version = m.group(1), m.group(2)
            if title not in BENCHMARKS:
                where.fail(f"OSU's {title} test is not imported (only {', '.join(b.program for b in BENCHMARKS.values())}; "
                           "point-to-point results need hosts and link types that OSU's output does not give)")
            bench = BENCHMARKS[title]
        elif m := DATATYPE.match(s):
            dtype = m.group(1)
            if dtype not in DTYPES:
                where.fail(f"datatype {dtype} has no trainscope dtype (known: {', '.join(DTYPES)})")
        elif s.startswith("# Size"):
            if not bench:
                where.fail("a '# Size' table before the '# OSU MPI ... Test' title line")
            columns = _columns(s, where)
        elif s.startswith("#"):
            continue  # OMB's other remarks (buffer placement, ...)
        elif columns:
            assert bench is not None
            records.append(_record(s.split(), columns, where, bench, version, dtype or bench.dtype, ranks))
        elif bench:
            where.fail("a row before the '# Size ...' header line")
    where = Where(path)
    if not bench:
        where.fail("no '# OSU MPI ... Test' title line: not OSU output")
    if not columns:
        where.fail("no '# Size  Avg Latency(us)' header line")
    if not records:
        where.fail("the table has no rows")
    assert bench is not None
    return records, version, bench.program


def _record(cells: list[str], columns: list[str], where: Where, bench: Benchmark, version: str | None, dtype: str,
            ranks: int) -> Record:
    if len(cells) != 1 + len(columns):
        where.fail(f"a row of {len(cells)} cells, expected {1 + len(columns)} (Size, {', '.join(columns)})")
    size = integer(cells[0], where, "size", 1)
    values = dict(zip(columns, cells[1:]))
    for c, v in values.items():
        if c not in (ITERATIONS, VALIDATION):
            number(v, where, c)
    t = number(values[AVG], where, AVG)
    if t <= 0:
        where.fail(f"{AVG} {t:g}: an iteration takes some time")
    name, width = DTYPES[dtype]
    if size % width:
        where.fail(f"size {size} is not a whole number of {dtype} elements ({width} bytes each)")
    iters = (integer(values[ITERATIONS], where, ITERATIONS, 1) if ITERATIONS in values
             else LOOP_SMALL if size <= LARGE_MESSAGE_SIZE else LOOP_LARGE)
    wrong = None
    if VALIDATION in values:
        if values[VALIDATION] not in VALIDATION_STATUS:
            where.fail(f"{VALIDATION} {values[VALIDATION]!r} is not Pass or Fail")
        wrong = VALIDATION_STATUS[values[VALIDATION]]
    op = collective(bench.op)
    nbytes = size * ranks if op.whole_buffer else size  # OSU's size is then one rank's block
    factor = op.bus_factor(ranks)
    algbw = nbytes / t / 1e3  # bytes per microsecond / 1e3 = GB/s (a tiny t overflows to infinity: refused after)
    # count as trainscope's records (and nccl-tests) give it: elements per call and rank, one rank's block where it has one
    redop, root = OSU_REDOP if op.reduces else None, OSU_ROOT if op.rooted else None
    row = Row(op.name, "mpi", name, redop, root, ranks, ranks, nbytes, size // width, False, iters, t, algbw, algbw * factor,
              factor, wrong)
    src = source(Tool.OSU, version, bench.program, where)
    if ITERATIONS not in values:
        src["assumed"] = ["iters"]  # OMB's default loop counts: a run with -i ran others, and the output would not say
    return collective_record(row, src)
