"""The mesh a training run laid its ranks on: its named axes in order, each {"name", "size"} (and "stride":
rank = sum of coordinate x stride). Train records and trace files carry it as "mesh", and a rank's
coordinate on an axis as "<name>_rank". Documents written before the mesh was recorded had the three
axes of the time, their sizes under their names (in the record's layout, in a trace's `about`)."""

from typing import Any

EARLIER_AXES = ("dp", "tp", "pp")


def mesh_axes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The axes of a train record or a trace's `about` entry."""
    if doc.get("mesh"):
        axes: list[dict[str, Any]] = doc["mesh"]
        return axes
    sizes = doc.get("layout") or doc
    return [{"name": name, "size": sizes.get(name, 1)} for name in EARLIER_AXES]


def coordinate(row: dict[str, Any], axis_name: str) -> int:
    """A rank's coordinate on an axis (a record's rank row, a trace's `about`): 0 where it is not stated."""
    return int(row.get(f"{axis_name}_rank", 0))


def axis_names(docs: list[dict[str, Any]]) -> list[str]:
    """The axes of several records, each once, in the order they first appear."""
    names: list[str] = []
    for doc in docs:
        names += [a["name"] for a in mesh_axes(doc) if a["name"] not in names]
    return names
