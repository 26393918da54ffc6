"""Scaling: weak- or strong-scaling efficiency against rank count for every study (`trainscope scale`),
and where each point's step went (compute, exposed communication, data, idle), so a falling efficiency
comes with its reason."""
from ...common.json_types import Block, Record
from ...common.load import Result
from ..plots import SPREAD, PlotSink, error_bars, legend_beside, new_figure, rate_spread

PARTS = ("compute", "exposed_communication", "data", "idle")


class ScalingSection:
    key = "scaling"
    title = "Scaling"
    order = 35

    def applies(self, results: list[Result]) -> bool:
        return any(r.records_of("scaling") for r in results)

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        series: dict[str, list[Record]] = {}
        named_by_training: set[int] = set()  # points whose result has train records naming late ranks (Training says so)
        for r in results:
            trains_name_stragglers = any((t.get("stragglers") or {}).get("late_ranks") for t in r.records_of("train"))
            for x in r.records_of("scaling"):
                if trains_name_stragglers:
                    named_by_training.add(id(x))
                key = ((f"{r.label}: " if len(results) > 1 else "") + (f"{x['model']} {x['preset']} " if x.get("model") else "")
                       + x["series"])
                series.setdefault(key, []).append(x)
        blocks: list[Block] = []
        failed = [(k, x) for k, xs in series.items() for x in xs if not x["completed"]]
        if failed:
            blocks.append({"kind": "alert",
                           "text": "; ".join(f"{k} at {x['ranks']} rank(s): {x.get('error', '?')}" for k, x in failed)})
        late = [f"{k} at {x['ranks']} ranks: " + ", ".join(f"rank {n}" for n in x["late_ranks"])
                for k, xs in series.items() for x in sorted(xs, key=lambda x: x["ranks"])
                if x.get("late_ranks") and id(x) not in named_by_training]
        if late:
            blocks.append({"kind": "alert", "text": "Stragglers (ranks consistently late at the collectives, as each point's "
                                                    "train record named them): " + "; ".join(late)})

        fig, (ax,) = new_figure(width=7.5, height=4.0)
        for i, (key, xs) in enumerate(series.items()):
            done = sorted((x for x in xs if x["completed"]), key=lambda x: x["ranks"])
            ax.plot([x["ranks"] for x in done], [100 * x["efficiency"] for x in done], marker="o", color=f"C{i % 10}", label=key,
                    linewidth=1.2)
            spread = [x for x in done if x.get("step_time_spread_us")]  # results before the spread was recorded have none
            values = [100 * x["efficiency"] for x in spread]
            ax.errorbar([x["ranks"] for x in spread], values, fmt="none", ecolor=f"C{i % 10}", elinewidth=0.8, capsize=2,
                        yerr=error_bars(values, [rate_spread(v, {"median": x["step_time_us"], **x["step_time_spread_us"]})
                                                 for v, x in zip(values, spread)]))
        ax.axhline(100, color="0.6", linewidth=0.8, linestyle="--")
        ax.set_xscale("log", base=2)
        counts = sorted({x["ranks"] for xs in series.values() for x in xs})
        ax.set_xticks(counts, [str(n) for n in counts])  # the rank counts measured, as numbers (not 2^0, 2^1)
        ax.minorticks_off()
        ax.set_xlabel("ranks")
        ax.set_ylabel("scaling efficiency (%)")
        ax.set_title(f"efficiency against the smallest point (error bars: step times {SPREAD})")
        ax.legend(fontsize=7)
        blocks.append(plots.save(fig, "scaling_efficiency", "scaling efficiency",
                                 "efficiency in percent against the number of ranks, one line per study"))

        points = [(key, x) for key, xs in series.items() for x in sorted(xs, key=lambda x: x["ranks"]) if x["completed"]]
        if points:
            fig, (ax,) = new_figure(width=7.5, height=0.6 + 0.4 * len(points))
            labels = [f"{key} @{x['ranks']}" for key, x in points]
            left = [0.0] * len(points)
            for j, part in enumerate(PARTS):
                widths = [x["breakdown_us"].get(part, 0.0) / 1e3 for _, x in points]
                ax.barh(labels, widths, left=left, color=f"C{j}", label=part.replace("_", " "))
                left = [a + b for a, b in zip(left, widths)]
            ax.set_xlabel("median per step (ms), the median rank")
            ax.set_title("step breakdown per point")
            legend_beside(ax)
            ax.invert_yaxis()
            blocks.append(plots.save(fig, "scaling_breakdown", "step breakdown",
                                     "compute, exposed communication, data and idle time per step at each point"))

        rows = [[key, x["ranks"], x["global_batch"], x.get("layout", "-"), f"{x['step_time_us'] / 1e3:.3f}",
                 f"{x['throughput_per_s']:.1f}", f"{x['speedup']:.2f}", f"{100 * x['efficiency']:.1f}%",
                 f"{x['breakdown_us']['exposed_communication'] / 1e3:.3f}"] for key, x in points]
        blocks.append({"kind": "table", "caption": "Scaling points (efficiency against the smallest point of each study)",
                       "columns": ["study", "ranks", "global batch", "layout", "step (ms)", "items/s", "speedup", "efficiency",
                                   "exposed comm (ms)"],
                       "rows": rows})
        return blocks


SECTION = ScalingSection()
