"""trainscope reports: read result documents, turn them into an HTML report, compare two for regressions.

Reads only result files (docs/architecture.md "Layers": data flows one way). Run as `python3 -m reports ...`
from the repository root, or through `trainscope report` / `trainscope compare`.

One wing per part of the tool, as bench/ has (docs/architecture.md, "The reports: wings too"): common/ (what every
wing reads), compare/, accept/, import_export/, traces/, html/; __main__.py dispatches each subcommand to its wing.
A wing imports common/ and itself, and another wing only where its __init__.py declares it (BUILT_ON);
tests/reports/test_wings.py holds them to that.
"""
