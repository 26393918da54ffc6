#!/usr/bin/python3
"""docs/history-screenshot.png: the top of `trainscope history report`'s page, taken by headless Chromium, for a
history built from the committed runs.

    scripts/history_screenshot.py docs/history-screenshot.png [--keep DIR]

The history: COMMITS commits, each a run of ci.toml made from the five committed quiet runs of the 2-core VM
(tests/reports/data/ci-quiet-*.json, in turn: their real spread, run to run), with every all_reduce time doubled
from commit STEP_AT on (a 2x regression, so that a change point shows) and the run of commit CONTENDED_AT
saying that other processes used 88% of the CPUs (a hollow marker). `--keep DIR` keeps the history and the report.
"""
import argparse
import contextlib
import copy
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "tests" / "reports")]

from report_screenshots import FLAGS, chromium, crop  # noqa: E402  (scripts/: the report's screenshots)
from synthetic import telemetry  # noqa: E402

from reports.__main__ import main as reports_tool  # noqa: E402
from reports.compare.calibration import with_samples  # noqa: E402

COMMITS, STEP_AT, CONTENDED_AT = 12, 8, 4
WIDTH, HEIGHT, KEEP = 1400, 6000, 1900  # the window, and the page's top that the screenshot keeps (px)


def run_of(i: int) -> dict:
    doc = copy.deepcopy(json.loads((ROOT / "tests" / "reports" / "data" / f"ci-quiet-{i % 5 + 1}.json").read_text()))
    doc["run"]["label"] = f"commit {i}"
    scale = 2.0 if i >= STEP_AT else 1.0
    doc["records"] = [with_samples(r, [x * scale for x in r["samples_us"]]) if r.get("op") == "all_reduce" else r
                      for r in doc["records"]]
    if i == CONTENDED_AT:
        host = doc["run"]["hosts"][0]["hostname"]
        doc["records"] = [r for r in doc["records"] if r["kind"] != "telemetry"] + [telemetry(host=host, others=0.88)]
    return doc


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("png", type=Path)
    p.add_argument("--keep", type=Path, help="write the history and its report here (default: a temporary folder)")
    args = p.parse_args()
    args.png = args.png.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = (args.keep or Path(tmp)).resolve()
        work.mkdir(parents=True, exist_ok=True)
        with contextlib.chdir(work):  # the page names its history as given: history.sqlite, not a temporary path
            return take(work, Path(tmp), args.png)


def take(work: Path, tmp: Path, png: Path) -> int:
    """The history in `work` (the current folder), its report, and the page's top as `png`."""
    db = "history.sqlite"
    for i in range(COMMITS):
        f = work / f"run-{i:02d}.json"
        f.write_text(json.dumps(run_of(i)))
        sha = hashlib.sha1(f"commit {i}".encode()).hexdigest()  # a commit id of the usual look
        if reports_tool(["history", "add", str(f), "--commit", sha, "--branch", "main", "--db", db]) != 0:
            return 1
    out = work / "report"
    if reports_tool(["history", "report", "-o", str(out), "--db", db, "--title", "trainscope history of ci.toml"]) != 0:
        return 1
    r = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={tmp / 'profile'}", f"--window-size={WIDTH},{HEIGHT}",
                        f"--screenshot={png}", (out / "index.html").as_uri()], capture_output=True, text=True,
                       timeout=180)
    if r.returncode != 0 or not png.exists():
        sys.exit(f"history_screenshot: error: Chromium failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
    image = Image.open(png)
    image.crop((0, 0, image.width, min(image.height, KEEP))).save(png)
    crop(png)
    print(f"history_screenshot: {png} ({png.stat().st_size // 1024} KB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
