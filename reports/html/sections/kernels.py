"""Kernels: the roofline (arithmetic intensity against achieved FLOP/s, under the measured ceilings: the
compute one and a memory one per level of the hierarchy), each op's fraction of the ceiling that bounds it,
and the records that land above their ceiling even after it was re-measured (ceiling_suspect), which are
never shown without saying so."""
from typing import Any

from matplotlib.axes import Axes

from ...accept import host_metrics as hm
from ...common.json_types import Block, Record
from ...common.load import Result
from ..suspects import suspect_alert as flagged
from ..plots import SPREAD, PlotSink, error_bars, log_axis, new_figure, rate_spread
from ..side_by_side import side_by_side
from .telemetry import throttle_alert

LEVELS = ("l1", "l2", "l3", "dram")
LEVEL_LABELS = {"l1": "L1", "l2": "L2", "l3": "L3", "dram": "DRAM"}
# bench/kernels/roofline.cpp's suspectCauseText, shortened for the page.
CAUSES = {
    "planted_fault": "a planted fault (TRAINSCOPE_FAULT=ceiling) scaled the ceilings down",
    "busy_host": "other processes took a good share of the CPUs while the ceiling was measured",
    "cache_residency": "the data sat in a nearer cache level than the kernel's bytes chose",
    "unexplained": "no cause found (a clock change between the ceiling and the kernel?)",
    "datasheet_mismatch": "the datasheet entry or the SM clock read does not fit this GPU",
}


def measuring_hosts(result: Result) -> list[str]:
    """The hosts whose kernels and ceilings a result holds (the first process of each host measures it), when
    its records name them: several in a run across nodes."""
    return sorted({str(x["host"]) for kind in ("kernel", "kernel_ceiling") for x in result.records_of(kind) if x.get("host")})


def _of_process_0(result: Result, records: list[Record]) -> list[Record]:
    """Of a run across hosts, the records of process 0's host (the roofline drawn is one host's)."""
    if len(measuring_hosts(result)) < 2:
        return records
    host = hm.host_of_rank(result, 0)
    return [x for x in records if x.get("host") in (None, host)]


def ceilings(result: Result) -> dict[str, float]:
    """The best value of each ceiling in a result: {"compute": TFLOP/s, "l1".."dram": GB/s} (a memory ceiling
    without a level, from before the levels, is DRAM's), process 0's host's in a run across hosts. A
    re-measured ceiling counts at its best."""
    best: dict[str, float] = {}
    for c in _of_process_0(result, result.records_of("kernel_ceiling")):
        key = "compute" if c["ceiling"] == "compute" else c.get("level") or "dram"
        best[key] = max(best.get(key, 0.0), c["value"])
    return best


def suspect_alert(results: list[Result], many: bool) -> Block | None:
    """One alert naming the kernel records above their ceiling, grouped by likely cause; None without any."""
    return flagged(results, "kernel", many,
                   lambda x: f"{x['op']} {x['shape_name']} ({100 * x['roofline']['fraction_of_ceiling']:.0f}%)", CAUSES,
                   "kernel record(s) above 100% of their ceiling even after it was re-measured (ceiling_suspect, "
                   "marked ! in the table; their fractions are not to be believed)")


def _draw_ceilings(ax: Axes, r: Result, recs: list[Record], color: str, many: bool) -> None:
    """One result's roofline: per memory level, the slope of its bandwidth up to the flat compute ceiling."""
    ceil = ceilings(r)
    if "compute" not in ceil or not recs:
        return
    lo = min(x["arithmetic_intensity"] for x in recs) / 4
    hi = max(x["arithmetic_intensity"] for x in recs) * 4
    for level in (lev for lev in LEVELS if lev in ceil):
        ridge = ceil["compute"] * 1e3 / ceil[level]
        xs = sorted({lo, hi, min(max(ridge, lo), hi)})
        dram = level == "dram"
        label = (f"ceilings {ceil['compute']:.3g} TFLOP/s, {LEVEL_LABELS[level]} {ceil[level]:.3g} GB/s" if dram
                 else f"{LEVEL_LABELS[level]} {ceil[level]:.3g} GB/s")
        ax.plot(xs, [min(ceil["compute"] * 1e3, x * ceil[level]) for x in xs], "-" if dram else ":", color=color,
                alpha=0.6 if dram else 0.4, label=(f"{r.label}: " if many else "") + label)


def _kernel_row(r: Result, x: Record, many: bool, hosts: bool = False) -> list[Any]:
    suspect = x.get("ceiling_suspect", False)
    roof = x["roofline"] or {}
    bound = roof.get("bound", "-")
    if bound == "memory":
        bound = f"memory ({LEVEL_LABELS.get(roof.get('memory_level', 'dram'), '?')})"
    on = f" ({x['host']})" if hosts and x.get("host") else ""  # a run across hosts: whose kernel
    return [(f"{r.label}: " if many else "") + x["op"], x["shape_name"] + on, " ".join(f"{k}={v}" for k, v in x["shape"].items()),
            x["dtype"], x["backend"], f"{x['time_us']['median']:.2f}", f"{x['tflops'] * 1e3:.2f}", f"{x['gbps']:.2f}",
            bound, (f"{100 * roof['fraction_of_ceiling']:.0f}%" + (" !" if suspect else "")) if roof else "-",
            f"{x['clock_mhz']:.0f}" if x.get("clock_mhz") is not None else "-",
            "ok" if x["check"]["passed"] else "FAILED"]


def _ceiling_row(r: Result, c: Record, many: bool, hosts: bool = False) -> list[Any]:
    others = c.get("others_cpu_fraction")
    on = f" ({c['host']})" if hosts and c.get("host") else ""
    return [(f"{r.label}: " if many else "") + c["ceiling"] + on,
            LEVEL_LABELS.get(c.get("level", ""), "-") if c["ceiling"] == "memory" else "-",
            f"{c['value']:.4g} {c['unit']}", c["source"],
            f"best of {c['trials']} after {c['warmup']} warm-up" if "trials" in c else f"best of {c['time_us']['n']}",
            f"{100 * others:.0f}%" if others is not None else "-", c.get("recheck_of", "-"),
            f"x{c['planted_fault_scale']:g} (planted)" if "planted_fault_scale" in c else "-"]


def _place_labels(ax: Axes, labels: list[tuple[bool, str, float, float]]) -> None:
    """Each point's op beside it where the label overlaps none placed before (suspect points first), so a cluster
    of shapes of one op shows one label, not a pile; the table below names every point."""
    ax.autoscale_view()
    placed: list[tuple[float, float, float, float]] = []
    for _, text, x, y in sorted(labels):
        px, py = ax.transData.transform((x, y))
        box = (px + 3, py + 2, px + 3 + 4.2 * len(text), py + 2 + 9)  # fontsize 6 at 100 dpi, with a margin
        if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
            continue
        placed.append(box)
        ax.annotate(text, (x, y), fontsize=6, xytext=(3, 2), textcoords="offset points")


class KernelsSection:
    key = "kernels"
    title = "Kernels"
    order = 18

    def applies(self, results: list[Result]) -> bool:
        return any(r.records_of("kernel") for r in results)

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        blocks: list[Block] = []
        many = len(results) > 1
        failed = [(r, x) for r in results for x in r.records_of("kernel") if not x["check"]["passed"]]
        if failed:
            blocks.append({"kind": "alert", "text": f"{len(failed)} kernel(s) failed their check against the float64 reference: "
                           + "; ".join(f"{r.label}: {x['op']} {x['shape_name']} (max rel err {x['check']['max_rel_err']})"
                                       for r, x in failed[:10])})
        suspects = suspect_alert(results, many)
        if suspects:
            blocks.append(suspects)
        throttled = throttle_alert([r for r in results if r.records_of("kernel")], "kernel TFLOP/s and roofline fractions")
        if throttled:
            blocks.append(throttled)
        fig, (ax,) = new_figure(width=7.5, height=4.6)
        rows = []
        labels: list[tuple[bool, str, float, float]] = []  # (not suspect: suspects placed first, text, x, y)
        for i, r in enumerate(results):
            color = f"C{i % 10}"
            recs = r.records_of("kernel")
            across = len(measuring_hosts(r)) > 1  # a run across hosts: each row names its host
            _draw_ceilings(ax, r, _of_process_0(r, recs), color, many)
            for x in recs:
                suspect = x.get("ceiling_suspect", False)
                ax.scatter(x["arithmetic_intensity"], x["tflops"] * 1e3, color=color, s=18, marker="x" if suspect else "o")
                gflops = x["tflops"] * 1e3
                ax.errorbar([x["arithmetic_intensity"]], [gflops], yerr=error_bars([gflops], [rate_spread(gflops, x["time_us"])]),
                            fmt="none", ecolor=color, elinewidth=0.8, capsize=2)
                labels.append((not suspect, x["op"] + (" !" if suspect else ""), x["arithmetic_intensity"], x["tflops"] * 1e3))
                rows.append(_kernel_row(r, x, many, across))
        log_axis(ax, "x")
        log_axis(ax, "y")
        _place_labels(ax, labels)
        ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
        ax.set_ylabel("achieved GFLOP/s")
        ax.set_title(f"roofline (error bars: {SPREAD})")
        ax.legend(fontsize=7)
        blocks.append(plots.save(fig, "kernels_roofline", "roofline",
                                 "each kernel's arithmetic intensity and achieved FLOP/s under the measured "
                                 "ceilings (solid: DRAM, dotted: the cache levels; x and !: above its ceiling)"))
        blocks.append({"kind": "table",
                       "caption": "Kernels against their ceiling (the memory one of the level the kernel's bytes fit), "
                                  "at the clock each was timed at (GPU SM clock or CPU frequency; - where unknown); "
                                  "! marks a record above its ceiling even after the ceiling was re-measured",
                       "columns": ["op", "shape", "dims", "dtype", "backend", "time (us)", "GFLOP/s", "GB/s", "bound",
                                   "of ceiling", "clock (MHz)", "check"],
                       "rows": rows})
        if many:
            times: dict[tuple[str, ...], dict[str, float]] = {}
            for r in results:
                for x in r.records_of("kernel"):
                    times.setdefault((x["op"], x["shape_name"], x["dtype"], x["backend"]), {})[r.label] = x["time_us"]["median"]
            table = side_by_side("Median kernel time (us)", ["op", "shape", "dtype", "backend"], [r.label for r in results],
                                 times)
            if table:
                blocks.append(table)
        ceiling_rows = [_ceiling_row(r, c, many, len(measuring_hosts(r)) > 1) for r in results
                        for c in r.records_of("kernel_ceiling")]
        if ceiling_rows:
            blocks.append({"kind": "table",
                           "caption": "The ceilings as measured (a re-measure names the record that set it off; "
                                      "the ceiling is the best of its measurements)",
                           "columns": ["ceiling", "level", "value", "source", "trials", "other processes' CPU", "re-measured for",
                                       "fault"],
                           "rows": ceiling_rows})
        return blocks


SECTION = KernelsSection()
