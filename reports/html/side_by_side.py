"""Overlaid runs, one table per fact: a row per thing measured, a column per run, and each later run's change
against the first (what a reader of several runs asks first: which got faster, by how much). A section passes
its facts as {row key: {run label: value}}; rows measured by one run alone are left out (nothing to compare)."""
from collections.abc import Mapping, Sequence

from ..common.json_types import Block


def change(value: float, first: float) -> str:
    return f"{100 * (value / first - 1):+.1f}%" if first > 0 else "-"


def side_by_side(caption: str, key_columns: Sequence[str], labels: Sequence[str],
                 facts: Mapping[tuple[str, ...], Mapping[str, float]], digits: int = 2) -> Block | None:
    """The table, or None when no row has two runs. `caption` says what the values are (and their unit). A run with no
    value in any row (a result without this kind of record: a collectives sweep beside training runs) has no column, and
    the first run that has one is what the others are set against."""
    labels = [lab for lab in labels if any(lab in values for values in facts.values())]
    if len(labels) < 2:
        return None
    first = labels[0]
    rows = []
    for key, values in sorted(facts.items()):
        if sum(lab in values for lab in labels) < 2:
            continue
        row = list(key) + [f"{values[lab]:.{digits}f}" if lab in values else "-" for lab in labels]
        row += [change(values[lab], values[first]) if lab in values and first in values else "-" for lab in labels[1:]]
        rows.append(row)
    if not rows:
        return None
    return {"kind": "table", "caption": f"{caption}, the runs side by side, change against {first}",
            "columns": list(key_columns) + list(labels) + [f"{lab} vs {first}" for lab in labels[1:]], "rows": rows}
