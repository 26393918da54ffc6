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


def all_sections():
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        section = getattr(module, "SECTION", None)
        if section is not None:
            found.append(section)
    return sorted(found, key=lambda s: s.order)
