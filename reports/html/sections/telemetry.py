"""Telemetry: what the machine did while the run measured (`kind: "telemetry"`, one record per host):
CPU busy fraction, load and frequency, and per GPU its SM clock, power, temperature and utilisation over
time. A GPU whose clocks were held down under load (power cap, thermal or hardware slowdown, as NVML
reports the reasons), or whose SM clock stayed well below its maximum while it was busy, is called out at
the top, and the training and kernels sections say so beside their MFU and roofline fractions: every
clock-dependent figure of that run is below what the GPU can do. So is a host that other work kept busy
(contention.busy_host_reasons, the test by which `compare` widens its intervals): every time that run measured may
include the other work's."""
from typing import Any

from ...common.contention import busy_host_reasons
from ...common.json_types import Block, Record
from ...common.load import Result
from ..plots import PlotSink, new_figure
from ...common.policy import Policy


# low_clock_samples came after the first telemetry records: older results lack it.
def throttled_gpus(result: Result) -> list[str]:
    """The GPUs of a result whose clocks throttled, as "host GPU i" (empty when none did or there is no telemetry)."""
    return [f"{t['host']} GPU {g['index']}" for t in result.records_of("telemetry") for g in t["summary"]["gpus"]
            if g["throttled_samples"] > 0 or g.get("low_clock_samples", 0) > 0]


def throttle_alert(results: list[Result], figures: str) -> Block | None:
    """One alert block naming the runs whose clocks throttled, for a section whose figures depend on the clock; or None."""
    hit = [(r, throttled_gpus(r)) for r in results]
    hit = [(r, g) for r, g in hit if g]
    if not hit:
        return None
    where = "; ".join((f"{r.label}: " if len(results) > 1 else "") + ", ".join(g) for r, g in hit)
    return {"kind": "alert", "text": f"Clocks throttled during the run ({where}): {figures} were measured below the GPU's normal "
                                     "clocks (see Telemetry)"}


def _throttled_cell(g: Record) -> str:
    parts = []
    if g["throttled_samples"]:
        parts.append(f"{g['throttled_samples']} ({', '.join(g['throttle_reasons']) or 'reason not reported'})")
    if g.get("low_clock_samples", 0):
        parts.append(f"{g['low_clock_samples']} low clock under load")
    return "; ".join(parts) or "0"


def _fmt(r: dict[str, Any] | None, key: str, scale: float = 1.0, unit: str = "", digits: int = 0) -> str:
    v = r.get(key) if r else None
    return "-" if not v else f"{v * scale:.{digits}f}{unit}"


LOW_CLOCK_FRACTION = 0.85  # bench/telemetry/telemetry.h kLowClockFraction


def _clock_alerts(name: str, t: Record) -> list[Block]:
    """An alert per GPU of the host whose clocks were throttled, or held low while it was busy."""
    blocks: list[Block] = []
    for g in t["summary"]["gpus"]:
        if g["throttled_samples"] > 0:
            blocks.append({"kind": "alert", "text": f"{name} GPU {g['index']}: clocks throttled in {g['throttled_samples']} of "
                           f"{len(t['samples'])} samples ({', '.join(g['throttle_reasons']) or 'reason not reported'}); its MFU, "
                           "roofline fractions and bandwidths were measured below the GPU's normal clocks"})
        low = g.get("low_clock_samples", 0)
        if low > 0:
            blocks.append({"kind": "alert", "text": f"{name} GPU {g['index']}: SM clock under {LOW_CLOCK_FRACTION:.0%} of its "
                           f"maximum ({g['max_sm_clock_mhz']:.0f} MHz) while busy in {low} of {len(t['samples'])} samples "
                           f"(lowest {g['sm_clock_mhz']['min']:.0f} MHz); its MFU, roofline fractions and bandwidths were "
                           "measured at that clock"})
    return blocks


def _busy_alerts(results: list[Result]) -> list[Block]:
    """An alert per run measured on a host that other work kept busy, by the default limits over which `compare`
    widens its intervals (the same function): every time that run measured may include theirs."""
    blocks: list[Block] = []
    for r in results:
        busy = busy_host_reasons(r, Policy())
        if busy:
            blocks.append({"kind": "alert", "text": (f"{r.label}: " if len(results) > 1 else "") + "Busy host: " + "; ".join(busy)
                           + ": the run's times include the other work's (compare widens its intervals by it)"})
    return blocks


class TelemetrySection:
    key = "telemetry"
    title = "Telemetry"
    order = 90

    def applies(self, results: list[Result]) -> bool:
        return any(r.records_of("telemetry") for r in results)

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        records = [(r, t) for r in results for t in r.records_of("telemetry")]
        many = len(results) > 1

        def name(r: Result, t: Record) -> str:
            return (f"{r.label}: " if many else "") + t["host"]

        blocks: list[Block] = _busy_alerts(results)
        for r, t in records:
            blocks += _clock_alerts(name(r, t), t)
        rows = []
        for r, t in records:
            s = t["summary"]
            cpu = s["cpu_busy_fraction"]
            rows.append([name(r, t), "CPU", len(t["samples"]), f"{s['duration_s']:.1f}",
                         f"{100 * cpu['median']:.0f}% busy" if cpu else "-", _fmt(s["load1"], "max", digits=2),
                         _fmt(s["cpu_freq_mhz"], "median", unit=" MHz"), "-", "-", "-"])
            for g in s["gpus"]:
                sm = g["sm_clock_mhz"]
                clock = f"{sm['min']:.0f}-{sm['max']:.0f} MHz" if sm else "-"
                if sm and g["max_sm_clock_mhz"]:
                    clock += f" (max {g['max_sm_clock_mhz']:.0f})"
                rows.append([name(r, t), f"GPU {g['index']}", len(t["samples"]), f"{s['duration_s']:.1f}",
                             _fmt(g["gpu_util_percent"], "median", unit="% busy"), "-", clock,
                             _fmt(g["power_w"], "max", unit=" W"), _fmt(g["temperature_c"], "max", unit=" C"),
                             _throttled_cell(g)])
        blocks.append({"kind": "table",
                       "caption": "Per host and device over the run: utilisation median, load max, "
                                  "clock (CPU median; GPU SM min-max), power and temperature max, samples with throttled clocks",
                       "columns": ["host", "device", "samples", "seconds", "utilisation", "load", "clock", "power", "temperature",
                                   "throttled"],
                       "rows": rows})

        has_gpu = any(t["summary"]["gpus"] for _, t in records)
        fig, axes = new_figure(ncols=2 if has_gpu else 1, width=9.0 if has_gpu else 6.4, height=3.4)
        ax = axes[0]
        for i, (r, t) in enumerate(records):
            pts = [(s["t_s"], 100 * s["cpu_busy_fraction"]) for s in t["samples"] if s["cpu_busy_fraction"] is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=f"C{i % 10}", label=name(r, t), linewidth=1.0)
        ax.set_xlabel("time since the run started (s)")
        ax.set_ylabel("CPU busy (%)")
        ax.set_ylim(0, 105)
        ax.legend(fontsize=7)
        if has_gpu:
            ax = axes[1]
            for i, (r, t) in enumerate(records):
                for g in t["summary"]["gpus"]:
                    pts = [(s["t_s"], s["gpus"][g["index"]]["sm_clock_mhz"]) for s in t["samples"]
                           if len(s["gpus"]) > g["index"] and s["gpus"][g["index"]]["sm_clock_mhz"] is not None]
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], label=f"{name(r, t)} GPU {g['index']}", linewidth=1.0)
            ax.set_xlabel("time since the run started (s)")
            ax.set_ylabel("SM clock (MHz)")
            ax.legend(fontsize=7)
        blocks.append(plots.save(fig, "telemetry", "telemetry over the run",
                                 "CPU busy percentage and GPU SM clock over the run, per host"))
        return blocks


SECTION = TelemetrySection()
