"""Result documents in the formats other tools read (issue #22): CSV (one row per record, the record's
fields flattened to dotted columns) for spreadsheets and pandas, and OpenMetrics text (Prometheus's
exposition format, for a pushgateway or a textfile collector).

CSV: a header of every column any record has (`result`, `label`, `record` first: which document, its label,
the record's place in it; then the record's own fields, nested objects as `a.b.c`), one row per record; a
list is one cell holding its JSON; an absent field an empty cell. Text cells are quoted, and one that starts with
=, +, -, @, tab or carriage return gets a single quote before it, as OWASP's CSV injection guidance says, so that a
spreadsheet shows a hostile label (`=HYPERLINK(...)`) as text instead of running it; numbers are written bare, a
negative one as a number.

OpenMetrics: each numeric field of a record (nested ones flattened with `_`; lists left out) is a gauge
`trainscope_<kind>_<field>`, labelled by what identifies the record (its string and boolean fields, and the
numbers that are coordinates rather than measurements: bytes, count, root, ranks, processes, world_size),
the result's label and the record's place (`record`), so that no two samples share a name and labels.
The families are written whole, in order, and the text ends with `# EOF`.
"""
import csv
import io
import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from ..common.load import Result

# Numbers that say which measurement a record is, not what was measured: labels, not samples.
COORDINATES = frozenset({"bytes", "count", "root", "ranks", "processes", "world_size"})


def flatten(value: Any, prefix: str = "", sep: str = ".") -> Iterator[tuple[str, Any]]:
    """(dotted key, leaf) for every leaf of a JSON value; a list is a leaf."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from flatten(v, f"{prefix}{sep}{k}" if prefix else str(k), sep)
    else:
        yield prefix, value


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, dict)):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, float):
        return repr(v)
    return str(v)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP, CSV Injection


def _csv_cell(v: Any) -> str | int | float | None:
    """A number as itself (written bare), anything else as its text, made inert where a spreadsheet would read a formula."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if v is None:
        return None
    text = _cell(v)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def to_csv(results: Sequence[Result]) -> str:
    rows: list[dict[str, str | int | float | None]] = []
    columns: dict[str, None] = {"result": None, "label": None, "record": None}
    for r in results:
        for i, rec in enumerate(r.doc["records"]):
            row: dict[str, str | int | float | None] = {"result": _csv_cell(r.path), "label": _csv_cell(r.label), "record": i}
            for k, v in flatten(rec):
                row[k] = _csv_cell(v)
                columns.setdefault(k, None)
            rows.append(row)
    out = io.StringIO()
    # Every text cell quoted, numbers bare; an absent value is an empty field.
    w = csv.DictWriter(out, fieldnames=list(columns), restval=None, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def metric_name(kind: str, field: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_]", "_", f"trainscope_{kind}_{field}")
    return re.sub(r"_+", "_", name)


def _label_value(v: Any) -> str:
    text = _cell(v)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def to_openmetrics(results: Sequence[Result]) -> str:
    families: dict[str, list[str]] = {}
    for r in results:
        for i, rec in enumerate(r.doc["records"]):
            kind = str(rec.get("kind", "record"))
            labels = {"result": r.label, "record": str(i)}
            for k, v in rec.items():
                if k == "kind":
                    continue
                if isinstance(v, (str, bool)) or (k in COORDINATES and isinstance(v, int)):
                    labels[re.sub(r"[^a-zA-Z0-9_]", "_", k)] = _cell(v)
            text = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels.items())
            for field, v in flatten(rec, sep="_"):
                if field in COORDINATES or isinstance(v, bool) or not isinstance(v, (int, float)):
                    continue
                families.setdefault(metric_name(kind, field), []).append(f"{metric_name(kind, field)}{{{text}}} {_number(v)}")
    lines = []
    for name, samples in families.items():
        lines.append(f"# TYPE {name} gauge")
        lines.extend(samples)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


FORMATS = {"csv": to_csv, "openmetrics": to_openmetrics}
