"""Loading result documents: read, parse, validate against the schema, and name what is wrong. A result is a
document (<out>.json) or the stream of one (<out>.jsonl, reports/common/stream.py), a crashed run's included: such a
result is marked incomplete, and every tool that reads it says so."""
import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import jsonschema

from .errors import InputError
from .files import decode, open_input
from .json_types import JsonObject, Record, ResultDoc
from .stream import document_from_lines, fold_training
from .strict_json import loads

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schema" / "result-v1.schema.json"


@functools.cache
def _schema() -> JsonObject:
    schema: JsonObject = json.loads(SCHEMA_PATH.read_text())
    return schema


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


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
    return Path(__file__).resolve().parents[1] / "schema" / f"{fmt}.schema.json"


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


@functools.cache
def _record_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$defs": _schema()["$defs"], "$ref": "#/$defs/record"},
                                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def validate_record(record: Any, name: str) -> None:
    """One record (a line of a stream) against the schema's record definitions."""
    _first_error(_record_validator(), record, name)


def _first_error(validator: jsonschema.Draft202012Validator, document: Any, name: str) -> None:
    errors = sorted(validator.iter_errors(document), key=lambda e: (len(list(e.absolute_path)), e.json_path))
    if errors:
        e = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(f"{name}: {e.json_path}: {_message(e)[:300]}{more}")


def _message(e: Any) -> str:
    """jsonschema's message, but for a value outside a oneOf of consts (the schema's declared choices, each with its
    facts: a collective's op) the choices, as an enum's message names them."""
    choices = e.schema.get(e.validator) if e.validator == "oneOf" else None
    if choices and all(isinstance(c, dict) and "const" in c for c in choices):
        return f"{e.instance!r} is not one of {[c['const'] for c in choices]!r}"
    return str(e.message)


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


def _incomplete(doc: ResultDoc, streamed: int, made: int) -> str:
    if doc["run"]["ended_at"] is not None:
        return ""
    trains = f"; {made} training run(s) read from their steps" if made else ""
    return f"the run did not finish (killed, hung or crashed): {streamed} record(s) streamed{trains}"


def _lines(f: BinaryIO, first: bytes, max_bytes: int, name: str) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of a stream, `first` (already read) and those left in `f`; at most max_bytes in all."""
    total = len(first)
    yield 1, first
    for n, line in enumerate(f, 2):
        total += len(line)
        if total > max_bytes:  # it grew while being read
            raise InputError(f"{name}: more than the {max_bytes} bytes an input may be")
        yield n, line


def _neither(name: str) -> InputError:
    return InputError(f"{name}: not a trainscope result: neither a JSON document nor a stream starting with its run line")


def _stream(lines: Iterable[tuple[int, bytes]], name: str) -> tuple[ResultDoc, int, int]:
    doc, streamed, made = document_from_lines(lines, name, validate_record)
    validate(doc, name)  # the run line; the records were, each as it was read
    return doc, streamed, made


def read_result(path: str | Path) -> tuple[ResultDoc, int, int]:
    """A result file's document, its records' training runs folded (stream.py), how many records it held and how many
    train records were made. A stream (its first line a run line) is read line by line, keeping only what the document
    keeps; a document is read whole. Both are validated against the schema before anything is made of them."""
    name = str(path)
    with open_input(path) as (f, max_bytes):
        first = f.readline(max_bytes + 1)
        try:
            head = loads(decode(first, name), name)
        except json.JSONDecodeError:
            head = None  # not a whole value on the first line: a document written over several (or not JSON)
        if isinstance(head, dict) and head.get("kind") == "run":
            return _stream(_lines(f, first, max_bytes, name), name)
        if head is not None:  # a document on one line, or a first line that is a whole value with more after it
            if f.read(max_bytes + 1 - len(first)).strip():
                raise _neither(name)
            doc = head
        else:
            f.seek(0)
            data = f.read(max_bytes + 1)
    if head is None:
        if len(data) > max_bytes:  # it grew while being read
            raise InputError(f"{name}: more than the {max_bytes} bytes an input may be")
        text = decode(data, name)
        del data
        try:
            doc = loads(text, name)
        except json.JSONDecodeError as e:
            if e.msg == "Extra data":  # more after one whole value: lines, but not a stream's
                raise _neither(name) from None
            raise InputError(f"{name}: not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    validate(doc, name)
    records, made = fold_training(doc["records"])
    doc["records"] = records
    return doc, len(records), made


def load_result(path: str | Path, label: str | None = None) -> Result:
    doc, streamed, made = read_result(path)
    return Result(path=str(path), doc=doc, label=label or default_label(doc), records=doc["records"],
                  incomplete=_incomplete(doc, streamed, made))


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
