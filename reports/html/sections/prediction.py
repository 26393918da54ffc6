"""Predicted vs measured (issue #41): each `train_prediction` record (`predict train --json`) beside the measured
train records of the same job among the results (model, preset, layout, ranks, backend, precision), or, where none is,
beside the figures it was given with --measured: the step and its breakdown per rank side by side (predicted /
measured, and the error), the MFU and memory per rank beside the measured run's, a measured step outside the
prediction's band raised as a finding, and the what-ifs (the step on each datasheet fabric or with faster compute,
against this cluster's)."""
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...common.json_types import Block, JsonObject, Record
from ...common.load import Result
from ...common.predicted_vs_measured import (FIGURES, MEMORY, Figure, comparable, error, job_of_prediction, job_of_train,
                                             measured_figures, mfu_pair, pct, predicted, step_beside, window_steps,
                                             within_band)
from ..plots import PlotSink


@dataclass(frozen=True)
class Beside:
    """One prediction and one measurement of its job (or none)."""
    name: str  # the prediction, as the tables name it
    prediction: Record
    where: str  # which run measured it ("-": nothing measured)
    measured: JsonObject | None  # as a prediction's `measured` (common/predicted_vs_measured.py)


def _where(r: Result, t: Record) -> str:
    """The run a train record is of: its result's label, and its suite step and fabric where it has them."""
    return r.label + (f" [{t['step']}]" if t.get("step") else "") + (f" over {t['transport']}" if t.get("transport") else "")


def _pairs(results: list[Result]) -> list[Beside]:
    """Every prediction beside each measured run of its job among the results; else beside its own --measured figures;
    else alone. A prediction is named by its job, and by its result's label too where several results hold some."""
    many = sum(bool(r.records_of("train_prediction")) for r in results) > 1
    out = []
    for r in results:
        for p in r.records_of("train_prediction"):
            name = (f"{r.label}: " if many else "") + job_of_prediction(p).describe()
            runs = [Beside(name, p, _where(m, t), measured_figures(t, m.path, window_steps(p))) for m in results
                    for t in m.records_of("train") if comparable(t) and job_of_train(t) == job_of_prediction(p)]
            own = p.get("measured")
            out += runs or [Beside(name, p, f"--measured {own['source']}" if own else "-", own)]
    return out


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1e3:.3f}"


def _alert(pairs: list[Beside]) -> Block | None:
    outside = [f"{b.name}, measured in {b.where}: {step_beside(b.measured['step_us'], b.prediction)}"
               for b in pairs if b.measured and not within_band(b.prediction, b.measured["step_us"])]
    if not outside:
        return None
    return {"kind": "alert", "text": f"{len(outside)} measured step(s) outside the predicted band (a slow link, a straggler, "
                                     "a bug, or the model's own error): " + "; ".join(outside)}


def _steps(pairs: list[Beside]) -> Block:
    rows = []
    for b in pairs:
        p, m = b.prediction, b.measured
        low, high = p["band_us"]
        rows.append([b.name, b.where, _ms(p["step_us"]), f"{_ms(low)}..{_ms(high)}", _ms(m["step_us"] if m else None),
                     pct(error(p["step_us"], m["step_us"])) if m else "-",
                     ("yes" if within_band(p, m["step_us"]) else "no") if m else "-",
                     mfu_pair(p, m, "vs_measured"), mfu_pair(p, m, "vs_datasheet")])
    return {"kind": "table",
            "caption": "Predicted and measured step (ms): the prediction's step (the slowest rank's) and band (every cost "
                       "at the low, and at the high end of its own band), the measured median step, and the error "
                       "(predicted - measured) / measured; MFU predicted / measured, against the GEMM ceiling the "
                       "calibration's (the measured run's) train run measured and against the datasheet peak (- where "
                       "the run states none)",
            "columns": ["prediction", "measured in", "predicted", "band", "measured", "error", "within band",
                        "MFU vs measured ceiling", "MFU vs datasheet"], "rows": rows}


def _no_ceiling(predictions: list[tuple[str, Record]]) -> list[Block]:
    """Why a prediction has no MFU against a measured ceiling, one line each."""
    return [{"kind": "text", "text": f"{name}: no MFU against a measured GEMM ceiling: {p['mfu']['no_measured_ceiling']}"}
            for name, p in predictions if (p.get("mfu") or {}).get("no_measured_ceiling")]


def _cell(row: Mapping[str, Any], measured: Mapping[str, Any] | None, f: Figure) -> str:
    p = predicted(row, f)
    if measured is None or not f.measured:  # nothing measured, or nothing the record has alike
        return _ms(p)
    m = measured.get(f.field)
    return f"{_ms(p)} / {_ms(m)}" + (f" ({pct(error(p, m))})" if m else "")


def _ranks(b: Beside) -> list[tuple[JsonObject, str, JsonObject | None]]:
    """Each predicted rank's row, its place on the axes its ranks differ in (dp0 tp1, as `predict train` names it) and
    the measured run's row of that rank (None: nothing measured; {}: that rank not recorded)."""
    measured = {k["rank"]: k for k in b.measured["ranks"]} if b.measured else {}
    ranks = b.prediction["per_rank"]
    varying = {k for k in ranks[0]["coordinates"] if len({r["coordinates"].get(k) for r in ranks}) > 1}
    return [(row, " ".join(f"{k.removesuffix('_rank')}{v}" for k, v in sorted(row["coordinates"].items()) if k in varying)
             or "-", measured.get(row["rank"], {}) if b.measured else None) for row in ranks]


def _by_group(row: Mapping[str, Any]) -> str:
    """'dp 0.050, pp 0.010' (ms): the rank's exposed communication per group; - in a prediction written before it."""
    groups = row.get("exposed_by_group_us")
    return "-" if groups is None else ", ".join(f"{g} {_ms(us)}" for g, us in groups.items()) or "none"


def _per_rank(pairs: list[Beside]) -> Block:
    rows = [[b.name, b.where, row["rank"], where] + [_cell(row, theirs, f) for f in FIGURES] + [_by_group(row)]
            for b in pairs for row, where, theirs in _ranks(b)]
    return {"kind": "table",
            "caption": "Per rank, predicted / measured (ms) and the error, side by side: the step, the compute "
                       "(forward and backward, the record's phases less the communication calls made inside them), the "
                       "host time outside the phases (the data wait and the rest: the record's data and idle time), "
                       "the exposed communication (every blocked time: the collectives' waits and the pipeline's) and "
                       "two parts of it, waiting for peers and the pipeline's waits; the optimizer as predicted alone; "
                       "- where the measured run did not record the figure; the exposed communication per group (the "
                       "communicator of the op waited for; a pipeline's waits under its group) as predicted alone",
            "columns": ["prediction", "measured in", "rank", "coordinates"]
                       + [f"{f.name.replace('_', ' ')}" for f in FIGURES] + ["exposed by group"],
            "rows": rows}


def _mib(predicted_bytes: float, measured_bytes: float | None, beside: bool) -> str:
    p = f"{predicted_bytes / 2 ** 20:.1f}"
    if not beside:
        return p
    if measured_bytes is None:
        return f"{p} / -"
    return f"{p} / {measured_bytes / 2 ** 20:.1f} ({pct(error(predicted_bytes, measured_bytes))})"


def _memory(pairs: list[Beside]) -> Block | None:
    rows = [[b.name, b.where, row["rank"], where]
            + [_mib(row[f.field], (theirs or {}).get(f.field), theirs is not None) for f in MEMORY]
            for b in pairs for row, where, theirs in _ranks(b) if all(f.field in row for f in MEMORY)]
    if not rows:
        return None
    return {"kind": "table",
            "caption": "Memory per rank (MiB), predicted / measured and the error: the plan's formulas (the model "
                       "states with what ZeRO-3 holds in flight; the activation buffers with a pipeline's kept inputs; "
                       "the total with its transfer buffers) beside the measured run's peaks (its total also holds the "
                       "workspace and every communication buffer, which the plan does not count)",
            "columns": ["prediction", "measured in", "rank", "coordinates"] + [f.name for f in MEMORY], "rows": rows}


def _what_ifs(predictions: list[tuple[str, Record]]) -> Block | None:
    rows = []
    for name, p in predictions:
        if not p["what_if"]:
            continue
        rows.append([name, "this cluster (as calibrated)", "-", "-", _ms(p["step_us"]), "1.00x"])
        for w in p["what_if"]:
            rows.append([name, w["name"] + (" (fastest)" if w["name"] == p["fastest"] else ""), w["kind"], w["detail"],
                         _ms(w["step_us"]), f"{p['step_us'] / w['step_us']:.2f}x" if w["step_us"] > 0 else "-"])
    if not rows:
        return None
    return {"kind": "table",
            "caption": "What-if: the predicted step with every collective's bandwidth a datasheet fabric's (latencies as "
                       "fitted here; a peak, so a bound) or with compute faster, and its speed against this cluster's",
            "columns": ["prediction", "what-if", "kind", "detail", "step (ms)", "x this cluster"], "rows": rows}


def _targets(predictions: list[tuple[str, Record]]) -> list[Block]:
    out = []
    for name, p in predictions:
        t = p["target"]
        if t:
            needs = "; ".join(n["description"] for n in t["needs"])
            out.append({"kind": "text", "text": f"{name}: to reach {_ms(t['step_us'])} ms: {needs}"})
    return out


class PredictionSection:
    key = "prediction"
    title = "Predicted vs measured"
    order = 33

    def applies(self, results: list[Result]) -> bool:
        return any(r.records_of("train_prediction") for r in results)

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        pairs = _pairs(results)
        predictions = list({id(b.prediction): (b.name, b.prediction) for b in pairs}.values())
        blocks = [b for b in (_alert(pairs), _steps(pairs)) if b] + _no_ceiling(predictions)
        blocks += [b for b in (_per_rank(pairs), _memory(pairs), _what_ifs(predictions)) if b]
        return blocks + _targets(predictions)


SECTION = PredictionSection()
