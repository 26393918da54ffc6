"""Names for the JSON objects the tools pass around. They stay dicts of Any on purpose: the result schema
(schema/result-v1.schema.json) and the trace writer (kernels/trace.h) define their fields, and a second
definition here as TypedDicts would drift from them; the names say which object a function expects."""
from typing import Any

JsonObject = dict[str, Any]  # one the tools build and print or write as JSON (an analysis, a critical path)
ResultDoc = dict[str, Any]   # a whole result document
Record = dict[str, Any]      # one entry of a result document's "records"
TraceDoc = dict[str, Any]    # one rank's `--trace` file
TraceEvent = dict[str, Any]  # one Chrome trace event of it
Block = dict[str, Any]       # one block of a report section (sections/__init__.py lists the kinds)


def number(v: Any) -> float | None:
    """A JSON number as a float; None for anything else (JSON's true and false are Python ints, not figures)."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
