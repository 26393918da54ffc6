"""`history show`: each series on the console, a block per series, a line per run (the newest `last` of them)."""
from ..compare.effect import robust_cv
from .series import Point, Series

COLUMNS = ("#", "commit", "run started", "value", "cv", "samples", "contention")


def _value(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e6 else f"{x:.4e}"


def _line(p: Point) -> tuple[str, ...]:
    cv = f"{robust_cv(p.samples):.1%}" if len(p.samples) > 1 else "-"
    contention = "-" if p.contention is None else f"{p.contention:.0%}"
    return (str(p.order), p.commit[:10], p.time[:19].replace("T", " "), _value(p.value), cv, str(len(p.samples)),
            contention)


def format_series(s: Series, last: int) -> str:
    better = "lower" if s.points and s.points[0].lower_is_better else "higher"
    unit = f"{s.unit}, " if s.unit else ""
    head = f"{s.key} | {s.metric} ({unit}{better} is better) | {s.machine}"
    shown = s.points[-last:] if last else s.points
    rows = [COLUMNS] + [_line(p) for p in shown]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = [head] + ["  " + "  ".join(c.rjust(w) if i in (0, 3, 4, 5, 6) else c.ljust(w)
                                       for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
    if len(shown) < len(s.points):
        lines.append(f"  ({len(s.points) - len(shown)} earlier run(s) not shown: --last 0 shows all)")
    return "\n".join(lines) + "\n"


def format_show(series: list[Series], last: int) -> str:
    return "\n".join(format_series(s, last) for s in series)
