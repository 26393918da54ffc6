"""Loading result documents: read, parse, validate against the schema, and name what is wrong."""
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from .errors import InputError
from .files import loads_strict, read_input
from .json_types import JsonObject, Record, ResultDoc

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "result-v1.schema.json"


@functools.cache
def _schema() -> JsonObject:
    schema: JsonObject = json.loads(SCHEMA_PATH.read_text())
    return schema


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def collective_ops() -> list[str]:
    """The collectives in the order of trainscope's registry (comm/collectives/registry.cpp): the schema's
    enum of a collective record's op, which a unit test there holds equal to the registry."""
    return list(_schema()["$defs"]["collective"]["properties"]["op"]["enum"])


_VALIDATOR: jsonschema.Draft202012Validator | None = None
TRACE_SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "trace-v1.schema.json"


@functools.cache
def _trace_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(TRACE_SCHEMA_PATH.read_text()))


def validate(document: Any, name: str = "document") -> None:
    """Raises InputError naming the first field that does not match the schema."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = _validator()
    _first_error(_VALIDATOR, document, name)


def validate_trace(document: Any, name: str = "trace") -> None:
    """A trace file against reports/schema/trace-v1.schema.json (a negative duration, a missing rank)."""
    _first_error(_trace_validator(), document, name)


def _first_error(validator: jsonschema.Draft202012Validator, document: Any, name: str) -> None:
    errors = sorted(validator.iter_errors(document), key=lambda e: (len(list(e.absolute_path)), e.json_path))
    if errors:
        e = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(f"{name}: {e.json_path}: {e.message[:300]}{more}")


@dataclass
class Result:
    """One result document and how to name it in a report."""
    path: str
    doc: ResultDoc
    label: str = ""
    records: list[Record] = field(default_factory=list)

    @property
    def run(self) -> JsonObject:
        return self.doc["run"]

    def records_of(self, kind: str) -> list[Record]:
        return [r for r in self.records if r["kind"] == kind]


def default_label(doc: ResultDoc) -> str:
    run = doc["run"]
    label = run.get("config", {}).get("label") or ""
    hosts = ",".join(h["hostname"] for h in run["hosts"]) or "?"
    date = run["started_at"][:16].replace("T", " ")
    return label or f"{hosts} {date}"


def load_result(path: str | Path, label: str | None = None) -> Result:
    p = Path(path)
    text = read_input(p)
    try:
        doc = loads_strict(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except ValueError as e:
        raise InputError(f"{path}: not JSON: {e}") from None
    validate(doc, str(path))
    return Result(path=str(path), doc=doc, label=label or default_label(doc), records=doc["records"])


def load_results(paths: Sequence[str], labels: Sequence[str] | None = None) -> list[Result]:
    labels = list(labels or [])
    if labels and len(labels) != len(paths):
        raise InputError(f"--label was given {len(labels)} time(s) for {len(paths)} result(s): "
                         "give one per result, or none")
    results = [load_result(p, labels[i] if labels else None) for i, p in enumerate(paths)]
    seen: dict[str, int] = {}
    for r in results:  # two runs with the same label would be indistinguishable in the plots
        if r.label in seen:
            seen[r.label] += 1
            r.label = f"{r.label} ({seen[r.label]})"
        else:
            seen[r.label] = 1
    return results
