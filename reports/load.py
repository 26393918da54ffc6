"""Loading result documents: read, parse, validate against the schema, and name what is wrong. A result is a
document (<out>.json) or the stream of one (<out>.jsonl, reports/stream.py), a crashed run's included: such a
result is marked incomplete, and every tool that reads it says so."""
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
from .stream import document_from_stream, fold_training

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


def record_field_accepts(kind: str, path: tuple[str, ...], value: Any) -> bool:
    """Whether a record of `kind` may hold `value` at `path` (a field, or a field of a nested object): a
    value no result can hold (a misspelt test name) is a typo in whatever selects records by it."""
    schema = _schema()
    field: JsonObject = schema["$defs"][kind]
    for key in path:
        field = field.get("properties", {}).get(key, {})
    return jsonschema.Draft202012Validator({"$defs": schema["$defs"], **field}).is_valid(value)


_VALIDATOR: jsonschema.Draft202012Validator | None = None
# The trace formats this version reads, by the name a file gives in trainscope.format (v1 files give none).
TRACE_FORMATS = ("trace-v1", "trace-v2")


def trace_schema_path(fmt: str) -> Path:
    return Path(__file__).resolve().parent / "schema" / f"{fmt}.schema.json"


@functools.cache
def _trace_validator(fmt: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(trace_schema_path(fmt).read_text()))


def trace_format(document: Any, name: str = "trace") -> str:
    """The format a trainscope trace file says it is in: trainscope.format, or trace-v1 where it says none."""
    about = document.get("trainscope") if isinstance(document, dict) else None
    fmt = about.get("format", TRACE_FORMATS[0]) if isinstance(about, dict) else TRACE_FORMATS[0]
    if fmt not in TRACE_FORMATS:
        raise InputError(f"{name}: trainscope.format {json.dumps(fmt)[:80]} is not a trace format this version reads "
                         f"({', '.join(TRACE_FORMATS)})")
    return str(fmt)


def validate(document: Any, name: str = "document") -> None:
    """Raises InputError naming the first field that does not match the schema."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = _validator()
    _first_error(_VALIDATOR, document, name)


def validate_trace(document: Any, name: str = "trace") -> None:
    """A trace file against the schema of its format, reports/schema/trace-v<N>.schema.json (a negative duration,
    a missing rank)."""
    _first_error(_trace_validator(trace_format(document, name)), document, name)


def validate_trace_events(events: Any, name: str) -> None:
    """Chrome trace events as any tool writes them (PyTorch's profiler): the event rules of trace-v1's schema."""
    _first_error(_event_validator(), events, name)


@functools.cache
def _event_validator() -> jsonschema.Draft202012Validator:
    v1 = json.loads(trace_schema_path(TRACE_FORMATS[0]).read_text())
    return jsonschema.Draft202012Validator({"$defs": v1["$defs"], "type": "array", "items": {"$ref": "#/$defs/event"}})


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
    incomplete: str = ""  # why the result is incomplete (the run did not finish), or "" when it is whole

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


def parse_result(text: str, name: str) -> ResultDoc:
    """A document, or the stream of one: a stream's lines after the first are what json.loads calls extra data."""
    try:
        doc = loads_strict(text)
    except json.JSONDecodeError as e:
        if e.msg != "Extra data":
            raise InputError(f"{name}: not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
        return document_from_stream(text, name)
    except ValueError as e:
        raise InputError(f"{name}: not JSON: {e}") from None
    if isinstance(doc, dict) and doc.get("kind") == "run":  # a stream of one line: the run started, nothing measured
        return document_from_stream(text, name)
    return doc


def _incomplete(doc: ResultDoc, made: int) -> str:
    if doc["run"]["ended_at"] is not None:
        return ""
    trains = f"; {made} training run(s) read from their steps" if made else ""
    return f"the run did not finish (killed, hung or crashed): {len(doc['records'])} record(s) streamed{trains}"


def load_result(path: str | Path, label: str | None = None) -> Result:
    p = Path(path)
    text = read_input(p)
    doc = parse_result(text, str(path))
    validate(doc, str(path))
    records, made = fold_training(doc["records"])
    return Result(path=str(path), doc=doc, label=label or default_label(doc), records=records,
                  incomplete=_incomplete(doc, made))


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
