"""The cost of each event of a step's schedule (the replay's Costs): compute from the calibration's one-process run
(compute.py), each collective from its fitted series at the group size it runs in (predict.model: the fit where that
group size was measured, the algorithm's form where not), a pipeline's send/recv from the send series
(POINT_TO_POINT); the series of the link class the op's members cross (placement.py: intra-host where they share a
host, else inter-host). A what-if fabric (--fabric) swaps every fitted bandwidth for the datasheet's and keeps the
fitted latencies (predict.on_fabric).

The band: the same replay with every cost at the low and at the high end of its own band (the largest residual of
the fit's regime the size falls in; the calibration run's fastest and p95 step against its median), so the step's
band is the replay of the extremes, not a sum of independent errors."""
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from ..common.collective_facts import collective
from ..common.collective_issue import NONBLOCKING
from ..common.link_datasheet import Fabric
from .compute import ComputeRates
from .formulas import Point
from .placement import LinkClass, Placement
from .predict import Model, faster_links, model, on_fabric
from .replay import Progress
from .schedule import Compute, Optimizer, Phase
from .series import COLD, UNIFORM_COUNTS, SeriesKey, measured_placements, select

# The series a point-to-point transfer is costed from, the first the calibration holds: collectives' send (one
# direction per pair) is what a pipeline stage's send or receive of one activation, or a parameter server's shard,
# is; sendrecv (a ring shift: at 2 ranks an exchange, loading a link both ways at once, which a shaped link served at
# up to half its rate: docs/prediction.md) for a calibration swept before send existed.
POINT_TO_POINT = {"send": ("send", "sendrecv"), "recv": ("send", "sendrecv")}
# The per-pair counts of a plan's ops that take them: a mixture's exchanges, planned as balanced routing makes them
# (layers/moe.h), are alltoall's uniform exchange, so their series is the sweep's uniform one (another is refused).
PLANNED_COUNTS = {"alltoallv": UNIFORM_COUNTS}


def series_op(op: str, series: Mapping[SeriesKey, Any]) -> str:
    """The sweep's op whose series costs the plan's `op`: itself, or for a point-to-point transfer the first of its
    choices the series hold (the last where none: the error then names it, as before send existed)."""
    choices = POINT_TO_POINT.get(op)
    if choices is None:
        return op
    held = {k.op for k in series}
    return next((c for c in choices if c in held), choices[-1])


@dataclass(frozen=True)
class MeasuredFabric:
    """Another cluster's (or another link's) measured collectives, for a what-if of the step with a link class's costs
    taken from them instead of this calibration's (--measured-fabric): fitted as the calibration's are."""
    name: str  # how the what-if table names it: the file
    series: dict[SeriesKey, list[Point]]
    files: tuple[str, ...]
    transport: str | None  # the series of the files to take, where they measured several


class End(Enum):
    """Which end of every cost's band a replay takes."""
    LOW = -1
    NOMINAL = 0
    HIGH = 1


@dataclass
class StepCosts:
    rates: ComputeRates
    series: dict[SeriesKey, list[Point]]
    calibration: Sequence[str]
    transport: str | None = None
    # The MPI calls' form whose series cost each collective where the calibration measured both (collectives --issue
    # both): by default the nonblocking one, the form the trainer issues (Communicator::start); an op measured in one
    # form only (sendrecv has no nonblocking call in the sweep) is costed from that one (series.select).
    issue: str = NONBLOCKING
    fabric: Fabric | None = None
    end: End = End.NOMINAL
    # What-ifs: compute this many times faster (another device's measured or datasheet ratio), every collective's
    # bandwidth this many times higher (each regime's beta divided by it, its latency kept).
    compute_speedup: float = 1.0
    bandwidth_scale: float = 1.0
    progress: Progress = Progress.INDEPENDENT  # how the collectives move beside compute (replay.Progress)
    placement: Placement | None = None  # where the ranks sit: each op's link class and its series (None: `transport`)
    # The caches whose series cost each collective where the calibration measured both (collectives --cache both): by
    # default cold, as a step's collectives find their buffers (the step's other data evicted them); an op measured
    # from one only is costed from that one.
    cache: str = COLD
    # A what-if's swapped link (a datasheet `fabric` or a `measured` fabric): the ops of this link class take its
    # costs, the others keep the calibration's (None: every op).
    measured: MeasuredFabric | None = None
    swap: LinkClass | None = None
    # By (series op, group size, link class, placement: "in" or "out" of place, as the series is).
    _models: dict[tuple[str, int, LinkClass, str], Model] = field(default_factory=dict)
    _shared: dict[tuple[str, int, LinkClass, str, int], Model] = field(default_factory=dict)  # _models' with a shared NIC
    # A plan's op -> the series op that costs it (series_op), by whether the swapped-in measured fabric's series hold
    # it: asked once per op, not per replayed event.
    _series_ops: dict[tuple[str, bool], str] = field(default_factory=dict)
    # The ops the trainer calls in place that were costed from out-of-place series (the calibration measured none in
    # place for them): named on the console, so that a calibration can sweep both (collectives --placement both).
    out_for_in: set[str] = field(default_factory=set)

    def at(self, end: End) -> "StepCosts":
        """The same costs at one end of their bands (the fitted models shared)."""
        return replace(self, end=end)

    def scaled(self, compute_speedup: float = 1.0, bandwidth_scale: float = 1.0) -> "StepCosts":
        same = bandwidth_scale == 1  # the fitted models change with the bandwidth
        return replace(self, compute_speedup=self.compute_speedup * compute_speedup,
                       bandwidth_scale=self.bandwidth_scale * bandwidth_scale, _models=self._models if same else {},
                       _shared=self._shared if same else {})

    def _source(self, link: LinkClass) -> tuple[dict[SeriesKey, list[Point]], Sequence[str], MeasuredFabric | None]:
        """The series (and their files) an op across `link` is costed from: the swapped-in measured fabric's where it
        takes that link (returned too), else the calibration's."""
        if self.measured and (self.swap is None or link is self.swap):
            return self.measured.series, self.measured.files, self.measured
        return self.series, self.calibration, None

    def model_of(self, op: str, group_size: int, link: LinkClass = LinkClass.INTRA, in_place: bool = False) -> Model:
        """The fitted costs of `op` on `group_size` ranks across `link`, from the series of the placement the trainer
        calls it in; an op called in place is costed from the out-of-place series where the calibration has no in-place
        one (and named in out_for_in)."""
        swapped = self.swap is None or link is self.swap
        series, files, fabric = self._source(link)
        if (op, fabric is not None) not in self._series_ops:
            self._series_ops[(op, fabric is not None)] = series_op(op, series)
        name = self._series_ops[(op, fabric is not None)]
        place = "in" if in_place else "out"
        if (name, group_size, link, place) not in self._models:
            if fabric:
                transport = fabric.transport
            else:
                transport = self.placement.transport(link) if self.placement else self.transport

            measured = place
            if in_place and "in" not in measured_placements(series, name, transport, "float32"):
                measured = "out"  # its error, where there is no usable record of the op at all
                self.out_for_in.add(name)
            key, points = select(series, name, transport, "float32", measured, files, prefer_issue=self.issue,
                                 counts=PLANNED_COUNTS.get(name), prefer_cache=self.cache)
            m = model(collective(name), key, points, group_size)
            m = on_fabric(m, self.fabric) if self.fabric and swapped else m
            self._models[(name, group_size, link, place)] = \
                faster_links(m, self.bandwidth_scale) if self.bandwidth_scale != 1 else m
        return self._models[(name, group_size, link, place)]

    def on(self, fabric: Fabric | MeasuredFabric, swap: LinkClass | None = None) -> "StepCosts":
        """The same costs with the bandwidth of every collective of link class `swap` (None: every one) the datasheet
        fabric's, or their costs those fitted from another cluster's measurements (models refitted for it)."""
        if isinstance(fabric, MeasuredFabric):
            return replace(self, measured=fabric, fabric=None, swap=swap, _models={}, _shared={}, _series_ops={})
        return replace(self, fabric=fabric, measured=None, swap=swap, _models={}, _shared={}, _series_ops={})

    def backends(self) -> set[str]:
        """The backends the calibration's collectives ran on (the series' `backend`)."""
        return {dict(k.fixed).get("backend", "-") for k in self.series}

    def used(self) -> dict[tuple[str, int, LinkClass, str], Model]:
        """The fitted models the replays asked for so far, by (series op, group size, link class, placement asked)."""
        return dict(self._models)

    def compute_us(self, event: Compute | Optimizer, rank: int) -> float:
        r = self.rates
        if isinstance(event, Optimizer):
            t = event.elements * r.optimizer_us_per_element
        else:  # a recomputation is the forward again
            t = event.flops * (r.backward_us_per_flop if event.phase is Phase.BACKWARD else r.forward_us_per_flop)
        return t * (1 + self.end.value * (r.band_high if self.end is End.HIGH else r.band_low)) / self.compute_speedup

    def host_us(self, rank: int) -> float:
        """The calibration run's step time outside its phases (compute.py), at the band's end as compute is; neither
        compute's what-if nor the links' scale it (the data loader's and the host's work)."""
        r = self.rates
        return r.host_us * (1 + self.end.value * (r.band_high if self.end is End.HIGH else r.band_low))

    def op_us(self, op: str, group_size: int, nbytes: int, members: tuple[int, ...] = (), in_place: bool = False) -> float:
        link = self.placement.link_of(members) if self.placement else LinkClass.INTRA
        m = self.model_of(op, group_size, link, in_place)
        flows = self.placement.flows_per_nic(members) if self.placement else 1
        if flows > 1:  # the host's NIC shared by its ranks' concurrent flows: each gets 1/flows of its bandwidth
            key = (op, group_size, link, "in" if in_place else "out", flows)
            if key not in self._shared:  # once per op and sharing, not per replayed event
                self._shared[key] = faster_links(m, 1 / flows)
            m = self._shared[key]
        t = m.algorithm.time_us(m.ranks, nbytes)
        return max(0.0, t * (1 + self.end.value * m.band(nbytes)))
