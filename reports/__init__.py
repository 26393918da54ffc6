"""trainscope reports: read result documents, turn them into an HTML report, compare two for regressions.

Reads only result files (docs/architecture.md "Layers": data flows one way). Run as `python3 -m reports ...`
from the repository root, or through `trainscope report` / `trainscope compare`.
"""
