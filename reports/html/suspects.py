"""The alert naming records flagged `ceiling_suspect` (above the ceiling or peak they are held to), grouped by their
likely cause: one shape for the kernels' section and the links' section."""
from collections.abc import Callable

from ..common.json_types import Block, Record
from ..common.load import Result


def suspect_alert(results: list[Result], kind: str, many: bool, name_of: Callable[[Record], str], causes: dict[str, str],
                  headline: str) -> Block | None:
    """One alert: `headline` (after the count), then per cause the records' names (name_of; prefixed with their
    result's label when several results are shown) and the cause in words; None without any flagged record."""
    by_cause: dict[str, list[str]] = {}
    for r in results:
        for x in r.records_of(kind):
            if x.get("ceiling_suspect"):
                name = (f"{r.label}: " if many else "") + name_of(x)
                by_cause.setdefault(x.get("ceiling_suspect_cause", "unexplained"), []).append(name)
    if not by_cause:
        return None
    count = sum(len(v) for v in by_cause.values())
    parts = [", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
             + f": likely cause: {causes.get(cause, cause)}" for cause, names in by_cause.items()]
    return {"kind": "alert", "text": f"{count} {headline}: " + "; ".join(parts)}
