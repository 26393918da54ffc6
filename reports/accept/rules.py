"""Node acceptance rules (issue #22): a TOML file of thresholds per metric, each judged per host (accept.py).

    [[rule]]
    name = "host memory bandwidth"                # unique; names the rule in the verdicts
    metric = "link.bandwidth_gbps"                # KIND.METRIC, one of host_metrics.METRICS
    where = { test = "host_memory_triad" }        # optional: the records it reads (a value, or a list of values)
    min_fraction_of_median = 0.8                  # of the fleet's median over hosts
    min_fraction_of_peak = 0.6                    # of the peak the record carries (datasheet link peak, roofline)
    min_fraction_of_reference = 0.85              # of the same measurement in the reference (accept --reference)
    min = 5.0                                     # an absolute floor, in the metric's unit
    quantile = 0.5                                # optional: judge the host's records together (below)

A metric where lower is better (a latency, a step time) takes `max`, `max_fraction_of_median` and
`max_fraction_of_reference` instead.

Without `quantile`, each measurement the rule selects (a GEMM shape, a message size) is judged on its own and
the host fails when any fails. With `quantile = q` (above 0, at most 0.5), each limit is judged once per host
on the q-quantile of its measurements' figures counted from the worst: 0.5 the median, 0.25 the quartile on
the slow side; one slow shape of 19 then says nothing, most shapes slow fail.
Every name, key, value and number is checked here: a typo must not make a rule that never fails.
"""
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from . import host_metrics as hm
from ..common.errors import InputError
from ..common.load import Result, record_field_accepts
from ..common.policy import number, read_toml

SUITES_DIRS = (Path(__file__).resolve().parents[2] / "suites",           # installed: share/trainscope/suites
               Path(__file__).resolve().parents[2] / "bench" / "suites")  # the source tree
RULES_DIR = "rules"  # the default rules of a shipped suite: <suites>/rules/<suite name>.toml


class Limit(str, Enum):
    MIN = "min"
    MAX = "max"
    MIN_FRACTION_OF_MEDIAN = "min_fraction_of_median"
    MAX_FRACTION_OF_MEDIAN = "max_fraction_of_median"
    MIN_FRACTION_OF_PEAK = "min_fraction_of_peak"
    MIN_FRACTION_OF_REFERENCE = "min_fraction_of_reference"
    MAX_FRACTION_OF_REFERENCE = "max_fraction_of_reference"


# Which limits a metric takes by its direction: a floor under a latency would pass every slow host.
LIMITS = {hm.Better.HIGHER: (Limit.MIN, Limit.MIN_FRACTION_OF_MEDIAN, Limit.MIN_FRACTION_OF_PEAK,
                             Limit.MIN_FRACTION_OF_REFERENCE),
          hm.Better.LOWER: (Limit.MAX, Limit.MAX_FRACTION_OF_MEDIAN, Limit.MAX_FRACTION_OF_REFERENCE)}
LOW = (Limit.MIN, Limit.MIN_FRACTION_OF_MEDIAN, Limit.MIN_FRACTION_OF_PEAK, Limit.MIN_FRACTION_OF_REFERENCE)  # floors
# (exclusive low, inclusive high) of each limit: a fraction of a floor above 1 would fail every host.
RANGES = {Limit.MIN: (0.0, float("inf")), Limit.MAX: (0.0, float("inf")), Limit.MIN_FRACTION_OF_MEDIAN: (0.0, 1.0),
          Limit.MAX_FRACTION_OF_MEDIAN: (1.0, float("inf")), Limit.MIN_FRACTION_OF_PEAK: (0.0, 1.0),
          Limit.MIN_FRACTION_OF_REFERENCE: (0.0, 1.0), Limit.MAX_FRACTION_OF_REFERENCE: (1.0, float("inf"))}
QUANTILE = "quantile"
RULE_KEYS = ("name", "metric", "where", QUANTILE) + tuple(lim.value for lim in Limit)
Scalar = str | int | float | bool


@dataclass(frozen=True)
class Rule:
    name: str
    metric: hm.HostMetric
    where: dict[str, tuple[Scalar, ...]] = field(default_factory=dict)
    limits: dict[Limit, float] = field(default_factory=dict)
    quantile: float | None = None  # None: each measurement on its own; q: the host's q-quantile from the worst

    def selects(self, record: dict[str, Any]) -> bool:
        return (record["kind"] == self.metric.kind
                and all(hm.selector_value(record, k) in allowed for k, allowed in self.where.items()))


@dataclass(frozen=True)
class Rules:
    path: str
    rules: list[Rule]
    why: str = ""  # how the file was chosen, when it was not given ("the default of suite quick")


def _string(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200 or not value.isprintable():
        raise InputError(f"{name}: {value!r} is not a name (printable text, 1 to 200 characters)")
    return value


def _where(name: str, metric: hm.HostMetric, table: Any) -> dict[str, tuple[Scalar, ...]]:
    if not isinstance(table, dict):
        raise InputError(f"{name}: a table of field = value (or [values]) is expected")
    out = {}
    for key, value in table.items():
        allowed = hm.SELECTORS[metric.kind] + ("step",)
        if key not in allowed:
            raise InputError(f"{name}.{key}: {metric.kind} records are not selected by '{key}' ({', '.join(allowed)})")
        values = value if isinstance(value, list) else [value]
        path = ("link", "type") if key == "link_type" else (key,)
        if not values:
            raise InputError(f"{name}.{key}: an empty list selects nothing")
        for v in values:
            if isinstance(v, (dict, list)) or not record_field_accepts(metric.kind, path, v):
                raise InputError(f"{name}.{key}: {v!r} is not a value a {metric.kind} record's {key} can have")
        out[key] = tuple(values)
    return out


def _rule(where: str, table: Any) -> Rule:
    if not isinstance(table, dict):
        raise InputError(f"{where}: a [[rule]] table is expected")
    for key in table:
        if key not in RULE_KEYS:
            raise InputError(f"{where}: unknown key '{key}' ({', '.join(RULE_KEYS)})")
    for key in ("name", "metric"):
        if key not in table:
            raise InputError(f"{where}: no '{key}'")
    name = _string(f"{where}.name", table["name"])
    where = f"{where} ('{name}')"
    metric_name = _string(f"{where}.metric", table["metric"])
    metric = hm.METRICS.get(metric_name)
    if metric is None:
        raise InputError(f"{where}.metric: no metric '{metric_name}' (there are: {', '.join(hm.METRICS)})")
    limits = {}
    for lim in Limit:
        if lim.value not in table:
            continue
        takes = [x for x in LIMITS[metric.better] if x != Limit.MIN_FRACTION_OF_PEAK or metric.peak]
        if lim not in LIMITS[metric.better]:
            raise InputError(f"{where}.{lim.value}: {metric_name} is better {metric.better.value}: it takes "
                             + ", ".join(x.value for x in takes))
        if lim not in takes:
            raise InputError(f"{where}.{lim.value}: {metric_name} records carry no peak")
        low, high = RANGES[lim]
        limits[lim] = float(number(f"{where}.{lim.value}", table[lim.value], low, high))
    if not limits:
        raise InputError(f"{where}: no limit ({', '.join(x.value for x in LIMITS[metric.better])})")
    quantile = float(number(f"{where}.{QUANTILE}", table[QUANTILE], 0.0, 0.5)) if QUANTILE in table else None
    return Rule(name, metric, _where(f"{where}.where", metric, table.get("where", {})), limits, quantile)


def parse(doc: dict[str, Any], path: str) -> list[Rule]:
    for key in doc:
        if key != "rule":
            raise InputError(f"{path}: unknown key '{key}' (a rules file holds [[rule]] tables)")
    tables = doc.get("rule")
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{path}: no [[rule]] table")
    rules = [_rule(f"{path}: rule {i + 1}", t) for i, t in enumerate(tables)]
    seen: set[str] = set()
    for r in rules:
        if r.name in seen:
            raise InputError(f"{path}: two rules are named '{r.name}' (the verdicts name rules by it)")
        seen.add(r.name)
    return rules


def from_toml(path: str | Path, why: str = "") -> Rules:
    return Rules(str(path), parse(read_toml(path), str(path)), why)


def _suite_name(result: Result) -> str | None:
    run = result.run
    name = run.get("config", {}).get("name") if run.get("subcommand") == "suite" else None
    # The name comes from the result: only a plain file-name stem may pick a file.
    return name if isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_-]+", name) else None


def shipped() -> list[Path]:
    """The shipped rules files, one per suite that has default rules."""
    for d in SUITES_DIRS:
        if (d / RULES_DIR).is_dir():
            return sorted((d / RULES_DIR).glob("*.toml"))
    return []


def default_for(results: list[Result]) -> Rules | None:
    """The shipped rules of the suite all `results` ran (the bring-up suites ship theirs), or None."""
    names = {_suite_name(r) for r in results}
    name = names.pop() if len(names) == 1 else None
    for f in shipped():
        if f.stem == name:
            shown = f.relative_to(Path.cwd()) if f.is_relative_to(Path.cwd()) else f  # as the user would type it
            return from_toml(shown, f"the default of suite {name}")
    return None
