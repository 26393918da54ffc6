"""A measured training step beside its prediction (issue #41): which train record a `train_prediction` record is of,
the figures per rank that both have, and the error of each. `predict train --measured` writes them into the prediction
(its `measured`), the report's "Predicted vs measured" section and compare's line under a train row read them here, so
that the three say the same.

The error is (predicted - measured) / measured, as `predict check` and `predict train` state it: negative where the
step took longer than predicted. A measured step outside the prediction's band is a finding (a slow link, a
straggler, a bug, or the model's own error: docs/prediction.md)."""
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .json_types import JsonObject, Record, number
from .memory import layout_name


@dataclass(frozen=True)
class Figure:
    """One figure per rank of a prediction, and the train record's `ranks` field it is compared with."""
    name: str
    field: str  # its name in a prediction's `measured.ranks` rows
    predicted: tuple[str, ...]  # the prediction's per-rank fields it is the sum of
    measured: tuple[str, ...] = ()  # the train record's ranks[] fields it is the sum of; none where it has none alike


# The record's compute_us is its forward, backward and optimizer phases, which hold the waits issued inside them
# (ZeRO-3's gathers, tensor parallelism's sums), so it is not the replay's compute: its forward_compute_us +
# backward_compute_us (each phase less those calls) is; the optimizer is the prediction's alone. The record's exposed
# communication is every blocked time, a pipeline's sends and receives included (as the replay's waiting + transfer +
# pipeline wait); waiting for peers and the pipeline's waits are parts of it on both sides. Idle is left out: the
# record's is the step less compute, data and sync, the replay's the slowest rank's step less this rank's. The host
# time outside the phases is the record's data wait and its own idle time (its step less compute, data and sync), as
# the calibration's is taken (predict/compute.py).
FIGURES = (Figure("step", "step_us", ("step_us",), ("step_us",)),
           Figure("compute", "compute_us", ("compute_us",), ("forward_compute_us", "backward_compute_us")),
           Figure("optimizer", "optimizer_us", ("optimizer_us",)),
           Figure("host", "host_us", ("host_us",), ("data_us", "idle_us")),
           Figure("exposed", "blocked_us", ("waiting_us", "transfer_us", "pipeline_wait_us"), ("exposed_communication_us",)),
           Figure("waiting", "waiting_us", ("waiting_us",), ("waiting_for_peers_us",)),
           Figure("pipeline_wait", "pipeline_wait_us", ("pipeline_wait_us",), ("pipeline_wait_us",)))
MEASURED = tuple(f for f in FIGURES if f.measured)  # those a train record has alike


@dataclass(frozen=True)
class MemoryFigure:
    """One rank's memory in bytes: the plan's (a prediction's per_rank field) and the train record's `memory.ranks[]`
    field it is compared with (a path into the row)."""
    name: str
    field: str  # its name in a prediction's per_rank rows and its `measured.ranks` rows
    measured: tuple[str, ...]


# The plan counts what the trainer's formulas say a rank holds (train_plan.cpp): the model states with what ZeRO-3
# holds in flight, the activation buffers with a pipeline's kept inputs, and the total with the pipeline's transfer
# buffers. The record's peaks are the allocator's: model states as the sum of the four kinds' peaks, activations
# alike (the plan's exactly, tests/integration/test_train_plan.py); its total peak also holds the workspace and
# every communication buffer, which the plan does not count, so the total is a floor there.
MEMORY = (MemoryFigure("states", "model_states_bytes", ("model_states_bytes",)),
          MemoryFigure("activations", "activation_bytes", ("peak_bytes", "activations")),
          MemoryFigure("total", "total_bytes", ("total_peak_bytes",)))

# The MFU figures a prediction's `mfu` and a train record's `mfu` both state, under the record's names.
MFU_FIELDS = ("measured_ceiling_tflops", "vs_measured", "datasheet_gpu", "datasheet_peak_tflops", "vs_datasheet")


@dataclass(frozen=True, order=True)
class Job:
    """What a prediction and a train record must agree on to be of the same training job."""
    model: str
    preset: str
    layout: str
    ranks: int
    backend: str
    precision: str

    def describe(self) -> str:
        return f"{self.model} {self.preset} {self.layout} at {self.ranks} rank(s)"


def job_of_prediction(p: Record) -> Job:
    return Job(p["model"], p["preset"], p["layout"], p["ranks"], p["backend"], p["precision"])


def job_of_train(t: Record) -> Job:
    return Job(t["model"], t["preset"], layout_name(t), t["world_size"], t["backend"], t["precision"])


def comparable(t: Record) -> bool:
    """A train record with a measured step: completed, its steps timed."""
    return bool(t.get("completed")) and bool(t.get("step_time_us"))


def predicted(row: Mapping[str, Any], f: Figure) -> float:
    """A prediction's per-rank figure; 0 for a part a prediction written before it lacks (host_us)."""
    return float(sum(row.get(k, 0.0) for k in f.predicted))


def measured(row: Mapping[str, Any], f: Figure) -> float | None:
    """A train record's ranks[] row's figure; None where it has none alike or lacks a part (written before it)."""
    parts = [v for v in (number(row.get(k)) for k in f.measured) if v is not None]
    return sum(parts) if parts and len(parts) == len(f.measured) else None


def _memory_of(row: Mapping[str, Any] | None, f: MemoryFigure) -> Any:
    for key in f.measured:
        row = row.get(key) if isinstance(row, Mapping) else None
    return row


def window_steps(prediction: Record) -> int:
    """The steps of the prediction's window (model averaging every K steps: its figures are the mean step); 1 where a
    prediction written before windows has none."""
    return int(prediction.get("window_steps") or 1)


def measured_step(t: Record, steps: int = 1) -> float:
    """The train record's step as a prediction of a window of `steps` is comparable with: the median of its timed steps
    (each the slowest rank's), or their mean where the steps differ (the median is a step that does not communicate)."""
    return float(t["step_time_us"]["median" if steps == 1 else "mean"])


def measured_figures(t: Record, source: str, steps: int = 1) -> JsonObject:
    """A train record's step (measured_step), its per-rank figures and memory under the prediction's names (null where
    a record written before a figure existed lacks it; the timing figures null for a window of several steps too: the
    record's are medians), and its MFU fields, as a prediction's `measured`."""
    memory = {m["rank"]: m for m in (t.get("memory") or {}).get("ranks") or []}
    ranks = [{"rank": k["rank"], **{f.field: measured(k, f) if steps == 1 else None for f in MEASURED},
              **{f.field: _memory_of(memory.get(k["rank"]), f) for f in MEMORY}}
             for k in sorted(t.get("ranks") or [], key=lambda k: k["rank"])]
    mfu = t.get("mfu") or {}
    return {"source": source, "step_us": measured_step(t, steps), "timed_steps": t["timed_steps"], "ranks": ranks,
            "mfu": {k: mfu.get(k) for k in MFU_FIELDS}}


def error(predicted_us: float, measured_us: float | None) -> float | None:
    """(predicted - measured) / measured; None without a measured figure above 0."""
    return (predicted_us - measured_us) / measured_us if measured_us else None


def abs_error(predicted_us: float, measured_us: float | None) -> float | None:
    """|error|: how far off either way, the figure the history tracks of a prediction (common/identity.py)."""
    e = error(predicted_us, measured_us)
    return None if e is None else abs(e)


def within_band(prediction: Record, measured_us: float) -> bool:
    low, high = prediction["band_us"]
    return bool(low <= measured_us <= high)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def mfu_pair(prediction: Mapping[str, Any], measured: Mapping[str, Any] | None, key: str) -> str:
    """'12.3% / 10.1%': a prediction's MFU (`vs_measured` or `vs_datasheet`) and a measured run's, '-' for either
    side without it (a prediction written before MFU, a peak not measured)."""
    def one(x: Any) -> str:
        return "-" if x is None else f"{x:.1%}"
    p = one((prediction.get("mfu") or {}).get(key))
    return p if measured is None else f"{p} / {one((measured.get('mfu') or {}).get(key))}"


def step_beside(measured_us: float, prediction: Record) -> str:
    """'measured 12.100 ms, predicted 10.200 ms (band 9.800..10.600), error -15.7%, outside the band': one line."""
    low, high = prediction["band_us"]
    outside = "" if within_band(prediction, measured_us) else ", outside the band"
    return (f"measured {measured_us / 1e3:.3f} ms, predicted {prediction['step_us'] / 1e3:.3f} ms (band {low / 1e3:.3f}.."
            f"{high / 1e3:.3f}), error {pct(error(prediction['step_us'], measured_us))}{outside}")
