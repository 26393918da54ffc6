"""The cost of each event of a step's schedule (the replay's Costs): compute from the calibration's one-process run
(compute.py), each collective from its fitted series at the group size it runs in (predict.model: the fit where that
group size was measured, the algorithm's form where not), a pipeline's send/recv from the sendrecv series. A what-if
fabric (--fabric) swaps every fitted bandwidth for the datasheet's and keeps the fitted latencies (predict.on_fabric).

The band: the same replay with every cost at the low and at the high end of its own band (the largest residual of
the fit's regime the size falls in; the calibration run's fastest and p95 step against its median), so the step's
band is the replay of the extremes, not a sum of independent errors."""
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

from ..common.collective_facts import collective
from ..common.collective_issue import NONBLOCKING
from ..common.link_datasheet import Fabric
from .compute import ComputeRates
from .formulas import Point
from .predict import Model, faster_links, model, on_fabric
from .replay import Progress
from .schedule import Compute, Optimizer, Phase
from .series import SeriesKey, select

# The series a point-to-point transfer is costed from: collectives' sendrecv (a ring shift, each rank sending one
# buffer and receiving one) is what a pipeline stage's send or receive of one activation is.
POINT_TO_POINT = {"send": "sendrecv", "recv": "sendrecv"}


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
    _models: dict[tuple[str, int], Model] = field(default_factory=dict)

    def at(self, end: End) -> "StepCosts":
        """The same costs at one end of their bands (the fitted models shared)."""
        return replace(self, end=end)

    def scaled(self, compute_speedup: float = 1.0, bandwidth_scale: float = 1.0) -> "StepCosts":
        models = self._models if bandwidth_scale == 1 else {}  # the fitted models change with the bandwidth
        return replace(self, compute_speedup=self.compute_speedup * compute_speedup,
                       bandwidth_scale=self.bandwidth_scale * bandwidth_scale, _models=models)

    def model_of(self, op: str, group_size: int) -> Model:
        name = POINT_TO_POINT.get(op, op)
        if (name, group_size) not in self._models:
            key, points = select(self.series, name, self.transport, "float32", "out", self.calibration,
                                 prefer_issue=self.issue)
            m = model(collective(name), key, points, group_size)
            m = on_fabric(m, self.fabric) if self.fabric else m
            self._models[(name, group_size)] = faster_links(m, self.bandwidth_scale) if self.bandwidth_scale != 1 else m
        return self._models[(name, group_size)]

    def on(self, fabric: Fabric) -> "StepCosts":
        """The same costs with every collective's bandwidth the datasheet fabric's (models refitted for it)."""
        return replace(self, fabric=fabric, _models={})

    def backends(self) -> set[str]:
        """The backends the calibration's collectives ran on (the series' `backend`)."""
        return {dict(k.fixed).get("backend", "-") for k in self.series}

    def used(self) -> dict[tuple[str, int], Model]:
        """The fitted models the replays asked for so far, by (series op, group size)."""
        return dict(self._models)

    def compute_us(self, event: Compute | Optimizer, rank: int) -> float:
        r = self.rates
        if isinstance(event, Optimizer):
            t = event.elements * r.optimizer_us_per_element
        else:  # a recomputation is the forward again
            t = event.flops * (r.backward_us_per_flop if event.phase is Phase.BACKWARD else r.forward_us_per_flop)
        return t * (1 + self.end.value * (r.band_high if self.end is End.HIGH else r.band_low)) / self.compute_speedup

    def op_us(self, op: str, group_size: int, nbytes: int) -> float:
        m = self.model_of(op, group_size)
        t = m.algorithm.time_us(m.ranks, nbytes)
        return max(0.0, t * (1 + self.end.value * m.band(nbytes)))
