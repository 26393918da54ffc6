"""What a FLOP of the model costs on this cluster's device, from a one-process `train` run of it in the calibration.

A training step's compute is its layers' forward and backward at one micro-batch size; the trainer counts each
layer's forward FLOPs and a backward as twice its forward. The calibration's one-process run measured the forward and
backward phases of the whole model at its micro-batch, so a FLOP costs forward_us / forward FLOPs there (and likewise
backward; the backward also ran --recompute's forwards again, recompute_flops_per_step, which flops_per_step does not
count), and a layer's event in a plan costs its FLOPs at that rate: the model's mix of layers is the same, so per FLOP
is the same as long as the shapes are. The events carry the FLOPs the rank itself computes (a tensor-parallel slice's
share, workloads/layers/layer.h), the FLOPs a rate must be per: a record's `ranks` rows carry each rank's own
(`forward_flops`, `recompute_flops`); a record written before them, its flops_per_step (the model's) over its ranks,
each rank's own only where no layer is split (a plain data-parallel run). What is not the same: another micro-batch
size (a GEMM's rows) and another tensor-parallel degree (its columns: a slice's GEMMs are narrower, and slower per FLOP:
the cnn's tiny preset computed its tp 2 slices at 0.6-0.7x the one-process run's rate on the development VM). So a
calibration may hold runs at several micro-batches and tensor-parallel degrees (a `--tp N` run: its forward and
backward less the tensor-parallel sums inside them are its slices' compute), and a layout takes the run nearest its
own in both (in ratio: the GEMMs' rows times columns); how far it had to go is said with the prediction. The optimizer
costs per parameter element it updates (its phase over the elements the rank updated, its row's `optimizer_elements`:
a tensor-parallel rank updates its slices'; a record before them, the model's parameters): the update is element-wise. A step
also holds time in none of those phases, which the plan's events do not carry: the wait for the data loader's next
batch and the host's work between the phases (zeroing the gradients, the step's bookkeeping): the rank's `data_us` +
`idle_us`, a constant per step (measured 2-rank layouts of one model differ by about a third in it, a few per cent of
their steps).

The forward and backward are each phase's compute alone: the phase less the time its rank was blocked in
communication calls made inside it (a record's `ranks` rows, `forward_compute_us` and `backward_compute_us`): a
data-parallel run issues its gradient buckets in the backward, and the rank that arrives second at a bucket's
all-reduce does Open MPI's copy of the peer's data in that issuing call, which is the collective's time, not the
layers'. Of a run of several ranks, the phases are those of the rank whose compute (forward + backward + optimizer)
took longest: the measured step is the slowest rank's, which every collective waits for, and a prediction gives every
rank of a layout one rate. On the development VM the two ranks of one run differed by up to 40% (docs/prediction.md).
A record written before the rows had these: process 0's `phases_us`.

On a CPU a rank's rate depends on its compute threads: calibrate with the threads each rank of the predicted layout
gets (TRAINSCOPE_THREADS=cores / ranks per host); the description says how many the calibration ran with."""
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..common.errors import InputError
from ..common.json_types import Record, number
from ..common.load import Result


@dataclass(frozen=True)
class ComputeRates:
    source: str  # the calibration file the run came from
    micro_batch: int
    forward_us_per_flop: float
    backward_us_per_flop: float
    optimizer_us_per_element: float
    band_low: float  # relative: the fastest timed step below the median step, and the p95 above it
    band_high: float
    threads: int | None = None  # a CPU run's compute threads (run.threads): a CPU rank's rate depends on them
    ranks: int = 1  # the run's world size: ranks computing at once (on a CPU host they share its memory bandwidth)
    host_us: float = 0.0  # per step: the data wait and the host's work outside the phases
    rank: int = 0  # the run's rank the rates are of (of several: the one whose compute took longest)
    tp: int = 1  # the run's tensor-parallel degree: its slices' GEMMs are what the rates are of
    # the run's train record: the peaks its MFU is against (`mfu`), which a predicted MFU takes (step_figures.py)
    record: Record = field(default_factory=dict, compare=False, hash=False, repr=False)

    def describe(self) -> str:
        threads = f", {self.threads} thread(s)" if self.threads else ""
        kind = "data-parallel" if self.tp == 1 else f"tensor-parallel (tp {self.tp})"
        run = "one-process train" if self.ranks == 1 else \
            f"{self.ranks}-rank {kind} train (rank {self.rank}: its compute the longest)"
        return (f"{run} at micro-batch {self.micro_batch}{threads} ({self.source}): forward "
                f"{1e-3 / self.forward_us_per_flop:.2f} GFLOP/s, backward {1e-3 / self.backward_us_per_flop:.2f} "
                f"GFLOP/s, optimizer {self.optimizer_us_per_element * 1e3:.3f} ns per element, outside the phases "
                f"{self.host_us:.1f} us per step")


@dataclass(frozen=True)
class Wanted:
    """The plan's model, as a calibration run must match it."""
    model: str
    preset: str
    precision: str
    backend: str  # "cpu" or "cuda": the device kind (a record's `backend`, a --device's part before the colon)


def _calibration_tp(r: Record) -> int | None:
    """The run's tensor-parallel degree where it can calibrate compute, else None: one process, or every rank a
    replica or a tensor-parallel slice of one (no pipeline stages, no ZeRO, the gradients all-reduced after the
    backward, train_step.cpp), whose forward and backward phases less the communication calls inside them are compute
    alone, under the contention of as many ranks computing at once. A tensor-parallel run only where its rows carry
    each rank's FLOPs (the model's over the ranks is not a slice's)."""
    if r.get("world_size") == 1:
        return 1
    layout = r.get("layout") or {}
    tp, dp = layout.get("tp"), layout.get("dp")
    if not (isinstance(tp, int) and isinstance(dp, int) and tp * dp == r.get("world_size") and layout.get("pp") == 1
            and layout.get("zero") == 0 and layout.get("sync") == "allreduce"):
        return None
    return tp if tp == 1 or _rank_flops(r) else None


def _rank_flops(r: Record) -> bool:
    return bool(r.get("ranks")) and all(_has(k, _WORK) for k in r["ranks"])


def _matches(r: Record, w: Wanted) -> bool:
    return (_calibration_tp(r) is not None and r.get("completed") is True and r["model"] == w.model
            and r["preset"] == w.preset and r.get("precision") == w.precision and r.get("backend") == w.backend)


_PHASES = ("forward_compute_us", "backward_compute_us", "optimizer_us")
_HOST = ("data_us", "idle_us")  # the data wait, and the step less compute, data and sync
_WORK = ("forward_flops", "recompute_flops", "optimizer_elements")  # per step, the rank's own


def _has(row: Record, keys: Sequence[str]) -> bool:
    return all(number(row.get(k)) is not None for k in keys)


@dataclass(frozen=True)
class _Phases:
    """One rank's phases per step in us, and the FLOPs and parameter elements they are per."""
    rank: int
    forward: float
    backward: float
    optimizer: float
    host: float
    forward_flops: float
    recompute_flops: float
    elements: float  # the optimizer's


def _slowest(r: Record) -> _Phases:
    """The rank whose compute took longest, from the record's ranks[] rows; its work (FLOPs, elements updated) its
    row's, or (a record written before the rows had them: never a tensor-parallel one, _calibration_tp) the model's
    over the ranks, and every parameter updated on every rank (no ZeRO there). A record written before the rows had its
    phases: process 0's phases_us and (where it has them) its row's host time, else none."""
    ranks = int(r["world_size"])
    # flops_per_step is 3 forwards of every rank; recomputation is not in it (the backward phase ran that too)
    model = (r["flops_per_step"] / ranks / 3, r.get("recompute_flops_per_step", 0.0) / ranks, r["parameters"])
    rows = [k for k in r.get("ranks") or [] if _has(k, _PHASES + _HOST)]
    if rows:
        k = max(rows, key=lambda k: (sum(k[p] for p in _PHASES), -k["rank"]))
        work = tuple(k[w] for w in _WORK) if _has(k, _WORK) else model
        return _Phases(int(k["rank"]), k["forward_compute_us"], k["backward_compute_us"], k["optimizer_us"],
                       k["data_us"] + k["idle_us"], *work)
    p = r["phases_us"]
    zero = next((k for k in r.get("ranks") or [] if k.get("rank") == 0 and _has(k, _HOST)), None)
    return _Phases(0, p["forward"]["median"], p["backward"]["median"], p["optimizer"]["median"],
                   zero["data_us"] + zero["idle_us"] if zero else 0.0, *model)


def _rates(res: Result, r: Record) -> ComputeRates:
    k = _slowest(r)
    if k.forward_flops <= 0 or k.elements <= 0:
        raise InputError(f"{res.path}: its {r['model']} train record counts no FLOPs or parameters: not a calibration")
    step = r["step_time_us"]
    median = step["median"]
    threads = res.doc["run"].get("threads", {}).get("per_process") if r.get("backend") == "cpu" else None
    return ComputeRates(res.path, int(r["config"]["resolved"]["micro_batch"]), k.forward / k.forward_flops,
                        k.backward / (2 * k.forward_flops + k.recompute_flops), k.optimizer / k.elements,
                        max(0.0, 1 - step["min"] / median) if median > 0 else 0.0,
                        max(0.0, step["p95"] / median - 1) if median > 0 else 0.0, threads=threads,
                        ranks=int(r["world_size"]), host_us=k.host, rank=k.rank, tp=_calibration_tp(r) or 1, record=r)


def compute_rates(results: Sequence[Result], wanted: Wanted, micro_batch: int, ranks: int = 1,
                  tp: int = 1) -> ComputeRates:
    """The rates of the calibration's run of the plan's model nearest to its GEMMs: to `micro_batch` (their rows) and
    `tp` (their columns), each in ratio, the two distances added; among those nearest to `ranks` (in ratio: a world
    computing alike), then the larger micro-batch."""
    runs = [_rates(res, r) for res in results for r in res.records_of("train") if _matches(r, wanted)]
    if not runs:
        files = ", ".join(res.path for res in results)
        raise InputError(f"the calibration ({files}) holds no completed one-process (or plain data- or tensor-parallel) "
                         f"train run of {wanted.model} {wanted.preset} in {wanted.precision} on {wanted.backend}: run "
                         f"`trainscope train --model {wanted.model} --preset {wanted.preset} --batch {micro_batch} "
                         "--json FILE` without mpirun and add FILE")
    return min(runs, key=lambda c: (round(abs(math.log(c.micro_batch / micro_batch)) + abs(math.log(c.tp / tp)), 9),
                                    abs(math.log(c.ranks / ranks)), -c.micro_batch))
