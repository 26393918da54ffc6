"""Other tools' formats, in and out: `import` (nccl-tests' text and JSON, OSU's collective tests, under a
launcher's line prefixes) as a result document; `export` (CSV, OpenMetrics) of result documents."""

BUILT_ON: tuple[str, ...] = ()
