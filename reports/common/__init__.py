"""What every wing of the reports tool reads: result documents in (files, the JSON policy, the schema's checks, a
run's stream), what their records mean (identity and metrics per kind, the collectives' declarations, the mesh, the
memory account, a busy machine and the limits it is judged by, a prediction beside a measured train record), the
result documents the tool writes, and text out (the terminal, Markdown, JUnit).

common imports no wing: the layering test (tests/reports/test_wings.py) fails when it does."""

BUILT_ON: tuple[str, ...] = ()
