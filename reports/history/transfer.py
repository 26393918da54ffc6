"""A history as one JSON file (reports/schema/history-v1.schema.json): what `history export` writes and `history import`
reads, to move a history between stores (a CI cache's SQLite file into the team's PostgreSQL, and back)."""
import functools
import json
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jsonschema

from ..common import identity as ids
from ..common.errors import InputError
from ..common.files import read_input
from ..common.json_types import JsonObject
from ..common.load import validate_record
from ..common.strict_json import loads
from .database import FORMAT
from .store import Run, now

VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schema" / f"history-v{VERSION}.schema.json"


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    schema: JsonObject = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


def export_text(all_runs: Iterable[Run]) -> str:
    doc = {"format": FORMAT, "version": VERSION, "exported_at": now(),
           "runs": [{**asdict(r), "records": list(r.records)} for r in all_runs]}
    return json.dumps(doc, separators=(",", ":")) + "\n"


def read_export(path: str) -> list[Run]:
    """The runs of an export file, each record checked against the result schema: a file from elsewhere is input
    like any other."""
    try:
        doc: Any = loads(read_input(path), path)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    if isinstance(doc, dict) and doc.get("format") == FORMAT and doc.get("version") != VERSION:
        raise InputError(f"{path}: history export version {doc.get('version')!r}; this trainscope reads version {VERSION}")
    errors = sorted(_validator().iter_errors(doc), key=lambda e: (len(list(e.absolute_path)), e.json_path))
    if errors:
        what = "not a trainscope history export" if not isinstance(doc, dict) or doc.get("format") != FORMAT else "invalid"
        raise InputError(f"{path}: {what}: {errors[0].json_path}: {errors[0].message[:200]}")
    out = []
    for i, r in enumerate(doc["runs"]):
        for j, record in enumerate(r["records"]):
            where = f"{path}: $.runs[{i}].records[{j}]"
            validate_record(record, where)
            if ids.identity(record) is None:
                raise InputError(f"{where}: a {record['kind']} record, which a history does not keep")
        fields: dict[str, Any] = {**r, "records": tuple(r["records"])}
        out.append(Run(**fields))
    return out
