"""Links: host memory bandwidth per host, MPI point-to-point between rank pairs (with outliers), and the GPU
tests: host<->device against the link's peak, and the GPU x GPU matrices as heatmaps. A figure above its link's peak
(ceiling_suspect) is named in an alert and marked ! in its table, as the kernels' figures above their ceilings are."""
from collections import defaultdict
from collections.abc import Callable

import matplotlib

from ...common.json_types import Block, Record
from ...common.load import Result
from ...common.sizes import size_label
from ..suspects import suspect_alert as flagged
from ..plots import SPREAD, PlotSink, error_bars, legend_beside, new_figure, rate_spread

Namer = Callable[[Result, str], str]  # a row's name: prefixed by the run's label when there are several
Variant = tuple[str, str, bool]  # engine, direction, P2P on
VARIANTS: dict[Variant, str] = {("ce", "uni", True): "copy engine, one direction",
                                ("ce", "bi", True): "copy engine, both directions",
                                ("sm", "uni", True): "SM copy kernel",
                                ("ce", "uni", False): "copy engine, P2P off"}
MPI_TESTS = ("mpi_latency", "mpi_bandwidth", "mpi_bibandwidth")
CAUSES = {
    "planted_fault": "a planted fault (TRAINSCOPE_FAULT=ceiling) scaled the link peaks down",
    "cache_residency": ("both ranks on one host, whose last-level cache holds the pair's reused buffers: "
                        "the copies ran from cache"),
    "unexplained": "no cause found",
}


def _suspect(x: Record | None) -> str:
    """The mark of a figure above its link's peak."""
    return " !" if x and x.get("ceiling_suspect") else ""


def suspect_alert(results: list[Result], many: bool) -> Block | None:
    """One alert naming the link records above their link's peak, grouped by likely cause; None without any."""
    return flagged(results, "link", many,
                   lambda x: f"{x['test']} {x['src']} -> {x['dst']} ({_num(x['bandwidth_gbps'])} GB/s)", CAUSES,
                   "link figure(s) above their link's peak (ceiling_suspect, marked ! in the tables; more than the "
                   "link can do, so something else was measured)")


def _pct(f: float | None) -> str:
    return "-" if f is None else f"{100 * f:.0f}%"


def _num(v: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def _gpu_index(device: str) -> int:
    """2 from "cuda:2"."""
    return int(device.split(":")[1])


def _variant(x: Record) -> Variant:
    return (x["engine"], x["direction"], x["p2p"] is not False)


def _matrices(host: str | None, recs: list[Record], plots: PlotSink, plot_name: str) -> Block | None:
    """One heatmap per variant measured on the host: bandwidth from the row's GPU to the column's."""
    gpus = sorted({_gpu_index(x["src"]) for x in recs} | {_gpu_index(x["dst"]) for x in recs})
    present = [v for v in VARIANTS if any(_variant(x) == v for x in recs)]
    if not present:
        return None
    fig, axes = new_figure(ncols=len(present), width=3.6, height=3.3)
    for ax, v in zip(axes, present):
        grid = [[float("nan")] * len(gpus) for _ in gpus]
        for x in recs:
            if _variant(x) == v:
                grid[gpus.index(_gpu_index(x["src"]))][gpus.index(_gpu_index(x["dst"]))] = x["bandwidth_gbps"]
        cmap = matplotlib.colormaps["viridis"].copy()
        cmap.set_bad("#e8e8e8")  # pairs with no figure: no access, or not measured
        im = ax.imshow(grid, cmap=cmap)
        ax.set_xticks(range(len(gpus)), [f"GPU{g}" for g in gpus])
        ax.set_yticks(range(len(gpus)), [f"GPU{g}" for g in gpus])
        for i in range(len(gpus)):
            for j in range(len(gpus)):
                missing = grid[i][j] != grid[i][j]
                ax.text(j, i, "N/A" if missing else f"{grid[i][j]:.0f}", ha="center", va="center",
                        color="#555555" if missing else "white", fontsize=7)
        ax.set_title(VARIANTS[v], fontsize=8)
        ax.grid(False)
        fig.colorbar(im, ax=ax, shrink=0.7, label="GB/s")
    return plots.save(fig, plot_name, f"GPU x GPU bandwidth on {host}",
                      f"GPU pair bandwidth matrices on {host} (row: source, column: destination)")


class LinksSection:
    key = "links"
    title = "Links"
    order = 15

    def applies(self, results: list[Result]) -> bool:
        return any(r.records_of("link") for r in results)

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        blocks: list[Block] = []
        many = len(results) > 1
        name: Namer = (lambda r, s: f"{r.label}: {s}") if many else (lambda r, s: s)
        failed = [(r, x) for r in results for x in r.records_of("link") if not x["check"]["passed"]]
        if failed:
            blocks.append({"kind": "alert", "text": f"{len(failed)} link test(s) failed their payload check: "
                           + "; ".join(f"{r.label}: {x['test']} {x['src']} -> {x['dst']} ({x['check']['wrong']} wrong)"
                                       for r, x in failed[:10])})
        alert = suspect_alert(results, many)
        if alert:
            blocks.append(alert)
        blocks += self._memory(results, plots, name)
        blocks += self._mpi(results, plots, name)
        blocks += self._gpu(results, plots, name)
        return blocks

    def _memory(self, results: list[Result], plots: PlotSink, name: Namer) -> list[Block]:
        rows = []
        bars: defaultdict[str, dict[str, Record]] = defaultdict(dict)
        for r in results:
            per_host: defaultdict[str, dict[str, Record]] = defaultdict(dict)
            for x in r.records_of("link"):
                if x["test"].startswith("host_memory_"):
                    per_host[x["host"]][x["test"][len("host_memory_"):]] = x
            for host, k in per_host.items():
                any_rec = next(iter(k.values()))
                rows.append([name(r, host), any_rec["processes"], any_rec["threads_per_process"],
                             size_label(any_rec["array_bytes"]),
                             _num(k.get("copy", {}).get("bandwidth_gbps")), _num(k.get("triad", {}).get("bandwidth_gbps"))])
                for kernel, x in k.items():
                    bars[name(r, host)][kernel] = x
        if not rows:
            return []
        fig, (ax,) = new_figure(width=max(4.0, 1.2 * len(bars) + 2), height=3.2)
        labels = list(bars)
        for i, kernel in enumerate(("copy", "triad")):
            measured = [(j, bars[label][kernel]) for j, label in enumerate(labels) if kernel in bars[label]]
            values = [x["bandwidth_gbps"] for _, x in measured]
            ax.bar([j + 0.4 * i for j, _ in measured], values, width=0.4, label=kernel,
                   yerr=error_bars(values, [rate_spread(x["bandwidth_gbps"], x["time_us"]) for _, x in measured]),
                   error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.set_xticks([j + 0.2 for j in range(len(labels))])
        ax.set_xticklabels(labels, rotation=20, ha="right")
        ax.set_ylabel("GB/s")
        ax.set_title(f"host memory bandwidth (STREAM-like, every process of the host at once; bars: {SPREAD})")
        legend_beside(ax)
        return [plots.save(fig, "links_host_memory", "host memory", "host memory bandwidth per host, copy and triad"),
                {"kind": "table", "caption": "Host memory (STREAM-like)", "rows": rows,
                 "columns": ["host", "processes", "threads each", "array", "copy (GB/s)", "triad (GB/s)"]}]

    def _mpi(self, results: list[Result], plots: PlotSink, name: Namer) -> list[Block]:
        rows, outlier_rows = [], []
        for r in results:
            pairs: defaultdict[tuple[str, str], dict[str, Record]] = defaultdict(dict)
            for x in r.records_of("link"):
                if x["test"].startswith("mpi_"):
                    pairs[(x["src"], x["dst"])][x["test"]] = x
            flagged = {(o["src"], o["dst"], s["test"]) for s in r.records_of("link_outliers") for o in s["outliers"]}
            for s in r.records_of("link_outliers"):
                for o in s["outliers"]:
                    outlier_rows.append([name(r, s["test"]), f"{o['src']} ({o['src_host']})", f"{o['dst']} ({o['dst_host']})",
                                         s["link_type"], f"{o['value']:.3g} {s['unit']}", f"{s['median']:.3g} {s['unit']}"])
            for (src, dst), t in pairs.items():
                any_rec = next(iter(t.values()))
                mark = {test: " (outlier)" if (src, dst, test) in flagged else "" for test in MPI_TESTS}
                latency = t.get("mpi_latency", {}).get("latency_us", {}).get("median") if t.get("mpi_latency") else None
                rows.append([name(r, f"{src} ({any_rec['src_host']})"), f"{dst} ({any_rec['dst_host']})", any_rec["link"]["type"],
                             _num(latency) + mark["mpi_latency"],
                             _num(t.get("mpi_bandwidth", {}).get("bandwidth_gbps")) + mark["mpi_bandwidth"]
                             + _suspect(t.get("mpi_bandwidth")),
                             _num(t.get("mpi_bibandwidth", {}).get("bandwidth_gbps")) + mark["mpi_bibandwidth"]
                             + _suspect(t.get("mpi_bibandwidth")),
                             _pct(t.get("mpi_bandwidth", {}).get("link", {}).get("fraction_of_peak"))])
        if not rows:
            return []
        blocks: list[Block] = [{"kind": "table", "caption": "MPI point-to-point between rank pairs",
                                "columns": ["src", "dst", "link", "latency (us)", "bandwidth (GB/s)", "bidirectional (GB/s)",
                                            "of peak"],
                                "rows": rows}]
        if outlier_rows:
            blocks.append({"kind": "table",
                           "caption": "Outliers (more than the set fraction worse than the median of their link type)",
                           "columns": ["test", "src", "dst", "link", "value", "median"], "rows": outlier_rows})
        return blocks

    def _gpu(self, results: list[Result], plots: PlotSink, name: Namer) -> list[Block]:
        blocks: list[Block] = []
        hd_rows = []
        for r in results:
            for x in r.records_of("link"):
                if x["test"] in ("h2d", "d2h"):
                    hd_rows.append([name(r, x["host"]), x["test"], x["src"] if x["test"] == "d2h" else x["dst"], x["memory"],
                                    _num(x["bandwidth_gbps"], "{:.1f}"), _num(x["link"]["peak_gbps"], "{:.1f}"),
                                    _pct(x["link"]["fraction_of_peak"]) + _suspect(x)])
        if hd_rows:
            bars = [(f"{row[2]} {row[1]} {row[3]}" + (f" ({row[0]})" if len(results) > 1 else ""), float(row[4]), row[5])
                    for row in hd_rows]
            fig, (ax,) = new_figure(width=max(5.0, 0.45 * len(bars) + 2), height=3.4)
            ax.bar(range(len(bars)), [b[1] for b in bars], color="C0", label="measured")
            for i, b in enumerate(bars):
                if b[2] != "-":
                    ax.hlines(float(b[2]), i - 0.4, i + 0.4, colors="C3", label="peak" if i == 0 else None)
            ax.set_xticks(range(len(bars)), [b[0] for b in bars], rotation=45, ha="right", fontsize=7)
            ax.set_ylabel("GB/s")
            ax.set_title("host <-> device copies (red: the link's datasheet peak)")
            ax.legend(fontsize=7)
            blocks.append(plots.save(fig, "links_host_device", "host <-> device",
                                     "host to device and device to host bandwidth against the link peak"))
            blocks.append({"kind": "table", "caption": "Host <-> device copies against the link's peak",
                           "columns": ["host", "test", "GPU", "host memory", "GB/s", "peak (GB/s)", "of peak"], "rows": hd_rows})
        for n, r in enumerate(results):
            d2d = [x for x in r.records_of("link") if x["test"] in ("d2d_local", "d2d_peer")]
            # The schema leaves `host` optional: a record without one must not make sorting fail.
            for host in sorted({x.get("host") for x in d2d}, key=str):
                plot = _matrices(host, [x for x in d2d if x.get("host") == host], plots, f"links_gpu_matrix_{host}_{n}")
                if plot:
                    blocks.append(plot)
        lat_rows = [[name(r, x["host"]), x["test"], x["src"], x["dst"], _num(x["latency_us"]["median"], "{:.3f}")]
                    for r in results for x in r.records_of("link")
                    if x["test"].endswith("_latency") and not x["test"].startswith("mpi_")]
        if lat_rows:
            blocks.append({"kind": "table", "caption": "GPU latencies", "columns": ["host", "test", "src", "dst", "median (us)"],
                           "rows": lat_rows})
        return blocks


SECTION = LinksSection()
