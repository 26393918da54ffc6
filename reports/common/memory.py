"""Memory by layout: each train record's per-rank account (what the allocator counted by kind during the
steps) beside the model states its layout should hold by the ZeRO paper's formulas. `python3 -m reports
memory RESULT...` prints the table; the report's training section shows it and a bar chart."""
from .json_types import Record
from .load import Result

KINDS = ("parameters", "gradients", "optimizer", "master_weights", "activations", "comm_buffers", "workspace")
MODEL_STATES = ("parameters", "gradients", "optimizer", "master_weights")
COLUMNS = ["run", "rank", "params", "grads", "optimizer", "masters", "activations", "comm", "workspace", "model states",
           "formula", "ratio", "peak"]


def layout_name(x: Record) -> str:
    """A train record's layout as the record names it ("dp=2 zero=3"); "single" for one process and older records."""
    return (x.get("layout") or {}).get("name", "single")


def recompute_name(x: Record) -> str:
    """" recompute=full" for a record trained with --recompute selective or full; "" otherwise and for older records."""
    mode = (x.get("memory") or {}).get("recompute", "none")
    return "" if mode == "none" else f" recompute={mode}"


def mib(b: float) -> str:
    return f"{b / 2**20:.1f}"


def memory_rows(runs: list[tuple[str, Record]]) -> list[list[str]]:
    """One row per rank of every named train record that carries an account (older records do not)."""
    rows = []
    for name, x in runs:
        for m in (x.get("memory") or {}).get("ranks", []):
            peaks, formula = m["peak_bytes"], m["formula_bytes"]["model_states"]
            ratio = f"{m['model_states_bytes'] / formula:.3f}" if formula > 0 else "-"
            rows.append([name, str(m["rank"])] + [mib(peaks[k]) for k in KINDS]
                        + [mib(m["model_states_bytes"]), mib(formula), ratio, mib(m["total_peak_bytes"])])
    return rows


def format_table(rows: list[list[str]]) -> str:
    """Plain text, columns aligned: what `reports memory` prints."""
    table = [COLUMNS] + rows
    widths = [max(len(r[i]) for r in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in table]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths)] + lines[1:])


def named_runs(results: list[Result]) -> list[tuple[str, Record]]:
    many = len(results) > 1
    return [((f"{r.label}: " if many else "") + f"{x['model']} {x['preset']} {layout_name(x)}{recompute_name(x)}", x)
            for r in results for x in r.records_of("train")]


def memory_text(results: list[Result]) -> str:
    rows = memory_rows(named_runs(results))
    if not rows:
        return "no train record carries a memory account (written by trainscope train since the memory accounts)"
    return ("MiB per rank, peaks during the steps; model states = parameters + gradients + optimizer + master weights; "
            "formula: the ZeRO paper's for the layout\n" + format_table(rows))
