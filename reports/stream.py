"""Reading what a run streamed (<out>.jsonl) as a result document, and making whole the training runs that
stopped before writing their train record.

The stream (bench/session/result_writer.h): a "run" line with the metadata as the run started (ended_at
null), the records one a line as they were measured, and, when the run finished, the "run" line again with
its end time. A stream whose last run line has no end time is a run that was killed, hung or crashed: it is
read all the same and marked incomplete. A last line torn by a kill is left out.

A training run streams a `train_progress` record per step (bench/train/train_record.h, progressJson); the
first carries the run's train record as it stood before the first step. The train record the run writes at
its end sums the steps up, and its progress records are dropped; a run whose train record never came gets
one made here from that description and the steps streamed, with completed false and an error saying so.
"""
import copy
import json
import math
from typing import Any

from .errors import InputError
from .files import loads_strict
from .json_types import Record, ResultDoc

PHASES = ("data", "forward", "backward", "sync", "optimizer")


def document_from_stream(text: str, name: str) -> ResultDoc:
    """The document of a stream: its last run line (metadata) and its records, in order."""
    lines = text.split("\n")
    torn_last = not text.endswith("\n")  # the line a kill cut short has no newline
    objects: list[Record] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = loads_strict(line)
        except json.JSONDecodeError as e:
            if torn_last and n == len(lines):
                break
            raise InputError(f"{name}: line {n}: not JSON: {e.msg} at column {e.colno}") from None
        except ValueError as e:
            raise InputError(f"{name}: line {n}: not JSON: {e}") from None
        if not isinstance(obj, dict) or "kind" not in obj:
            raise InputError(f"{name}: line {n}: not a record (a JSON object with a kind)")
        objects.append(obj)
    runs = [o for o in objects if o["kind"] == "run"]
    if not objects or objects[0]["kind"] != "run":
        raise InputError(f"{name}: not a trainscope result: neither a JSON document nor a stream starting with its run line")
    run = {k: v for k, v in runs[-1].items() if k not in ("kind", "schema")}
    return {"schema": runs[-1].get("schema"), "run": run, "records": [o for o in objects if o["kind"] != "run"]}


def _stats(samples: list[float]) -> Record:
    """bench/session/stats.cpp's summary: min, median, mean, p95 (linear interpolation), max, sample stdev, cv, n."""
    s = sorted(samples)
    n = len(s)

    def percentile(p: float) -> float:
        pos = p / 100 * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    mean = sum(s) / n
    stdev = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    return {"min": s[0], "median": percentile(50), "mean": mean, "p95": percentile(95), "max": s[-1], "stdev": stdev,
            "cv": stdev / mean if mean else 0.0, "n": n}


def train_from_progress(steps: list[Record]) -> Record:
    """The train record of a run that streamed `steps` (its first carrying the description) and never wrote its own:
    as bench/train/train_record.cpp writes one that stopped part-way (process 0's steps, no rank figures)."""
    rec: Record = copy.deepcopy(steps[0]["train"])
    float16 = "loss_scale" in steps[0]
    curve = []
    for p in steps:
        point: Record = {"step": p["train_step"], "loss": p["loss"], "lr": p["lr"], "grad_norm": p["grad_norm"]}
        if float16:
            point.update(loss_scale=p["loss_scale"], skipped=p["skipped"])
        curve.append(point)
    timed = [p for p in steps if p["timed"]]
    last = steps[-1]["train_step"]
    rec.update(loss_curve=curve, steps_done=len(curve), timed_steps=len(timed), completed=False,
               loss={"initial": curve[0]["loss"], "final": curve[-1]["loss"]},
               error=f"the run stopped after train step {last} without writing its train record (killed, hung or "
                     f"crashed): its {len(curve)} step(s) are read from the stream")
    if float16:
        rec["skipped_steps"] = sum(1 for p in curve if p["skipped"])
    for gone in ("step_time_us", "step_samples_us", "phases_us", "throughput_per_s", "tflops", "tflops_per_device", "mfu"):
        rec.pop(gone, None)
    if timed:
        samples = [p["step_us"] for p in timed]
        rec["step_time_us"] = _stats(samples)
        rec["step_samples_us"] = samples
        rec["phases_us"] = {ph: _stats([p["phases_us"][ph] for p in timed]) for ph in PHASES}
        median_s = rec["step_time_us"]["median"] * 1e-6
        if median_s > 0:
            rec["throughput_per_s"] = rec["items_per_step"] / median_s
            rec["tflops"] = rec["flops_per_step"] / median_s / 1e12
            rec["tflops_per_device"] = rec["tflops"] / rec["world_size"]
    return rec


def _same_run(about: Record, train: Record) -> bool:
    """Whether `train` is the record that ends the run `about` describes (and not another's after a run that died)."""
    keys = ("model", "preset", "backend", "precision", "world_size", "config", "first_step", "step", "label")
    return all(about.get(k) == train.get(k) for k in keys)


def fold_training(records: list[Record]) -> tuple[list[Record], int]:
    """The records with every run's progress folded: dropped where the run's train record follows, made into that
    record where it never came. Also returns how many train records were made."""
    out: list[Any] = []
    open_steps: list[Record] = []
    at = -1  # where the open run's record goes: where its first step was
    made = 0

    def close() -> None:
        nonlocal open_steps, made
        if open_steps:
            out[at] = train_from_progress(open_steps)
            made += 1
        open_steps = []

    for rec in records:
        kind = rec.get("kind")
        if kind == "train_progress":
            if "train" in rec:  # a run's first step
                close()
                open_steps, at = [rec], len(out)
                out.append(None)  # its place
            elif open_steps:
                open_steps.append(rec)
            continue  # a step whose run's description is not in the stream cannot be placed: left out
        if kind == "train" and open_steps:
            if _same_run(open_steps[0]["train"], rec):
                open_steps = []
                del out[at]
            else:
                close()
        out.append(rec)
    close()
    return [r for r in out if r is not None], made
