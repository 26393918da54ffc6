"""`report`: the HTML page (report, its template, plots, the banner, one file per section in sections/).

Built on two wings, because the page shows what they compute: accept (the acceptance section of a bring-up run,
and host_metrics' host of a rank in the kernels section) and traces (the profile section of `report --trace`)."""

BUILT_ON: tuple[str, ...] = ("accept", "traces")  # why: above; tests/reports/test_wings.py holds every wing to its BUILT_ON
