"""`history`: every run kept in a database, SQLite or PostgreSQL (database, store), each record's series across commits
(series: the interface the change-point detection reads), the console view (show), a history as one file
(transfer), the commit and branch a run is of (provenance), the command line (commands); the change points of a
series (detect), the gate on the newest commits (check), its calibration against a z-score and asv's method
(calibration, rivals); the trend pages (report)."""

# compare: a run is filed under the machine key compare's baseline directories use (compare.machine_key), and its
# spread is shown as compare's robust cv (effect.robust_cv). html: the trend pages are pages of the report's look
# (its template, plots, status banner and summary.md), not a second one.
BUILT_ON: tuple[str, ...] = ("compare", "html")
