"""`predict train --json OUT`: the prediction as a trainscope result (schema/result-v1.schema.json), one
`train_prediction` record, so that `report` and `compare` read it beside the measured train records of the same job
(common/predicted_vs_measured.py). The record holds what the step was predicted from (plan, calibration files, the
compute rates and every collective's fit used), the step with its band and its breakdown per rank (with the exposed
communication per group and the plan's memory), its MFU (step_figures.py), the what-ifs, what a target would need,
and with --measured the measured figures and the step's error."""
from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from typing import TYPE_CHECKING

from ..common.json_types import JsonObject, Record, ResultDoc
from ..common.load import Result
from ..common.predicted_vs_measured import abs_error, error, measured_figures, within_band
from ..common.result_document import Envelope, checked, result_document, timestamp
from .placement import links_by_group
from .predict import describe_fit, regimes_json
from .step_costs import StepCosts
from .step_figures import plan_memory
from .what_if import Need, WhatIf

if TYPE_CHECKING:
    from .train_command import PlanDoc, Predicted

# The options of `predict train` a prediction's run config states, as (record key, argparse dest).
OPTIONS = (("calibration", "calibration"), ("plan", "plan"), ("measured", "measured"), ("transport", "transport"),
           ("issue", "issue"), ("cache", "cache"), ("fabric", "fabric"), ("compute_speedup", "compute_speedup"),
           ("target_ms", "target_ms"),
           ("ranks_per_host", "ranks_per_host"), ("intra_transport", "intra_transport"),
           ("inter_transport", "inter_transport"), ("measured_fabric", "measured_fabric"),
           ("measured_fabric_transport", "measured_fabric_transport"), ("fabric_link", "fabric_link"))


def _compute(costs: StepCosts) -> JsonObject:
    r = costs.rates
    return {"source": r.source, "micro_batch": r.micro_batch, "tp": r.tp, "forward_us_per_flop": r.forward_us_per_flop,
            "backward_us_per_flop": r.backward_us_per_flop, "optimizer_us_per_element": r.optimizer_us_per_element,
            "host_us": r.host_us, "rank": r.rank, "band_low": r.band_low, "band_high": r.band_high, "threads": r.threads,
            "description": r.describe()}


def _collectives(costs: StepCosts) -> list[JsonObject]:
    return [{"op": op, "group_size": ranks, "link": link.value, "series": m.key.as_json(), "fitted_ranks": list(m.fitted_ranks),
             "points": m.points, "measured_bytes": [m.smallest, m.largest], "regimes": regimes_json(m),
             "description": describe_fit(m)}
            for (op, ranks, link, _), m in sorted(costs.used().items())]


def _per_rank(plan: PlanDoc, predicted: Predicted) -> list[JsonObject]:
    plans = {int(r["rank"]): r for r in plan.records}
    return [{"rank": t.rank, "coordinates": plans[t.rank]["coordinates"], **{k: v for k, v in asdict(t).items() if k != "rank"},
             **plan_memory(plans[t.rank])} for t in predicted.nominal.ranks]


def _target(target_ms: float | None, needs: list[Need]) -> JsonObject | None:
    if target_ms is None:
        return None
    return {"step_us": target_ms * 1e3,
            "needs": [{"knob": n.knob.name.lower(), "factor": n.factor, "floor_us": n.floor_us,
                       "description": n.describe(target_ms * 1e3)} for n in needs]}


def _measured(step_us: float, band: tuple[float, float], measured: tuple[str, Record] | None,
              steps: int) -> JsonObject | None:
    if measured is None:
        return None
    m = measured_figures(measured[1], measured[0], steps)
    return {**m, "error": error(step_us, m["step_us"]), "abs_error": abs_error(step_us, m["step_us"]),
            "within_band": within_band({"band_us": band}, m["step_us"])}


def prediction_record(plan: PlanDoc, costs: StepCosts, predicted: Predicted, what_ifs: list[WhatIf], target_ms: float | None,
                      needs: list[Need], measured: tuple[str, Record] | None, mfu: JsonObject) -> Record:
    """The train_prediction record; `measured`: the --measured file and its train record of the plan's job; `mfu`:
    step_figures.mfu's."""
    p, first = predicted.nominal, plan.first
    fastest = min(what_ifs, key=lambda w: w.step.step_us, default=None)
    return {"kind": "train_prediction", "model": first["model"], "preset": first["preset"], "layout": first["layout"],
            "ranks": first["ranks"], "backend": plan.backend, "precision": plan.precision, "batch": plan.batch,
            "micro_batch": first["micro_batch"], "micro_batches": first["micro_batches"], "plan": plan.path,
            "calibration": list(costs.calibration), "window_steps": p.steps, "transport": costs.transport,
            "issue": costs.issue, "cache": costs.cache, "progress": costs.progress.value,
            "placement": costs.placement.as_json(links_by_group(costs.placement, plan.records)) if costs.placement else None,
            "compute": _compute(costs),
            "collectives": _collectives(costs), "step_us": p.step_us, "band_us": list(predicted.band),
            "throughput_per_s": plan.batch / p.step_us * 1e6 if p.step_us > 0 else None,
            "mfu": mfu, "per_rank": _per_rank(plan, predicted),
            "what_if": [{"name": w.name, "kind": w.kind.value, "detail": w.detail, "step_us": w.step.step_us}
                        for w in what_ifs],
            "fastest": fastest.name if fastest and fastest.step.step_us < p.step_us else None,
            "target": _target(target_ms, needs), "measured": _measured(p.step_us, predicted.band, measured, p.steps),
            **({"ps_async": predicted.ps_async.as_json()} if predicted.ps_async else {})}


def _hosts(calibration: list[Result]) -> list[JsonObject]:
    """The calibration's hosts, each once: the cluster the prediction is of."""
    hosts: dict[str, JsonObject] = {}
    for res in calibration:
        for h in res.run["hosts"]:
            hosts.setdefault(h["hostname"], h)
    return list(hosts.values())


def _argv(args: argparse.Namespace) -> list[str]:
    """`predict train`'s command line, rebuilt from what was given."""
    out = ["train", "--calibration", *args.calibration]
    for key, dest in OPTIONS[1:]:
        v = getattr(args, dest)
        for one in v if isinstance(v, list) else [v]:  # a repeatable option (--fabric) once per value
            if one is not None:
                out += [f"--{key.replace('_', '-')}", str(one)]
    return out + (["--json", args.json] if args.json else [])


def prediction_document(args: argparse.Namespace, plan: PlanDoc, record: Record, calibration: list[Result]) -> ResultDoc:
    """The result document of one prediction, checked as report and compare will read it back."""
    now = timestamp(time.time())
    hosts = _hosts(calibration)
    config = {"label": f"prediction: {plan.describe()}", **{key: getattr(args, dest) for key, dest in OPTIONS}}
    where = Envelope(hosts, {"processes": 1, "hosts": len(hosts), "bootstrap": "single"}, [], {}, now, now)
    return checked(result_document("predict", _argv(args), config, where, [record]), "the prediction")
