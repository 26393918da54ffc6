#!/usr/bin/python3
"""Screenshots of a report, one PNG per section, taken by headless Chromium: what a reader sees of each part.

    scripts/report_screenshots.py results/report docs/report     # writes docs/report/<section>.png, status.png

Each section is shown alone (a copy of index.html whose style hides the other sections; the status banner and
the runs stay on top of each), rendered at 1400 px wide in a window tall enough for the longest section, and
cropped below its last non-white row. A URL fragment (index.html#training) is no use here: headless Chromium's
--screenshot draws the window at its top, not where the fragment scrolled.
"""
import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageChops

WIDTH, HEIGHT = 1400, 9000
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", "--disable-sync", "--hide-scrollbars", "--virtual-time-budget=5000"]
MARGIN = 16  # px of white kept below the content


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    sys.exit("report_screenshots: error: no Chromium here (Debian: apt-get install chromium)")


def crop(png: Path) -> None:
    image = Image.open(png).convert("RGB")
    box = ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()
    if box:
        image = image.crop((0, 0, image.width, min(image.height, box[3] + MARGIN)))
    image.quantize(colors=256).save(png, optimize=True)  # a page is text and flat colours: a palette keeps it sharp, 3x smaller


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("report", type=Path, help="a report directory (its index.html)")
    p.add_argument("out", type=Path, help="the directory to write <section>.png into")
    args = p.parse_args()
    try:
        html = (args.report / "index.html").read_text()
    except OSError as e:
        sys.exit(f"report_screenshots: error: {args.report}/index.html: {e.strerror}")
    sections = re.findall(r'<section id="([\w-]+)">', html)
    if not sections:
        sys.exit(f"report_screenshots: error: {args.report}/index.html has no sections")
    args.out.mkdir(parents=True, exist_ok=True)
    browser = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        for key in ["status", *sections]:
            hide = "section{display:none}" if key == "status" else f"section:not(#{key}){{display:none}} nav{{display:none}}"
            page = Path(tmp) / f"{key}.html"
            page.write_text(html.replace("</head>", f"<style>{hide}</style></head>", 1))
            png = args.out / f"{key}.png"
            try:
                r = subprocess.run([browser, *FLAGS, f"--user-data-dir={Path(tmp) / 'profile'}",
                                    f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={png}", page.as_uri()],
                                   capture_output=True, text=True, timeout=180)
            except subprocess.TimeoutExpired:
                sys.exit(f"report_screenshots: error: Chromium took over 180 s on section {key}")
            if r.returncode != 0 or not png.exists():
                last = (r.stderr.strip().splitlines() or ["no message"])[-1]
                sys.exit(f"report_screenshots: error: Chromium failed on section {key} (exit {r.returncode}): {last}")
            crop(png)
            print(f"report_screenshots: {png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
