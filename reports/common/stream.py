"""Reading what a run streamed (<out>.jsonl) as a result document, and making whole the training runs that
stopped before writing their train record.

The stream (bench/results/result_writer.h): a "run" line with the metadata as the run started (ended_at
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
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from .errors import InputError
from .json_types import Record, ResultDoc
from .strict_json import loads

PHASES = ("data", "forward", "backward", "sync", "optimizer")


class Step(NamedTuple):
    """What a run's train record is made of from one `train_progress` record: a stream of 30,000 steps is held as
    these, not as 30,000 parsed records, each with its own copy of every key."""
    train_step: int
    loss: Any
    lr: Any
    grad_norm: Any
    timed: bool
    step_us: float
    phases_us: tuple[float, ...]  # in PHASES' order
    loss_scale: Any = None  # float16 runs only
    skipped: Any = None

    @staticmethod
    def of(p: Record) -> "Step":
        return Step(p["train_step"], p["loss"], p["lr"], p["grad_norm"], p["timed"], p["step_us"],
                    tuple(p["phases_us"][ph] for ph in PHASES), p.get("loss_scale"), p.get("skipped"))


def document_from_lines(lines: Iterable[tuple[int, bytes]], name: str, check: Callable[[Record, str], None]) -> \
        tuple[ResultDoc, int, int]:
    """The document of a stream read line by line ((line number, bytes) pairs), its training runs folded as they come
    (Folder): its last run line (metadata) and its records, each checked by `check` (the schema) before it is used or
    kept. Also returns how many records the stream held and how many train records were made. Only what the
    document keeps is held, never the stream's text."""
    run: Record | None = None
    folder = Folder()
    for n, raw in lines:
        if not raw.strip():
            continue
        torn = not raw.endswith(b"\n")  # only the last line can lack its newline: the one a kill cut short
        try:
            obj = loads(raw.decode("utf-8"), f"{name}: line {n}")
        except UnicodeDecodeError as e:
            if torn:
                break
            raise InputError(f"{name}: line {n}: not UTF-8 text (byte {e.start} of the line)") from None
        except json.JSONDecodeError as e:
            if torn:
                break
            raise InputError(f"{name}: line {n}: not JSON: {e.msg} at column {e.colno}") from None
        if not isinstance(obj, dict) or "kind" not in obj:
            raise InputError(f"{name}: line {n}: not a record (a JSON object with a kind)")
        if obj["kind"] == "run":
            run = obj
            continue
        if run is None:
            break  # records before any run line: not a stream
        check(obj, f"{name}: line {n}")
        folder.add(obj)
    if run is None:
        raise InputError(f"{name}: not a trainscope result: neither a JSON document nor a stream starting with its run line")
    records, made = folder.finish()
    about = {k: v for k, v in run.items() if k not in ("kind", "schema")}
    return {"schema": run.get("schema"), "run": about, "records": records}, folder.streamed, made


def _stats(samples: list[float]) -> Record:
    """bench/results/stats.cpp's summary: min, median, mean, p95 (linear interpolation), max, sample stdev, cv, n."""
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


def train_from_progress(about: Record, steps: list[Step]) -> Record:
    """The train record of a run described by `about` (its first step's `train`) that streamed `steps` and never wrote
    its own: as bench/train/train_record.cpp writes one that stopped part-way (process 0's steps, no rank figures)."""
    rec: Record = copy.deepcopy(about)
    float16 = steps[0].loss_scale is not None
    curve = []
    for p in steps:
        point: Record = {"step": p.train_step, "loss": p.loss, "lr": p.lr, "grad_norm": p.grad_norm}
        if float16:
            point.update(loss_scale=p.loss_scale, skipped=p.skipped)
        curve.append(point)
    timed = [p for p in steps if p.timed]
    last = steps[-1].train_step
    rec.update(loss_curve=curve, steps_done=len(curve), timed_steps=len(timed), completed=False,
               loss={"initial": curve[0]["loss"], "final": curve[-1]["loss"]},
               error=f"the run stopped after train step {last} without writing its train record (killed, hung or "
                     f"crashed): its {len(curve)} step(s) are read from the stream")
    if float16:
        rec["skipped_steps"] = sum(1 for p in curve if p["skipped"])
    for gone in ("step_time_us", "step_samples_us", "phases_us", "throughput_per_s", "tflops", "tflops_per_device", "mfu"):
        rec.pop(gone, None)
    if timed:
        samples = [p.step_us for p in timed]
        rec["step_time_us"] = _stats(samples)
        rec["step_samples_us"] = samples
        rec["phases_us"] = {ph: _stats([p.phases_us[i] for p in timed]) for i, ph in enumerate(PHASES)}
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


class Folder:
    """A stream's records as they come, with every training run's progress folded: dropped where the run's train record
    follows, made into that record where it never came. A step keeps only what its train record is made of (Step)."""

    def __init__(self) -> None:
        self.out: list[Any] = []
        self.about: Record | None = None  # the open run's description (its first step's `train`)
        self.steps: list[Step] = []  # the open run's steps
        self.at = -1  # where the open run's record goes: where its first step was
        self.made = 0
        self.streamed = 0  # records added, steps included

    def _close(self) -> None:
        if self.about is not None:
            self.out[self.at] = train_from_progress(self.about, self.steps)
            self.made += 1
        self.about, self.steps = None, []

    def add(self, rec: Record) -> None:
        self.streamed += 1
        kind = rec.get("kind")
        if kind == "train_progress":
            if "train" in rec:  # a run's first step
                self._close()
                self.about, self.steps, self.at = rec["train"], [Step.of(rec)], len(self.out)
                self.out.append(None)  # its place
            elif self.about is not None:
                self.steps.append(Step.of(rec))
            return  # a step whose run's description is not in the stream cannot be placed: left out
        if kind == "train" and self.about is not None:
            if _same_run(self.about, rec):
                self.about, self.steps = None, []
                del self.out[self.at]
            else:
                self._close()
        self.out.append(rec)

    def finish(self) -> tuple[list[Record], int]:
        """The records, and how many train records were made."""
        self._close()
        return [r for r in self.out if r is not None], self.made


def fold_training(records: list[Record]) -> tuple[list[Record], int]:
    """The records with every run's progress folded (Folder). Also returns how many train records were made."""
    folder = Folder()
    for rec in records:
        folder.add(rec)
    return folder.finish()
