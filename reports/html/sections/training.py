"""Training: the loss curve of every run, where a step's time goes (data, forward, backward, sync,
optimizer), throughput, achieved TFLOP/s and MFU, for parallel runs each rank's compute and
communication and the collectives the training issued, and for a job run on several fabrics (train
--transports) the fabrics side by side."""
import statistics
from collections.abc import Callable

from ...common import identity as ids
from ...common.json_types import Block, Record
from ...common.load import Result
from ...common.memory import COLUMNS as MEMORY_COLUMNS, KINDS as MEMORY_KINDS, layout_name, memory_rows
from ...common.mesh import axis_names, coordinate
from ..plots import PlotSink, error_bars, legend_beside, new_figure
from ..side_by_side import side_by_side
from .collective_sweep import attainable
from .kernels import CAUSES
from .telemetry import throttle_alert
from .training_moe import moe_blocks

PHASES = ("data", "forward", "backward", "sync", "optimizer")

TrainRun = tuple[Result, Record]  # a result and one of its train records
Namer = Callable[[Result, Record], str]


def mfu_figure(mfu: Record, which: str) -> str:
    """"41.2%" against the measured ceiling or the datasheet peak, with " !" when it is above 100% (suspect); "-" without
    one. Records from before the peaks were named carry only the flat fields."""
    figure = mfu.get(which)
    value = figure["mfu"] if figure else mfu.get("vs_measured" if which == "measured" else "vs_datasheet")
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" + (" !" if (figure or {}).get("ceiling_suspect") or value > 1 else "")


def mfu_peaks(mfu: Record) -> str:
    """What each MFU figure is against: the measured GEMM ceiling (precision, clock) and the datasheet entry at the clock."""
    parts = []
    m, d = mfu.get("measured"), mfu.get("datasheet")
    if m:
        parts.append(f"measured: {m['tflops']:.4g} TFLOP/s {m['precision']} ({m['source']})"
                     + (f" at {m['clock_mhz']:.0f} MHz" if m.get("clock_mhz") is not None else ""))
    elif mfu.get("measured_ceiling_tflops") is not None:
        parts.append(f"measured: {mfu['measured_ceiling_tflops']:.4g} TFLOP/s")
    if d:
        parts.append(f"datasheet: {d['entry']} {d['precision']} {d['datasheet_tflops']:.4g} TFLOP/s "
                     f"at {d['boost_clock_mhz']:.0f} MHz"
                     + (f", {d['tflops']:.4g} at {d['clock_mhz']:.0f} MHz" if d.get("clock_mhz") is not None else ""))
    elif mfu.get("datasheet_peak_tflops") is not None:
        parts.append(f"datasheet: {mfu.get('datasheet_gpu') or '?'} {mfu['datasheet_peak_tflops']:.4g} TFLOP/s")
    return "; ".join(parts) or "-"


def straggler_text(run: str, stragglers: Record) -> str:
    """The late ranks of a train record's arrival-skew block as its console named them (bench/train/arrival_skew.h
    decided; the report repeats that verdict, it does not judge again)."""
    skew = {k["rank"]: k["median_skew_us"] for k in stragglers["ranks"]}
    late = ", ".join(f"rank {k}" + (f" ({skew[k] / 1e3:.3f} ms median arrival skew)" if k in skew else "")
                     for k in stragglers["late_ranks"])
    return f"{run}: {late}, consistently late at the collectives by more than {stragglers['threshold_ms']:g} ms"


def _alerts(results: list[Result], runs: list[TrainRun], name: Namer) -> list[Block]:
    """Runs that stopped early, MFU figures above their peak, late ranks, and clocks that throttled under the run."""
    blocks: list[Block] = []
    failed = [(r, x) for r, x in runs if not x["completed"]]
    if failed:
        blocks.append({"kind": "alert",
                       "text": "; ".join(f"{name(r, x)} stopped after {x['steps_done']} step(s): {x.get('error', '?')}"
                                         for r, x in failed)})
    suspects = []
    for r, x in runs:
        mfu = x.get("mfu") or {}
        for which, peak in (("measured", "the measured GEMM ceiling"), ("datasheet", "the datasheet peak")):
            f = mfu.get(which)
            if f and f.get("ceiling_suspect"):
                suspects.append(f"{name(r, x)}: {100 * f['mfu']:.1f}% of {peak}"
                                + (" after re-measuring it" if f.get("rechecked") else "")
                                + f" (likely cause: {CAUSES.get(f.get('ceiling_suspect_cause'), '?')})")
    if suspects:
        blocks.append({"kind": "alert",
                       "text": "MFU above 100% of its peak (ceiling_suspect, marked ! in the table; not to be believed): "
                               + "; ".join(suspects)})
    late = [straggler_text(name(r, x), x["stragglers"]) for r, x in runs if (x.get("stragglers") or {}).get("late_ranks")]
    if late:
        blocks.append({"kind": "alert", "text": "Stragglers: " + "; ".join(late)})
    throttled = throttle_alert([r for r in results if r.records_of("train")], "their step times and MFU")
    if throttled:
        blocks.append(throttled)
    return blocks


def _loss_plot(runs: list[TrainRun], name: Namer, plots: PlotSink) -> Block:
    fig, (ax,) = new_figure(width=7.5, height=4.0)
    for i, (r, x) in enumerate(runs):
        curve = x["loss_curve"]
        ax.plot([p["step"] for p in curve], [p["loss"] for p in curve], color=f"C{i % 10}", label=name(r, x), linewidth=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title("loss curve")
    if len(runs) > 1:
        ax.legend(fontsize=7)
    return plots.save(fig, "training_loss", "loss curve", "the training loss at every step")


def _phase_plot(runs: list[TrainRun], name: Namer, plots: PlotSink) -> Block | None:
    """Where a step's time goes, per run that timed its phases; None when none did."""
    timed = [(r, x) for r, x in runs if x.get("phases_us")]
    if not timed:
        return None
    fig, (ax,) = new_figure(width=7.5, height=0.6 + 0.45 * len(timed))
    labels = [name(r, x) for r, x in timed]
    left = [0.0] * len(timed)
    for j, phase in enumerate(PHASES):
        widths = [x["phases_us"].get(phase, {}).get("median", 0.0) / 1e3 for _, x in timed]
        ax.barh(labels, widths, left=left, color=f"C{j}", label=phase)
        left = [a + b for a, b in zip(left, widths)]
    # The whole step's median with its spread, against the phases' medians stacked (which need not add up to it).
    steps = [(label, x["step_time_us"]) for label, (_, x) in zip(labels, timed) if x.get("step_time_us")]
    if steps:
        medians = [t["median"] / 1e3 for _, t in steps]
        ax.errorbar(medians, [label for label, _ in steps], fmt="|", color="black", markersize=10, elinewidth=0.8, capsize=3,
                    xerr=error_bars(medians, [(t["min"] / 1e3, t["p95"] / 1e3) for _, t in steps]),
                    label="step (median, fastest to p95)")
    ax.set_xlabel("median time per step (ms)")
    ax.set_title("where a step's time goes")
    legend_beside(ax)
    ax.invert_yaxis()
    return plots.save(fig, "training_phases", "phase breakdown",
                      "median data, forward, backward, sync and optimizer time per step")


def _memory_blocks(runs: list[TrainRun], name: Namer, plots: PlotSink) -> list[Block]:
    """Each rank's memory by kind (a stacked bar per rank of every run) and the table beside the formula."""
    named = [(name(r, x), x) for r, x in runs]
    rows = memory_rows(named)
    if not rows:
        return []
    bars = [(f"{n} r{m['rank']}", m["peak_bytes"]) for n, x in named for m in (x.get("memory") or {}).get("ranks", [])]
    fig, (ax,) = new_figure(width=7.5, height=0.8 + 0.3 * len(bars))
    left = [0.0] * len(bars)
    for j, kind in enumerate(MEMORY_KINDS):
        widths = [peaks[kind] / 2**20 for _, peaks in bars]
        ax.barh([label for label, _ in bars], widths, left=left, color=f"C{j}", label=kind.replace("_", " "))
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("MiB per rank (each kind's peak during the steps)")
    ax.set_title("memory by kind, per rank")
    legend_beside(ax)
    ax.invert_yaxis()
    plot = plots.save(fig, "training_memory", "memory by kind", "each rank's memory by kind, peaks during the steps")
    table: Block = {"kind": "table",
                    "caption": "Memory per rank (MiB, each kind's peak during the steps). Model states are parameters, "
                               "gradients, optimizer state and master weights; the formula is the ZeRO paper's for the "
                               "layout (data parallel 16 bytes per parameter with Adam, ZeRO 1-3 sharding the optimizer, "
                               "gradients and parameters, 1/tp and 1/pp splits); what a layout holds in flight (ZeRO-2's "
                               "buckets, ZeRO-3's gathered layer) is measured, not in the formula",
                    "columns": MEMORY_COLUMNS, "rows": rows}
    return [plot, table]


def _summary_table(runs: list[TrainRun], name: Namer) -> Block:
    rows = []
    for r, x in runs:
        mfu = x.get("mfu") or {}
        rows.append([name(r, x), x["backend"], x["precision"], f"{x['parameters']:,}", f"{x['items_per_step']} {x['item']}",
                     f"{x['step_time_us']['median'] / 1e3:.2f}" if x.get("step_time_us") else "-",
                     f"{x['throughput_per_s']:.1f}" if x.get("throughput_per_s") is not None else "-",
                     f"{x['tflops']:.4f}" if x.get("tflops") is not None else "-",
                     mfu_figure(mfu, "measured"), mfu_figure(mfu, "datasheet"), mfu_peaks(mfu),
                     f"{mfu['clock_mhz']:.0f}" if mfu.get("clock_mhz") is not None else "-",
                     f"{x['peak_memory_bytes'] / 2**20:.1f}",
                     f"{x['loss']['initial']:.4f} -> {x['loss']['final']:.4f}" if x["loss"]["final"] is not None else "-"])
    return {"kind": "table",
            "caption": "Training throughput and MFU (against the GEMM ceiling the run measured, and the datasheet peak "
                       "where known; the peaks column names both, the clock is the one MFU was computed at: GPU SM clock "
                       "or CPU frequency, - where unknown; ! marks an MFU above 100% of its peak)",
            "columns": ["run", "backend", "precision", "parameters", "per step", "step (ms)", "items/s", "TFLOP/s",
                        "MFU (measured)", "MFU (datasheet)", "peaks", "clock (MHz)", "memory (MiB)", "loss"],
            "rows": rows}


QUALITY = [m for m in ids.METRICS["train"] if m.family == ids.Family.QUALITY]  # what compare judges besides time


def _side_by_side(results: list[Result], runs: list[TrainRun]) -> list[Block]:
    """Overlaid results: each training configuration's step time and throughput, and the quality figures compare
    judges (final and held-out loss, accuracy), a column per run."""
    step: dict[tuple[str, ...], dict[str, float]] = {}
    rate: dict[tuple[str, ...], dict[str, float]] = {}
    quality: dict[str, dict[tuple[str, ...], dict[str, float]]] = {m.name: {} for m in QUALITY}
    fabrics = any(x.get("transport") for _, x in runs)  # runs of train --transports: a row per fabric
    for r, x in runs:
        key: tuple[str, ...] = (f"{x['model']} {x['preset']}", layout_name(x), x["backend"], x["precision"], x.get("step") or "-")
        key += (x.get("transport") or "-",) if fabrics else ()
        for m in QUALITY:
            figure = ids.find(x, m.path)
            if figure is not None:
                quality[m.name].setdefault(key, {})[r.label] = figure
        if not x.get("step_time_us"):
            continue
        step.setdefault(key, {})[r.label] = x["step_time_us"]["median"] / 1e3
        if x.get("throughput_per_s"):
            rate.setdefault(key, {})[r.label] = x["throughput_per_s"]
    columns = ["model", "layout", "backend", "precision", "step"] + (["transport"] if fabrics else [])
    labels = [r.label for r in results]
    tables = [side_by_side("Median step time (ms)", columns, labels, step, digits=3),
              side_by_side("Throughput (items/s)", columns, labels, rate, digits=1)]
    tables += [side_by_side(m.label[0].upper() + m.label[1:], columns, labels, quality[m.name], digits=4) for m in QUALITY]
    return [t for t in tables if t]


def exposed_communication_us(x: Record) -> float | None:
    """The communication a run's step did not hide behind compute: the median over its ranks (as `scale` and the
    console's summary report it); None without per-rank figures."""
    exposed = [k["exposed_communication_us"] for k in x.get("ranks") or [] if k.get("exposed_communication_us") is not None]
    return statistics.median(exposed) if exposed else None


def _fabric_table(runs: list[TrainRun], name: Namer) -> Block | None:
    """The same job on each fabric (records labelled with their transport), a row per transport, set against the first
    transport of its job that completed (a run that stopped shows what it timed, marked, and no ratio, as the console
    says it failed); None when no record names a transport."""
    jobs: dict[tuple[int, str], list[Record]] = {}  # (result, the run's name without its transport) -> its records
    for r, x in runs:
        if x.get("transport"):
            jobs.setdefault((id(r), name(r, {**x, "transport": None})), []).append(x)
    rows = []
    for (_, job), records in jobs.items():
        first = next((x for x in records if x["completed"] and x.get("step_time_us")), None)
        for x in records:
            step = x["step_time_us"]["median"] if x.get("step_time_us") else None
            exposed = exposed_communication_us(x)
            rows.append([job, x["transport"] + ("" if x["completed"] else " (stopped)"), ms_or_dash(step),
                         ms_or_dash(exposed),
                         f"{x['throughput_per_s']:.1f}" if x.get("throughput_per_s") is not None else "-",
                         f"{step / first['step_time_us']['median']:.2f}x" if step is not None and first and x["completed"]
                         else "-"])
    if not rows:
        return None
    return {"kind": "table",
            "caption": "Fabrics side by side: the same training job run once per transport (train or scale --transports), "
                       "each in a launch of its own. The median step (ms), the communication not hidden behind compute "
                       "(exposed: the median over the ranks, ms), the throughput, and the step against the job's first "
                       "transport",
            "columns": ["run", "transport", "step (ms)", "exposed communication (ms)", "items/s", "step vs first"],
            "rows": rows}


def _per_rank_table(parallel: list[TrainRun], name: Namer) -> Block:
    axes = axis_names([x for _, x in parallel])
    rows = []
    for r, x in parallel:
        for k in sorted(x["ranks"], key=lambda k: k["rank"]):
            ov = k.get("overlap")
            rows.append([name(r, x), k["rank"], "/".join(str(coordinate(k, a)) for a in axes), f"{k['step_us'] / 1e3:.3f}",
                         f"{k['compute_us'] / 1e3:.3f}", f"{k['communication_us'] / 1e3:.3f}",
                         f"{k['exposed_communication_us'] / 1e3:.3f}", ms_or_dash(k.get("waiting_for_peers_us")),
                         ms_or_dash(k.get("exposed_transfer_us")), f"{100 * ov:.0f}%" if ov is not None else "-",
                         f"{k.get('idle_us', 0) / 1e3:.3f}"])
    return {"kind": "table",
            "caption": "Per rank, median per step (ms): compute (forward + backward + optimizer), communication in flight, "
                       "exposed communication (host time issuing and waiting) = waiting for peers (blocked before a "
                       "collective's last member launched it: a straggler's cost, not the network's) + transfer, the "
                       "overlap 1 - exposed/communication, idle",
            "columns": ["run", "rank", "/".join(axes), "step", "compute", "communication", "exposed", "waiting for peers",
                        "transfer", "overlap", "idle"],
            "rows": rows}


def ms_or_dash(us: float | None) -> str:
    """Microseconds as milliseconds, or '-' for a field a result written before it existed lacks."""
    return f"{us / 1e3:.3f}" if us is not None else "-"


def _collectives_table(parallel: list[TrainRun], name: Namer) -> Block | None:
    """The collectives the training issued against what the sweep of the same result attained; None without any."""
    rows = []
    for r, x in parallel:
        for c in x.get("collectives", []):
            sweep = attainable(r, c)
            # Set against the sweep on the transfer alone (from the last member's launch): the sweep's ranks start
            # together, and a wait for a straggler is not the link's (results before issue #40: launch to completion).
            bus = c.get("transfer_busbw_gbps", c["busbw_gbps"])
            transfer = c.get("transfer_us")
            rows.append([name(r, x), c.get("group", "-"), c["op"], c["bytes"], c["group_size"], c["count"],
                         f"{c['time_us']['median']:.1f}", f"{transfer['median']:.1f}" if transfer else "-",
                         f"{c['busbw_gbps']:.3f}", f"{bus:.3f}",
                         f"{sweep['busbw_gbps']:.3f} at {sweep['bytes']} B" if sweep else "-",
                         f"{100 * bus / sweep['busbw_gbps']:.0f}%" if sweep and sweep["busbw_gbps"] > 0 else "-"])
    if not rows:
        return None
    return {"kind": "table",
            "caption": "Collectives the training issued (process 0), per group (its axis of the mesh) with its ranks and "
                       "bus factor: launch to observed completion, the transfer (from the group's last member's launch "
                       "to completion: without the wait for a late peer), bus bandwidth over each, and what the "
                       "collectives sweep in the same result attained at the nearest size (same op and ranks), set "
                       "against the transfer's",
            "columns": ["run", "group", "op", "bytes", "ranks", "count", "time (us)", "transfer (us)", "busbw (GB/s)",
                        "transfer busbw (GB/s)", "sweep busbw", "transfer / attainable"],
            "rows": rows}


class TrainingSection:
    key = "training"
    title = "Training"
    order = 30

    def applies(self, results: list[Result]) -> bool:
        return any(r.records_of("train") for r in results)

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        runs = [(r, x) for r in results for x in r.records_of("train")]
        many_results = len(results) > 1

        def name(r: Result, x: Record) -> str:
            layout = layout_name(x)
            return ((f"{r.label}: " if many_results else "") + f"{x['model']} {x['preset']}"
                    + (f" {layout}" if layout != "single" else "") + (f" [{x['step']}]" if x.get("step") else "")
                    + (f" over {x['transport']}" if x.get("transport") else ""))

        blocks = _alerts(results, runs, name)
        blocks.append(_loss_plot(runs, name, plots))
        phases = _phase_plot(runs, name, plots)
        if phases:
            blocks.append(phases)
        blocks.append(_summary_table(runs, name))
        fabrics = _fabric_table(runs, name)
        if fabrics:
            blocks.append(fabrics)
        if many_results:
            blocks.extend(_side_by_side(results, runs))
        blocks.extend(_memory_blocks(runs, name, plots))
        blocks.extend(moe_blocks(runs, name))
        parallel = [(r, x) for r, x in runs if x.get("ranks")]
        if parallel:
            blocks.append(_per_rank_table(parallel, name))
            collectives = _collectives_table(parallel, name)
            if collectives:
                blocks.append(collectives)
        return blocks


SECTION = TrainingSection()
