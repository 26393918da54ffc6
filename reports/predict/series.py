"""The measured series a prediction is fitted from: the calibration results' collective records, grouped by everything
that changes a collective's cost other than its size and group size (op, transport, dtype, placement, the MPI call's
form, and the backend, reduction, algorithm, protocol and graph they ran with), each point a record's median time.

The form (collectives --issue): Open MPI runs a blocking call and its nonblocking form waited for at once through
different components, at different costs; training issues the nonblocking form (predict train prefers its series,
step_costs.py), a sweep by default the blocking one.

alltoallv's per-pair counts (collectives --alltoallv-counts) are a series' own too: a skewed exchange's busiest rank
moves its bytes at another cost than a uniform one's. Where a calibration holds several, the uniform one is taken
(a plan's exchanges are balanced routing's: layers/moe.h), as the form the trainer issues is.

The caches a call started from (collectives --cache): a hot loop reuses buffers the last-level cache holds, a cold one
reads them from memory, as a training step's collectives do (the step's other data has evicted them); predict train
prefers the cold series, predict collectives (which predicts a sweep) the hot ones."""
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..common.collective_issue import NONBLOCKING, issue_of
from ..common.errors import InputError
from ..common.json_types import Record
from ..common.load import Result
from .formulas import Point

# The axes a series is one value of, besides op and those the command line chooses (transport, dtype, placement):
# two values of one of them in a calibration set are two different costs, and the prediction will not pick one.
FIXED_AXES = ("backend", "redop", "algo", "proto", "graph")
NO_COUNTS = "-"  # a series' counts where the op takes no per-pair counts
HOT, COLD = "hot", "cold"  # a record's `cache` (absent: hot, as every sweep before the field)
# alltoallv's counts a prediction takes where a calibration holds several: alltoall's exchange, which a plan's are.
UNIFORM_COUNTS = "uniform"


@dataclass(frozen=True, order=True)
class SeriesKey:
    op: str
    transport: str  # "-" where the run had no --transports
    dtype: str
    placement: str  # "out" or "in" (of place)
    issue: str  # "blocking" or "nonblocking" (the MPI call's form: collective_issue), "-" where the backend has one form
    fixed: tuple[tuple[str, str], ...]  # FIXED_AXES' values, as text ("-" where the record has none)
    counts: str = NO_COUNTS  # alltoallv's per-pair counts: their pattern, or the file they were read from
    cache: str = HOT  # the caches each call started from: hot or cold (collectives --cache)

    def describe(self) -> str:
        over = f" over {self.transport}" if self.transport != "-" else ""
        form = ", nonblocking calls" if self.issue == NONBLOCKING else ""  # blocking: what a sweep measures unless told
        counts = f", {self.counts} counts" if self.counts != NO_COUNTS else ""
        cold = ", cold caches" if self.cache == COLD else ""  # hot: what a sweep measures unless told
        placed = "in place" if self.placement == "in" else "out-of-place"
        return f"{self.op} {self.dtype} {placed}{form}{cold}{counts}{over}"

    def as_json(self) -> dict[str, str]:
        counts = {"counts": self.counts} if self.counts != NO_COUNTS else {}
        return {"op": self.op, "transport": self.transport, "dtype": self.dtype, "placement": self.placement,
                "issue": self.issue, "cache": self.cache, **dict(self.fixed), **counts}


def _key(r: Record) -> SeriesKey:
    counts = r.get("alltoallv_counts")
    return SeriesKey(r["op"], r.get("transport") or "-", r["dtype"], "in" if r["in_place"] else "out", issue_of(r) or "-",
                     tuple((a, "-" if r.get(a) is None else str(r[a])) for a in FIXED_AXES),
                     (counts.get("file") or counts["pattern"]) if counts else NO_COUNTS, r.get("cache") or HOT)


def _usable(r: Record) -> bool:
    """A record measured on 2 or more ranks whose results checked clean (a wrong result's time is not the op's)."""
    return r["ranks"] >= 2 and r["check"]["passed"] is not False and r["time_us"]["median"] > 0


def all_series(results: Iterable[Result]) -> dict[SeriesKey, list[Point]]:
    out: dict[SeriesKey, list[Point]] = defaultdict(list)
    for res in results:
        for r in res.records_of("collective"):
            if _usable(r):
                out[_key(r)].append(Point(r["ranks"], r["bytes"], r["time_us"]["median"]))
    return dict(out)


def _choose(keys: list[SeriesKey], axis: str, wanted: str | None, option: str, what: str,
            prefer: str | None = None, plural: str | None = None, measure: str | None = None) -> list[SeriesKey]:
    """The keys whose `axis` is `wanted`; with none wanted, the keys if they agree on it, else those of `prefer` where
    some are, else an error asking for it (`option`: what gives it; `plural`: the axis's, where not axis + s;
    `measure`: how to measure a wanted value the calibration lacks)."""
    values = sorted({getattr(k, axis) for k in keys})
    if wanted is None:
        if len(values) > 1 and prefer in values:
            return [k for k in keys if getattr(k, axis) == prefer]
        if len(values) > 1:
            raise InputError(f"the calibration holds {what} of several {plural or axis + 's'} ({', '.join(values)}): "
                             f"give {option}")
        return keys
    if wanted not in values:
        raise InputError(f"the calibration holds no {what} with {axis} {wanted} (it has: {', '.join(values)})"
                         + (f": {measure}" if measure else ""))
    return [k for k in keys if getattr(k, axis) == wanted]


def measured_placements(series: dict[SeriesKey, list[Point]], op: str, transport: str | None, dtype: str | None) -> set[str]:
    """The placements (out, in) the calibration measured `op` in, on `transport` and `dtype` where given."""
    return {k.placement for k in series if k.op == op and transport in (None, k.transport) and dtype in (None, k.dtype)}


def select(series: dict[SeriesKey, list[Point]], op: str, transport: str | None, dtype: str | None,
           placement: str, calibration: Sequence[str], issue: str | None = None,
           prefer_issue: str | None = None, counts: str | None = None,
           prefer_cache: str = HOT) -> tuple[SeriesKey, list[Point]]:
    """The one series the command line names; InputError when the calibration lacks it or holds several. The form:
    `issue` where given; else the one measured, or `prefer_issue` where both were (predict train: the form training
    issues, where the calibration has it for this op, the other where not). The caches: the one measured, or
    `prefer_cache` where both were (predict train: cold). alltoallv's counts: `counts` where given
    (predict train: uniform, a plan's), else the one measured, or the uniform ones where several were."""
    keys = [k for k in series if k.op == op]
    if not keys:
        ops = sorted({k.op for k in series})
        raise InputError(f"the calibration ({', '.join(calibration)}) holds no usable {op} record (it has: "
                         f"{', '.join(ops) or 'no collective records measured on 2 or more ranks'})")
    keys = _choose(keys, "transport", transport, "--transport", f"{op} records")
    keys = _choose(keys, "dtype", dtype, "--dtype", f"{op} records")
    keys = _choose(keys, "placement", placement, "--placement", f"{op} records")
    keys = _choose(keys, "issue", issue, "--issue", f"{op} records", prefer_issue)
    keys = _choose(keys, "cache", None, "calibration results of one --cache", f"{op} records", prefer_cache, "caches")
    keys = _choose(keys, "counts", counts, "calibration results of one --alltoallv-counts", f"{op} records", UNIFORM_COUNTS,
                   "per-pair counts", f"`collectives --ops {op} --alltoallv-counts {counts}` measures them")
    if len(keys) > 1:
        differ = [f"{a}s ({', '.join(sorted(values))})" for i, a in enumerate(FIXED_AXES)
                  if len(values := {k.fixed[i][1] for k in keys}) > 1]
        raise InputError(f"the calibration holds {op} records of several {' and '.join(differ)}: give calibration results "
                         "that measured one")
    return keys[0], series[keys[0]]
