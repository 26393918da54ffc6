"""Report sections. Each module here defines SECTION (an object with `key`, `title`, `order`,
`applies(results)` and `build(results, plots)` returning blocks); a new layer adds its section by adding
one file. A section is shown only when it applies to the results.

Blocks are plain data, escaped by the template:
  {"kind": "text", "text": ...}
  {"kind": "alert", "text": ...}
  {"kind": "table", "caption": ..., "columns": [...], "rows": [[...], ...]}
  {"kind": "plot", "file": ..., "title": ..., "alt": ..., "png_b64": ...}   (from PlotSink.save)
"""
import importlib
import pkgutil
from typing import Protocol, TypedDict

from ...common.json_types import Block
from ...common.load import Result
from ..plots import PlotSink


class Section(Protocol):
    key: str
    title: str
    order: int  # where the section stands on the page, lowest first

    def applies(self, results: list[Result]) -> bool:
        ...

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        ...


class BuiltSection(TypedDict):
    """A section as the page template and summary.md read it."""
    key: str
    title: str
    blocks: list[Block]


def all_sections() -> list[Section]:
    found: list[Section] = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        section = getattr(module, "SECTION", None)
        if section is not None:
            found.append(section)
    return sorted(found, key=lambda s: s.order)
