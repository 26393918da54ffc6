"""Loading result documents: read, parse, validate against the schema, and name what is wrong."""
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from .errors import InputError

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "result-v1.schema.json"


@functools.cache
def _schema():
    return json.loads(SCHEMA_PATH.read_text())


def _validator():
    return jsonschema.Draft202012Validator(_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def collective_ops():
    """The collectives in the order of trainscope's registry (comm/collectives/registry.cpp): the schema's
    enum of a collective record's op, which a unit test there holds equal to the registry."""
    return list(_schema()["$defs"]["collective"]["properties"]["op"]["enum"])


_VALIDATOR = None


def validate(document, name="document"):
    """Raises InputError naming the first field that does not match the schema."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = _validator()
    errors = sorted(_VALIDATOR.iter_errors(document), key=lambda e: (len(list(e.absolute_path)), e.json_path))
    if errors:
        e = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(f"{name}: {e.json_path}: {e.message[:300]}{more}")


@dataclass
class Result:
    """One result document and how to name it in a report."""
    path: str
    doc: dict
    label: str = ""
    records: list = field(default_factory=list)

    @property
    def run(self):
        return self.doc["run"]

    def records_of(self, kind):
        return [r for r in self.records if r["kind"] == kind]


def default_label(doc):
    run = doc["run"]
    label = run.get("config", {}).get("label") or ""
    hosts = ",".join(h["hostname"] for h in run["hosts"]) or "?"
    date = run["started_at"][:16].replace("T", " ")
    return label or f"{hosts} {date}"


def load_result(path, label=None):
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    validate(doc, path)
    return Result(path=str(path), doc=doc, label=label or default_label(doc), records=doc["records"])


def load_results(paths, labels=None):
    labels = list(labels or [])
    if labels and len(labels) != len(paths):
        raise InputError(f"--label was given {len(labels)} time(s) for {len(paths)} result(s): give one per result, or none")
    results = [load_result(p, labels[i] if labels else None) for i, p in enumerate(paths)]
    seen = {}
    for r in results:  # two runs with the same label would be indistinguishable in the plots
        if r.label in seen:
            seen[r.label] += 1
            r.label = f"{r.label} ({seen[r.label]})"
        else:
            seen[r.label] = 1
    return results
