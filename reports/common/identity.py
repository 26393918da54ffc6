"""What makes two records "the same measurement", and which of their figures are compared, per kind.

The one place to edit when a new kind of record arrives (links, kernels, training): its identity keys
and its metrics with their direction, and NOT_COMPARED for a kind the history tracks that compare does not pair
(a prediction). A record that carries its run's options (a train record's `config`) adds those that
decide what it measured: the option tables declare which (option_facts.Option.identity), not a list here.
"""
from collections.abc import Hashable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from . import option_facts
from .collective_issue import NONBLOCKING, issue_of
from .json_types import Record

# ("collective", ("op", "all_reduce"), ("backend", "mpi"), ...): the kind, then every identity key with its value
Identity = tuple[Any, ...]


class Family(str, Enum):
    """What a metric tells: how fast the work ran, or how well a model trained (judged apart: compare/quality.py)."""
    SPEED = "speed"
    QUALITY = "quality"


Path = tuple[str | int, ...]  # keys, and list indices (-1: the last point)


@dataclass(frozen=True)
class Metric:
    name: str                 # the record field
    path: Path                # where the compared number is, e.g. ("time_us", "median")
    lower_is_better: bool
    samples: str = ""         # the record field with the samples behind it, for the effect and its interval (effect.py)
    decides: bool = True      # counts for the verdict (derived figures are shown, not counted twice)
    unit: str = ""
    family: Family = Family.SPEED
    at: Path = ()             # quality: the step the figure was taken at, which both sides must share
    label: str = ""           # quality: what the figure is, in words (report tables)


IDENTITY = {
    "collective": ("op", "backend", "dtype", "redop", "root", "ranks", "processes", "bytes", "in_place", "graph",
                   "transport", "algo", "proto", "issue", "alltoallv_counts"),
    "link": ("test", "src", "dst", "engine", "direction", "bytes", "host", "src_host", "dst_host", "memory", "p2p"),
    "kernel": ("op", "shape_name", "shape", "dtype", "backend"),
    "train": ("model", "preset", "backend", "precision", "world_size", "items_per_step", "flops_per_step", "layout",
              "transport"),
    # A prediction (`predict train --json`) is the same as another when it is of the same job (the keys a measured train
    # record is paired with it by, predicted_vs_measured.Job), with the same step (batch and its micro-batches), on the
    # same fabric (the collectives series fitted) and replayed the same way (progress: how a collective moves beside
    # compute, a choice of the model that changes its answer by design). What it was predicted from is left out: the
    # calibration and the measured run are new files at every commit, and what they change is what the series tracks
    # (a calibration of a cluster that changed, a model whose error grew).
    "train_prediction": ("model", "preset", "backend", "precision", "layout", "ranks", "batch", "micro_batch",
                         "micro_batches", "transport", "progress"),
}

# Kinds the history tracks across commits that compare does not pair. A prediction is one figure computed, not a
# measurement with samples: compare would call every pair of them inconclusive (too few samples) and so turn the gate
# of two runs that each carry their prediction inconclusive. compare reads a prediction beside the train row of its
# job instead (predicted_vs_measured.py), deciding nothing. Their metrics decide all the same: the history keeps a
# series of each metric that decides (history/store.py).
NOT_COMPARED = frozenset({"train_prediction"})

# The kinds whose records carry their run's options as `config`, with the subcommand whose table describes them.
OPTIONS_OF = {"train": "train"}

METRICS = {
    "kernel": (
        Metric("time_us", ("time_us", "median"), lower_is_better=True, samples="samples_us", unit="us"),
        Metric("tflops", ("tflops",), lower_is_better=False, decides=False, unit="TFLOP/s"),
    ),
    "link": (
        Metric("time_us", ("time_us", "median"), lower_is_better=True, samples="samples_us", unit="us"),
    ),
    "train": (
        Metric("step_time_us", ("step_time_us", "median"), lower_is_better=True, samples="step_samples_us", unit="us"),
        Metric("throughput_per_s", ("throughput_per_s",), lower_is_better=False, decides=False, unit="items/s"),
        # Quality is a verdict of its own: a step time that holds while the loss got worse is no pass.
        Metric("final_loss", ("loss", "final"), lower_is_better=True, family=Family.QUALITY,
               at=("loss_curve", -1, "step"), label="final training loss"),
        Metric("eval_loss", ("eval", "points", -1, "loss"), lower_is_better=True, family=Family.QUALITY,
               at=("eval", "points", -1, "step"), label="held-out loss"),
        Metric("eval_accuracy", ("eval", "points", -1, "accuracy"), lower_is_better=False, family=Family.QUALITY,
               at=("eval", "points", -1, "step"), label="held-out accuracy"),
    ),
    "collective": (
        Metric("time_us", ("time_us", "median"), lower_is_better=True, samples="samples_us", unit="us"),
        Metric("busbw_gbps", ("busbw_gbps",), lower_is_better=False, decides=False, unit="GB/s"),
    ),
    "train_prediction": (
        # The predicted step: it moves when the calibration's costs or the model's code moved.
        Metric("step_us", ("step_us",), lower_is_better=True, unit="us"),
        # How far the measured step lay from it, either way (|predicted - measured| / measured; only a prediction made
        # with --measured has one): a jump is a cluster that changed under the model (a slow link, a straggler) or a
        # model that got worse. Its change is read as a ratio, as every series' is (history/detect.py).
        Metric("abs_error", ("measured", "abs_error"), lower_is_better=True),
    ),
}


def identity(record: Record) -> Identity | None:
    """The record's identity as a hashable tuple, or None for kinds that are not compared."""
    keys = IDENTITY.get(record["kind"])
    if keys is None:
        return None
    ident = (record["kind"],) + tuple((k, _hashable(_field(record, k))) for k in keys)
    subcommand = OPTIONS_OF.get(record["kind"])
    return ident if subcommand is None else ident + _options(record, subcommand)


def compared_identity(record: Record) -> Identity | None:
    """The record's identity where compare pairs records of its kind (NOT_COMPARED), else None."""
    return None if record["kind"] in NOT_COMPARED else identity(record)


def compared_kinds() -> list[str]:
    return sorted(k for k in METRICS if k not in NOT_COMPARED)


def _field(record: Record, key: str) -> Any:
    """The record's value of an identity field; a collective's `issue` as collective_issue reads it (a record written
    before the field was a blocking call, and pairs with today's blocking records)."""
    if key == "issue" and record["kind"] == "collective":
        return issue_of(record)
    return record.get(key)


def _options(record: Record, subcommand: str) -> Identity:
    """The record's config version and its identity options' values. A config of another version (or of a record that
    states none) is not read: such records pair by their own fields, with those of their version only. An option the
    config lacks counts at its default: a record written before the option existed ran as its default runs (an option
    added keeps the old behaviour as its default; changing what a form means bumps the version), so that a history's
    series goes on across the commit that added it instead of starting again."""
    version = ("config_version", record.get("config_version"))
    config = option_facts.described_config(record)
    if config is None:
        return (version,)
    return (version, ("options", tuple((o.key, _hashable(config.get(o.key, o.default)))
                                       for o in option_facts.options(subcommand) if o.identity)))


def describe(ident: Identity) -> str:
    """'all_reduce mpi float32 sum 1048576 B 2 ranks out-of-place' from an identity tuple."""
    d = dict(ident[1:])
    if ident[0] == "collective":
        parts = [d["op"], d["backend"], d["dtype"]]
        if d.get("redop"):
            parts.append(d["redop"])
        if d.get("root") is not None:
            parts.append(f"root {d['root']}")
        parts += [f"{d['bytes']} B", f"{d['ranks']} ranks", "in-place" if d["in_place"] else "out-of-place"]
        if d.get("graph"):
            parts.append(f"graph {d['graph']}")
        parts += [d[k] for k in ("transport", "algo", "proto") if d.get(k)]
        parts += [d["issue"]] if d.get("issue") == NONBLOCKING else []
        counts = dict(d["alltoallv_counts"]) if d.get("alltoallv_counts") else None  # alltoallv: its per-pair counts
        parts += [f"counts {counts.get('file') or counts['pattern']}"] if counts else []
        return " ".join(str(p) for p in parts)
    if ident[0] == "kernel":
        dims = " ".join(f"{k}={v}" for k, v in d["shape"])
        return f"{d['op']} {d['shape_name']} ({dims}) {d['dtype']} {d['backend']}"
    if ident[0] == "train":
        layout = dict(d["layout"]).get("name") if d.get("layout") else None
        return (f"train {d['model']} {d['preset']} {d['backend']} {d['precision']} {d['world_size']} rank(s)"
                + (f" {layout}" if layout and layout != "single" else "") + f" {d['items_per_step']} items/step"
                + (f" over {d['transport']}" if d.get("transport") else "")
                + _options_set(d.get("options"), "train"))
    if ident[0] == "train_prediction":
        return (f"predict train {d['model']} {d['preset']} {d['backend']} {d['precision']} {d['ranks']} rank(s) {d['layout']}"
                f" batch {d['batch']}, micro-batch {d['micro_batch']} x {d['micro_batches']}"
                + (f" over {d['transport']}" if d.get("transport") else "") + f", progress {d['progress']}")
    if ident[0] == "link":
        where = d.get("host") or f"{d.get('src_host')}->{d.get('dst_host')}"
        extra = [x for x in (d.get("memory"), "p2p off" if d.get("p2p") is False else None) if x]
        parts = [d["test"], d["src"], "->", d["dst"], d["engine"], d["direction"], f"{d['bytes']} B", f"({where})"] + extra
        return " ".join(str(p) for p in parts)
    return " ".join(f"{k}={v}" for k, v in d.items())


def _options_set(options: tuple[tuple[str, Any], ...] | None, kind: str) -> str:
    """' optimizer=sgd lr=0.1': the identity options set to other than their defaults, which tell apart records that
    agree on the rest ('' when none is)."""
    if options is None:
        return ""
    defaults = {o.key: _hashable(o.default) for o in option_facts.options(OPTIONS_OF[kind])}
    named = set(IDENTITY[kind])  # said already, as the record's own fields
    return "".join(f" {k}={_text(v)}" for k, v in options if v != defaults.get(k) and k not in named)


def _text(v: Any) -> str:
    return ",".join(_text(x) for x in v) if isinstance(v, tuple) else str(v)


def value(record: Record, metric: Metric) -> float:
    v: Any = record
    for k in metric.path:
        v = v[k]
    return v


def find(record: Record, path: Path) -> Any:
    """The value at `path`, or None where the record has none (no evaluation, an empty list, a null)."""
    v: Any = record
    for k in path:
        if isinstance(k, int) and isinstance(v, list) and -len(v) <= k < len(v):
            v = v[k]
        elif isinstance(k, str) and isinstance(v, dict) and k in v:
            v = v[k]
        else:
            return None
    return v


def metric(kind: str, name: str) -> Metric | None:
    return next((m for m in METRICS.get(kind, ()) if m.name == name), None)


def _hashable(v: Any) -> Hashable:
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v  # nested: alltoallv's weights
