"""A predicted step's figures beside its time (issue #41): MFU, memory per rank and the exposed communication per
group, for `predict train`'s console and its train_prediction record (prediction_record.py).

MFU is a train record's, predicted: the step's model FLOPs over the predicted step x the ranks x one rank's peak, as
bench/train/train_runner.cpp divides flops_per_step by the median step and the world size, then by each peak
(train_mfu.cpp). The model FLOPs are the plan records' flops_per_step, which count as the trainer's flopsPerStep()
does (3 forwards per micro-batch of the layers' whole FLOPs, forwardFlops(): recomputation not counted, a
tensor-parallel slice counting its layers whole), once per tensor-parallel slice: the records at tp_rank 0 sum to a
train record's flops_per_step (tests/integration/test_train_plan.py). Not the schedule's events: those carry what each
rank computes (its slice's share, rankForwardFlops(), workloads/layers/layer.h), what its time is replayed from. The
peaks are those the calibration's train run states in its `mfu` (the GEMM ceiling it measured; for a GPU the table
knows, the datasheet's dense peak at the clock it read): the device predicted for is the calibration's. Without a
measured ceiling (a run with --no-ceiling, or one written before MFU) that figure is "-" with the reason, never a
guess.

Memory per rank is the plan's (the trainer's formulas, train_plan.cpp): the model states with what ZeRO-3 holds in
flight, the activation buffers with a pipeline's kept inputs, and the total with its transfer buffers; beside a
measured run, its allocator's peaks (common/predicted_vs_measured.py MEMORY)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..common.json_types import JsonObject, Record
from ..common.predicted_vs_measured import MEMORY
from .compute import ComputeRates
from .replay import StepReplay

if TYPE_CHECKING:
    from .train_command import PlanDoc


def model_flops(plan: PlanDoc) -> float:
    """The step's model FLOPs over every rank: a train record's flops_per_step (one tensor-parallel slice's records:
    every slice counts the same whole layers)."""
    return sum(float(r["flops_per_step"]) for r in plan.records if r["coordinates"].get("tp_rank", 0) == 0)


def _no_ceiling(rates: ComputeRates) -> str:
    """Why the calibration run states no measured GEMM ceiling."""
    r = rates.record
    if not r.get("mfu"):
        return f"{rates.source}'s train run states no MFU (its steps untimed, or written before MFU was)"
    if (r.get("config") or {}).get("ceiling") is False:
        return f"{rates.source}'s train run ran with --no-ceiling (calibrate without it for this figure)"
    return f"{rates.source}'s train run measured no GEMM ceiling"


def mfu(plan: PlanDoc, rates: ComputeRates, step_us: float, band: tuple[float, float]) -> JsonObject:
    """The prediction's `mfu`: against the calibration run's measured ceiling (with the band's MFU: the step's high
    end gives the low one) and its datasheet peak, under a train record's names; null where it has no such peak."""
    flops, ranks = model_flops(plan), int(plan.first["ranks"])
    peaks = rates.record.get("mfu") or {}
    ceiling, datasheet = peaks.get("measured_ceiling_tflops"), peaks.get("datasheet_peak_tflops")

    def of(tflops: float | None, us: float) -> float | None:
        return flops / (us * 1e-6 * ranks * tflops * 1e12) if tflops and us > 0 else None

    return {"model_flops_per_step": flops, "source": rates.source,
            "measured_ceiling_tflops": ceiling, "vs_measured": of(ceiling, step_us),
            "vs_measured_band": [of(ceiling, band[1]), of(ceiling, band[0])] if ceiling else None,
            "no_measured_ceiling": None if ceiling else _no_ceiling(rates),
            "datasheet_gpu": peaks.get("datasheet_gpu"), "datasheet_peak_tflops": datasheet,
            "vs_datasheet": of(datasheet, step_us)}


def plan_memory(r: Record) -> dict[str, float]:
    """One rank's memory in bytes as its plan record counts it, under MEMORY's fields."""
    f = r["formula_bytes"]
    got = {"model_states_bytes": float(f["model_states"] + f["in_flight"]["parameters"] + f["in_flight"]["gradients"]),
           "activation_bytes": float(r["activation_bytes"]), "total_bytes": float(r["total_bytes"])}
    assert set(got) == {m.field for m in MEMORY}
    return got


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def mfu_line(m: JsonObject, calibration: Record, measured: Record | None) -> str:
    """'# MFU: ...': against each peak the calibration states, the predicted figure, and beside it the measured run's
    (against its own peak: the ceiling it measured, the clock it read); '-' and why where there is no measured ceiling."""
    theirs = (measured or {}).get("mfu") or {}

    def beside(key: str, peak: str) -> str:
        if not measured:
            return ""
        return f", measured {_percent(theirs.get(key))}" + (f" of its own {theirs[peak]:.4g}" if theirs.get(peak) else "")

    ceiling = beside("vs_measured", "measured_ceiling_tflops")
    if m["measured_ceiling_tflops"]:
        precision = ((calibration.get("mfu") or {}).get("measured") or {}).get("precision", "-")
        low, high = m["vs_measured_band"]
        parts = [f"{_percent(m['vs_measured'])} of the measured GEMM ceiling (band {_percent(low)}..{_percent(high)}; "
                 f"{m['measured_ceiling_tflops']:.4g} TFLOP/s per rank, {precision}, the calibration run's){ceiling}"]
    else:
        parts = [f"- against a measured GEMM ceiling: {m['no_measured_ceiling']}"
                 + (ceiling if theirs.get("vs_measured") is not None else "")]  # "measured -" beside "-" says nothing
    if m["datasheet_peak_tflops"]:
        parts.append(f"{_percent(m['vs_datasheet'])} of the {m['datasheet_gpu']} datasheet peak "
                     f"({m['datasheet_peak_tflops']:.4g} TFLOP/s at the calibration run's clock)"
                     + beside("vs_datasheet", "datasheet_peak_tflops"))
    return (f"# MFU: {'; '.join(parts)}; model FLOPs per step {m['model_flops_per_step']:.4g} (forward + backward, "
            "recomputation not counted, as a train record's)")


def _mib(predicted: float, measured: Any) -> str:
    p = predicted / 2 ** 20
    return f"{p:.1f}" if measured is None else f"{p:.1f}/{measured / 2 ** 20:.1f}"


def rank_table(plan: PlanDoc, step: StepReplay, coordinates: Mapping[int, str], measured: Mapping[int, Record]) -> list[str]:
    """Per rank: its memory (predicted / measured beside a run) and its exposed communication per group (predicted)."""
    groups = sorted({g for t in step.ranks for g in t.exposed_by_group_us})
    head = "".join(f" {m.name + '(MiB)':>17}" for m in MEMORY) + "".join(f" {g + '(us)':>12}" for g in groups)
    lines = [f"# {'rank':>4} {'coordinates':<14}{head}  (memory: the plan's formulas; then the exposed communication per group"
             + (", predicted alone; measured memory beside: predicted / measured)" if measured else ")")]
    for r in plan.records:
        rank = int(r["rank"])
        memory, theirs = plan_memory(r), measured.get(rank)
        cells = "".join(f" {_mib(memory[m.field], theirs.get(m.field) if theirs else None):>17}" for m in MEMORY)
        by_group = step.rank(rank).exposed_by_group_us
        cells += "".join(f" {by_group[g]:>12.1f}" if g in by_group else f" {'-':>12}" for g in groups)
        lines.append(f"  {rank:>4} {coordinates[rank]:<14}{cells}")
    return lines
