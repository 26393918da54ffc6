"""What `compare` calls a regression and when it refuses to decide: thresholds and noise limits, with
per-kind and per-metric overrides, from a TOML file and the command line (the command line wins).

    # compare.toml — percentages, as on the command line
    threshold = 5            # a change smaller than this is no regression
    max_cv = 10              # noisier records (robust cv) cannot pass
    min_samples = 5          # per side
    confidence = 99          # of the effect's interval
    max_others_busy = 25     # % of the CPUs other processes may use before a run counts as contended
    max_load_per_cpu = 1.0   # the same from the load average, for results without that figure
    quality_threshold = 5    # a train record's loss or accuracy: relative change (a kind's threshold is for its times)
    inconclusive = "fail"    # what an inconclusive record does to the exit code: pass (0) or fail (1); unset: 3
    missing = "fail"         # a record only the baseline has: fails the gate (exit 1), or pass (the default: listed only)
    [thresholds]             # per kind, or per kind.metric
    collective = 10
    "train.step_time_us" = 3
    "train.final_loss" = 0.5
    [max_cvs]
    collective = 15
"""
import math
import tomllib
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any

from . import identity as ids
from .errors import InputError
from .files import read_input

# A policy or rules file is a page of thresholds: at most 1 MiB, as trainscope bounds its own TOML files (a suite).
TOML_MAX_BYTES = 1 << 20

PERCENT_KEYS = ("threshold", "max_cv", "confidence", "max_others_busy", "quality_threshold")

# A quality figure (a final or held-out loss, an accuracy; compare/quality.py) of a fixed seed is bit for bit the
# same on one build and machine, so any change there is the code's. Across thread counts (or machines) the same sums
# add in another order and training drifts: measured here between 1 and 2 threads, the final training loss (one
# batch's) of the tiny MLP after 200 steps moved 1.0%, the CNN's after 50 steps 0.08%, held-out losses (means over
# many samples) 2e-8. 5% leaves that drift a margin of 5x, while a training defect moves the figures by far more
# (a learning rate 100x over: the tiny MLP's final loss +73% after 30 steps).
QUALITY_THRESHOLD = 0.05


class Inconclusive(str, Enum):
    """What an inconclusive comparison does to the exit code: a CI gate's choice, stated once (README's recipe)."""
    UNDECIDED = "undecided"  # exit 3: the gate decides what "could not decide" means
    PASS = "pass"            # exit 0: only a regression beyond doubt fails (a gate on a noisy machine)
    FAIL = "fail"            # exit 1: a record that could not be shown to pass fails (a strict gate)


class Missing(str, Enum):
    """What a record the baseline has and the candidate lacks does to the exit code (a changed identity option, a
    step or a size the candidate no longer runs). Records only in the candidate are new: nothing to regress from,
    listed either way (a changed identity has its old name in the baseline, which this decides)."""
    PASS = "pass"  # exit as the compared records say; the records are listed and counted in the verdict line
    FAIL = "fail"  # exit 1: what the baseline measured, the candidate must measure (a strict gate)


@dataclass(frozen=True)
class Policy:
    threshold: float = 0.05
    max_cv: float = 0.10
    min_samples: int = 5
    confidence: float = 0.99
    max_others_busy: float = 0.25
    max_load_per_cpu: float = 1.0
    quality_threshold: float = QUALITY_THRESHOLD
    inconclusive: Inconclusive = Inconclusive.UNDECIDED
    missing: Missing = Missing.PASS
    thresholds: dict[str, float] = field(default_factory=dict)  # "kind" or "kind.metric" -> fraction
    max_cvs: dict[str, float] = field(default_factory=dict)

    def threshold_for(self, kind: str, metric: str) -> float:
        m = ids.metric(kind, metric)
        if m is not None and m.family == ids.Family.QUALITY:  # not a time: the kind's and the run's thresholds are for times
            return self.thresholds.get(f"{kind}.{metric}", self.quality_threshold)
        return _lookup(self.thresholds, kind, metric, self.threshold)

    def max_cv_for(self, kind: str, metric: str) -> float:
        return _lookup(self.max_cvs, kind, metric, self.max_cv)


# The settings that are a closed choice: their names in a file and on the command line, and their enums.
CHOICES: dict[str, type[Enum]] = {"inconclusive": Inconclusive, "missing": Missing}


def _lookup(table: dict[str, float], kind: str, metric: str, default: float) -> float:
    return table.get(f"{kind}.{metric}", table.get(kind, default))


def number(name: str, value: Any, low: float, high: float = math.inf, integer: bool = False) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{name}: {value!r} is not a finite number")
    if integer and value != int(value):
        raise InputError(f"{name}: {value!r} is not a whole number")
    if not low < value <= high:
        raise InputError(f"{name}: {value!r} is out of range (must be above {low:g}"
                         + (f" and at most {high:g})" if high < math.inf else ")"))
    return int(value) if integer else float(value)


def _check_key(name: str, key: str) -> None:
    """A per-kind key must name a compared kind, or kind.metric one of its metrics: a typo must not be ignored."""
    kind, _, metric = key.partition(".")
    if kind not in ids.compared_kinds():
        raise InputError(f"{name}: '{key}' names no compared kind ({', '.join(ids.compared_kinds())})")
    names = [m.name for m in ids.METRICS[kind]]
    if metric and metric not in names:
        raise InputError(f"{name}: '{key}': {kind} records have no metric '{metric}' ({', '.join(names)})")


def _scalar(key: str, name: str, value: Any) -> int | float:
    if key == "min_samples":
        return number(name, value, 1, integer=True)
    if key == "max_load_per_cpu":
        return number(name, value, 0)
    if key == "confidence":
        pct = number(name, value, 0, 100)
        if pct == 100:
            raise InputError(f"{name}: 100% has no interval; use e.g. 99")
        return pct / 100
    return number(name, value, 0, 100) / 100


def from_toml(path: str | Path, base: Policy | None = None) -> Policy:
    """A policy from a TOML file (percentages), over `base`."""
    return apply(base or Policy(), read_toml(path), str(path))


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML file's table; one line naming the file when it cannot be read or is not TOML."""
    text = read_input(path, TOML_MAX_BYTES)  # a regular file of bounded size, not a FIFO that would block the gate
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: not TOML: {e}") from None
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise InputError(f"{path}: not TOML this tool reads: nested deeper than Python's parser can follow") from None


def apply(policy: Policy, settings: dict[str, Any], where: str = "settings") -> Policy:
    """`settings` (scalars in percent, and the tables `thresholds` and `max_cvs`) over `policy`."""
    changes: dict[str, Any] = {}
    for key, value in settings.items():
        name = f"{where}: {key}"
        if key in ("thresholds", "max_cvs"):
            if not isinstance(value, dict):
                raise InputError(f"{name}: a table of kind or kind.metric = percent is expected")
            table = dict(getattr(policy, key))
            for k, v in value.items():
                _check_key(f"{name}.{k}", k)
                table[k] = number(f"{name}.{k}", v, 0, 100) / 100
            changes[key] = table
        elif key in CHOICES:
            choices = [c.value for c in CHOICES[key]]
            if value not in choices:
                raise InputError(f"{name}: {value!r} is not one of {', '.join(choices)}")
            changes[key] = CHOICES[key](value)
        elif key in Policy.__dataclass_fields__:
            changes[key] = _scalar(key, name, value)
        else:
            raise InputError(f"{name}: unknown setting (threshold, max_cv, min_samples, confidence, max_others_busy, "
                             "max_load_per_cpu, quality_threshold, inconclusive, missing, [thresholds], [max_cvs])")
    return replace(policy, **changes)


def parse_override(text: str, option: str) -> dict[str, float]:
    """'KIND[.METRIC]=PCT' from the command line, as a one-entry table."""
    key, sep, value = text.partition("=")
    if not sep:
        raise InputError(f"{option} {text}: expected KIND[.METRIC]=PERCENT, e.g. collective=10")
    try:
        number = float(value)
    except ValueError:
        raise InputError(f"{option} {text}: '{value}' is not a number") from None
    return {key.strip(): number}
