"""Collectives: bus bandwidth against message size per op (one line per run, backend, rank count,
dtype and reduction; dashed = in place), latency of the small messages, and the peak of each series.
Records imported from another tool (importers.py) are their own series, named by the tool and drawn with
square markers and no band: one average per size has no spread to show."""
from collections import defaultdict

from ...common.collective_facts import names as collective_names
from ...common.collective_issue import NONBLOCKING
from ...common.json_types import Block, Record
from ...common.load import Result
from ...common.sizes import size_label
from ..plots import SPREAD, PlotSink, log2_size_axis, log_axis, new_figure, rate_spread
from ..side_by_side import side_by_side

SMALL = 64 * 1024  # the latency plot covers sizes up to here

# label, backend, ranks, dtype, reduction, transport/algo/proto/nonblocking/alltoallv counts, the tool of imported records
# ("" for trainscope's)
SeriesKey = tuple[str, str, int, str, str, str, str]
IMPORTED_MARKER, MARKER = "s", "o"


def _series_key(result: Result, rec: Record) -> SeriesKey:
    nonblocking = NONBLOCKING if rec.get("issue") == NONBLOCKING else None  # blocking: the calls' form by default
    counts = rec.get("alltoallv_counts")  # alltoallv: each pattern of per-pair counts its own series
    pattern = f"counts {counts.get('file') or counts['pattern']}" if counts else None
    variant = "/".join(x for x in (rec.get("transport"), rec.get("algo"), rec.get("proto"), nonblocking, pattern) if x)
    tool = rec["source"]["tool"] if rec.get("source") else ""
    return (result.label, rec["backend"], rec["ranks"], rec["dtype"], rec["redop"] or "", variant, tool)


def _series_name(key: SeriesKey, many_runs: bool) -> str:
    label, backend, ranks, dtype, redop, transport, tool = key
    parts = ([tool] if tool else []) + [backend + (f"/{transport}" if transport else ""), f"{ranks} ranks", dtype]
    parts += [redop] if redop else []
    text = (f"{label}: " if many_runs else "") + " ".join(str(p) for p in parts)
    return text.replace("$", r"\$")  # matplotlib would read $...$ in a label as math


class CollectivesSection:
    key = "collectives"
    title = "Collectives"
    order = 20

    def applies(self, results: list[Result]) -> bool:
        return any(r.records_of("collective") for r in results)

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        blocks: list[Block] = []
        failed = [(r, rec) for r in results for rec in r.records_of("collective")
                  if rec["check"]["performed"] and not rec["check"]["passed"]]
        if failed:
            blocks.append({"kind": "alert", "text": f"{len(failed)} record(s) failed their result check: "
                           + "; ".join(f"{r.label}: {rec['op']} {rec['dtype']} {size_label(rec['bytes'])} "
                                       f"{'in-place' if rec['in_place'] else 'out-of-place'} ({rec['check']['wrong']} wrong)"
                                       for r, rec in failed[:10])})
        alone = sorted({r.label for r in results for rec in r.records_of("collective") if rec["ranks"] == 1})
        if alone:  # not a problem, but no figure of theirs is a link's
            blocks.append({"kind": "text", "text": f"One rank ({', '.join(alone)}): a collective over one rank crosses no link, "
                                                   "so its busbw is 0 and its in-place figures time a call with nothing to move; "
                                                   "launch 2 or more ranks to measure links."})
        many = len(results) > 1
        by_op: defaultdict[str, defaultdict[SeriesKey, list[Record]]] = defaultdict(lambda: defaultdict(list))
        for r in results:
            for rec in r.records_of("collective"):
                by_op[rec["op"]][_series_key(r, rec)].append(rec)
        peak_rows: list[list[str]] = []
        # Overlaid runs: each (op, series, placement) once, a column per run and its change against the first.
        side: defaultdict[tuple[str, str, bool], dict[str, float]] = defaultdict(dict)
        order = collective_names()  # the registry's order; ops it does not know (none, once validated) go last
        for op in [o for o in order if o in by_op] + sorted(o for o in by_op if o not in order):
            series = by_op[op]
            fig, (bw_ax, lat_ax) = new_figure(ncols=2)
            sizes: list[int] = []
            small: list[int] = []
            for i, (key, recs) in enumerate(sorted(series.items())):
                color = f"C{i % 10}"
                for in_place, style in ((False, "-"), (True, "--")):
                    pts = sorted((rec["bytes"], rec["busbw_gbps"], rec["time_us"]["median"])
                                 for rec in recs if rec["in_place"] == in_place)
                    if not pts:
                        continue
                    imported = bool(key[6])
                    band = []
                    if not imported:
                        # The spread of the iterations: busbw at the p95 time (slow) to the fastest time (fast).
                        band = sorted((rec["bytes"], *rate_spread(rec["busbw_gbps"], rec["time_us"]), rec["time_us"]["min"],
                                       rec["time_us"]["p95"]) for rec in recs if rec["in_place"] == in_place)
                        bw_ax.fill_between([b[0] for b in band], [b[1] for b in band], [b[2] for b in band], color=color,
                                           alpha=0.15, linewidth=0)
                    name = _series_name(key, many) + (" in-place" if in_place else "")
                    marker, ms = (IMPORTED_MARKER, 4) if imported else (MARKER, 3)
                    bw_ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker=marker, ms=ms, color=color, label=name)
                    sizes += [p[0] for p in pts]
                    sp = [p for p in pts if p[0] <= SMALL]
                    if sp:
                        lat_ax.plot([p[0] for p in sp], [p[2] for p in sp], style, marker=marker, ms=ms, color=color, label=name)
                        small_band = [b for b in band if b[0] <= SMALL]
                        lat_ax.fill_between([b[0] for b in small_band], [b[3] for b in small_band], [b[4] for b in small_band],
                                            color=color, alpha=0.15, linewidth=0)
                        small += [p[0] for p in sp]
                    best = max(pts, key=lambda p: p[1])
                    side[(op, _series_name(key, False), in_place)][key[0]] = best[1]
                    peak_rows.append([op, _series_name(key, True), "in-place" if in_place else "out-of-place", f"{best[1]:.2f}",
                                      size_label(best[0]), f"{pts[0][2]:.2f}", size_label(pts[0][0])])
            bw_ax.set_title(f"{op}: bus bandwidth (bands: {SPREAD})")
            bw_ax.set_xlabel("message size (bytes)")
            bw_ax.set_ylabel("busbw (GB/s)")
            log2_size_axis(bw_ax, sizes)
            bw_ax.legend(fontsize=7)
            if small:
                lat_ax.set_title(f"{op}: latency up to {size_label(SMALL)} (bands: {SPREAD})")
                log_axis(lat_ax, "y")
                log2_size_axis(lat_ax, small)
                lat_ax.set_xlabel("message size (bytes)")
                lat_ax.set_ylabel("time (us, median of the slowest rank)")
            else:
                lat_ax.set_visible(False)
            blocks.append(plots.save(fig, f"collectives_{op}", f"{op}",
                                     f"{op}: bus bandwidth against message size, and latency of small messages"))
        blocks.append({"kind": "table", "caption": "Peak bus bandwidth per op and series",
                       "columns": ["op", "series", "placement", "peak busbw (GB/s)", "at", "smallest-size time (us)", "size"],
                       "rows": peak_rows})
        if many:
            table = side_by_side("Peak bus bandwidth (GB/s)", ["op", "series", "placement"], [r.label for r in results],
                                 {(op, series, "in-place" if in_place else "out-of-place"): peaks
                                  for (op, series, in_place), peaks in side.items()})
            if table:
                blocks.append(table)
        return blocks


SECTION = CollectivesSection()
