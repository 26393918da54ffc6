"""Kernels: the roofline (arithmetic intensity against achieved FLOP/s, under the two measured ceilings)
and each op's fraction of the ceiling that bounds it."""
from ..plots import new_figure
from .telemetry import throttle_alert


class KernelsSection:
    key = "kernels"
    title = "Kernels"
    order = 18

    def applies(self, results):
        return any(r.records_of("kernel") for r in results)

    def build(self, results, plots):
        blocks = []
        failed = [(r, x) for r in results for x in r.records_of("kernel") if not x["check"]["passed"]]
        if failed:
            blocks.append({"kind": "alert", "text": f"{len(failed)} kernel(s) failed their check against the float64 reference: "
                           + "; ".join(f"{r.label}: {x['op']} {x['shape_name']} (max rel err {x['check']['max_rel_err']})" for r, x in failed[:10])})
        throttled = throttle_alert([r for r in results if r.records_of("kernel")], "kernel TFLOP/s and roofline fractions")
        if throttled:
            blocks.append(throttled)
        fig, (ax,) = new_figure(width=7.5, height=4.6)
        rows = []
        many = len(results) > 1
        for i, r in enumerate(results):
            color = f"C{i % 10}"
            ceil = {c["ceiling"]: c["value"] for c in r.records_of("kernel_ceiling")}
            recs = r.records_of("kernel")
            if "compute" in ceil and "memory" in ceil and recs:
                lo = min(x["arithmetic_intensity"] for x in recs) / 4
                hi = max(x["arithmetic_intensity"] for x in recs) * 4
                ridge = ceil["compute"] * 1e3 / ceil["memory"]
                xs = sorted({lo, hi, min(max(ridge, lo), hi)})
                ax.plot(xs, [min(ceil["compute"] * 1e3, x * ceil["memory"]) for x in xs], "-", color=color, alpha=0.6,
                        label=(f"{r.label}: " if many else "") + f"ceilings {ceil['compute']:.3g} TFLOP/s, {ceil['memory']:.3g} GB/s")
            for x in recs:
                ax.scatter(x["arithmetic_intensity"], x["tflops"] * 1e3, color=color, s=18)
                ax.annotate(x["op"], (x["arithmetic_intensity"], x["tflops"] * 1e3), fontsize=6, xytext=(3, 2), textcoords="offset points")
                roof = x["roofline"] or {}
                rows.append([(f"{r.label}: " if many else "") + x["op"], x["shape_name"], " ".join(f"{k}={v}" for k, v in x["shape"].items()),
                             x["dtype"], x["backend"], f"{x['time_us']['median']:.2f}", f"{x['tflops'] * 1e3:.2f}", f"{x['gbps']:.2f}",
                             roof.get("bound", "-"), f"{100 * roof['fraction_of_ceiling']:.0f}%" if roof else "-",
                             f"{x['clock_mhz']:.0f}" if x.get("clock_mhz") is not None else "-",
                             "ok" if x["check"]["passed"] else "FAILED"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
        ax.set_ylabel("achieved GFLOP/s")
        ax.set_title("roofline")
        ax.legend(fontsize=7)
        blocks.append(plots.save(fig, "kernels_roofline", "roofline", "each kernel's arithmetic intensity and achieved FLOP/s under the measured ceilings"))
        blocks.append({"kind": "table", "caption": "Kernels against their ceiling, at the clock each was timed at (GPU SM clock or CPU frequency; - where unknown)",
                       "columns": ["op", "shape", "dims", "dtype", "backend", "time (us)", "GFLOP/s", "GB/s", "bound", "of ceiling", "clock (MHz)", "check"],
                       "rows": rows})
        return blocks


SECTION = KernelsSection()
