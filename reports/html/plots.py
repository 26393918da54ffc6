"""matplotlib, headless, with one look for every plot: figures are saved as PNG beside the report and
embedded into index.html as base64 so that the report is one self-contained file."""
import base64
import contextlib
import io
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path


@contextlib.contextmanager
def _outside_the_working_folder() -> Iterator[None]:
    """matplotlib's import reads ./matplotlibrc before any other settings file: a file of whatever folder the tool was
    started in, as likely a shared results folder as the user's own. Its settings would change the plots (text.usetex
    would run LaTeX on a result's labels) and a FIFO there would block the import. So matplotlib is imported from `/`
    (only root writes there; not this package's folder, whose module names would shadow others should the import path
    hold a relative entry), and the working folder given back after, by descriptor, so that relative paths keep their
    meaning even where the folder was renamed meanwhile."""
    try:
        here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:  # no working folder to read a matplotlibrc from either
        yield
        return
    try:
        os.chdir("/")
        yield
    finally:
        os.fchdir(here)
        os.close(here)


with _outside_the_working_folder():
    import matplotlib
from matplotlib import ticker  # noqa: E402  (matplotlib must be imported first, above)
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..common.json_types import Block  # noqa: E402
from ..common.sizes import size_label  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

# text.usetex off whatever the user's own matplotlibrc says: a result's labels are never handed to LaTeX.
plt.rcParams.update({"figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3, "font.size": 9,
                     "axes.spines.top": False, "axes.spines.right": False, "text.usetex": False})


class PlotSink:
    """Saves figures under the output directory and hands back what the page embeds."""

    def __init__(self, outdir: str | Path) -> None:
        self.outdir = Path(outdir)
        self.files: list[Path] = []

    def save(self, fig: Figure, name: str, title: str, alt: str) -> Block:
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
        path = self.outdir / f"{name}.png"
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        plt.close(fig)
        data = buf.getvalue()
        path.write_bytes(data)
        self.files.append(path)
        return {"kind": "plot", "file": path.name, "title": title, "alt": alt,
                "png_b64": base64.b64encode(data).decode("ascii")}


def new_figure(ncols: int = 1, width: float = 6.4, height: float = 3.8) -> tuple[Figure, list[Axes]]:
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, list(axes[0])


SPREAD = "fastest to p95 iteration"  # what every band and error bar of the report spans (said in each plot's title)


def rate_spread(value: float, time_us: Mapping[str, float]) -> tuple[float, float]:
    """A rate computed from the median time (GB/s, FLOP/s, busbw) over the iterations' spread: its value at the p95
    time (low) and at the fastest (high), as the bands and error bars of the report draw it."""
    median, p95, fastest = time_us["median"], time_us["p95"], time_us["min"]
    return (value * median / p95 if p95 > 0 else value, value * median / fastest if fastest > 0 else value)


def error_bars(values: Sequence[float], spreads: Sequence[tuple[float, float]]) -> list[list[float]]:
    """matplotlib's asymmetric yerr/xerr: for each value the distance down to its low and up to its high."""
    return [[max(0.0, v - lo) for v, (lo, _) in zip(values, spreads)], [max(0.0, hi - v) for v, (_, hi) in zip(values, spreads)]]


def legend_beside(ax: Axes) -> None:
    """The legend right of the axes, top-aligned: never on the bars nor on the axis label below them (a legend
    under the axes at a fixed offset met the x label whenever the figure's height changed)."""
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def log2_size_axis(ax: Axes, sizes: Iterable[int]) -> None:
    ax.set_xscale("log", base=2)
    ticks = sorted(set(sizes))
    if len(ticks) > 12:
        step = max(1, len(ticks) // 10)
        ticks = ticks[::step]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks], rotation=45, ha="right")
    ax.minorticks_off()


def log_axis(ax: Axes, axis: str = "y") -> None:
    """A base-10 log axis that reads: labels at 1, 2 and 5 of each decade (matplotlib labels the decades only,
    so a curve within one or two decades had one or two tick labels)."""
    getattr(ax, f"set_{axis}scale")("log")
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_locator(ticker.LogLocator(base=10, subs="auto"))
    target.set_minor_formatter(ticker.NullFormatter())
