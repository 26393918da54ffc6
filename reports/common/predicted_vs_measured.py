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

from .json_types import JsonObject, Record
from .memory import layout_name


@dataclass(frozen=True)
class Figure:
    """One figure per rank of a prediction, and the train record's `ranks` field it is compared with."""
    name: str
    field: str  # its name in a prediction's `measured.ranks` rows
    predicted: tuple[str, ...]  # the prediction's per-rank fields it is the sum of
    measured: str | None  # the train record's ranks[] field; None where the record has none alike


# The record's compute_us is its forward, backward and optimizer phases, which hold the waits issued inside them
# (ZeRO-3's gathers, a pipeline's transfers), so it is not the replay's compute: compute and optimizer are the
# prediction's alone. The record's exposed communication is every blocked time, a pipeline's sends and receives
# included (as the replay's waiting + transfer + pipeline wait); waiting for peers and the pipeline's waits are parts of
# it on both sides. Idle is left out: the record's is the step less compute, data and sync, the replay's the slowest
# rank's step less this rank's.
FIGURES = (Figure("step", "step_us", ("step_us",), "step_us"), Figure("compute", "compute_us", ("compute_us",), None),
           Figure("optimizer", "optimizer_us", ("optimizer_us",), None),
           Figure("exposed", "blocked_us", ("waiting_us", "transfer_us", "pipeline_wait_us"), "exposed_communication_us"),
           Figure("waiting", "waiting_us", ("waiting_us",), "waiting_for_peers_us"),
           Figure("pipeline_wait", "pipeline_wait_us", ("pipeline_wait_us",), "pipeline_wait_us"))
MEASURED = tuple(f for f in FIGURES if f.measured)  # those a train record has alike


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
    return float(sum(row[k] for k in f.predicted))


def window_steps(prediction: Record) -> int:
    """The steps of the prediction's window (model averaging every K steps: its figures are the mean step); 1 where a
    prediction written before windows has none."""
    return int(prediction.get("window_steps") or 1)


def measured_step(t: Record, steps: int = 1) -> float:
    """The train record's step as a prediction of a window of `steps` is comparable with: the median of its timed steps
    (each the slowest rank's), or their mean where the steps differ (the median is a step that does not communicate)."""
    return float(t["step_time_us"]["median" if steps == 1 else "mean"])


def measured_figures(t: Record, source: str, steps: int = 1) -> JsonObject:
    """A train record's step (measured_step) and its per-rank figures under the prediction's names (null where a record
    written before a figure existed lacks it, and for a window of several steps: the record's are medians), as a
    prediction's `measured`."""
    ranks = [{"rank": k["rank"], **{f.field: k.get(f.measured) if steps == 1 else None for f in MEASURED if f.measured}}
             for k in sorted(t.get("ranks") or [], key=lambda k: k["rank"])]
    return {"source": source, "step_us": measured_step(t, steps), "timed_steps": t["timed_steps"], "ranks": ranks}


def error(predicted_us: float, measured_us: float | None) -> float | None:
    """(predicted - measured) / measured; None without a measured figure above 0."""
    return (predicted_us - measured_us) / measured_us if measured_us else None


def within_band(prediction: Record, measured_us: float) -> bool:
    low, high = prediction["band_us"]
    return bool(low <= measured_us <= high)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def step_beside(measured_us: float, prediction: Record) -> str:
    """'measured 12.100 ms, predicted 10.200 ms (band 9.800..10.600), error -15.7%, outside the band': one line."""
    low, high = prediction["band_us"]
    outside = "" if within_band(prediction, measured_us) else ", outside the band"
    return (f"measured {measured_us / 1e3:.3f} ms, predicted {prediction['step_us'] / 1e3:.3f} ms (band {low / 1e3:.3f}.."
            f"{high / 1e3:.3f}), error {pct(error(prediction['step_us'], measured_us))}{outside}")
