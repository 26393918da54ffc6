"""`compare`: match two results record by record and say, metric by metric, what got worse beyond noise.

A record regresses when its deciding metric changed in the bad direction by more than the threshold AND
the change is larger than the run-to-run noise (significance.py). Records present on one side only are
listed, never dropped silently.
"""
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field

from . import identity as ids
from .significance import significant

ORDER = {"regression": 0, "improvement": 1, "within noise": 2, "unchanged": 3}


@dataclass
class MetricChange:
    metric: str
    unit: str
    baseline: float
    candidate: float
    change: float  # relative, (candidate - baseline) / baseline


@dataclass
class Row:
    identity: str
    verdict: str
    metric: str
    baseline: float
    candidate: float
    change: float
    worse_by: float  # the change counted in the bad direction (positive = worse)
    method: str
    p_value: float = None
    others: list = field(default_factory=list)


@dataclass
class Comparison:
    baseline: str
    candidate: str
    threshold: float
    alpha: float
    rows: list
    only_in_baseline: list
    only_in_candidate: list

    @property
    def regressions(self):
        return [r for r in self.rows if r.verdict == "regression"]


def _index(records):
    """Records by identity; of repeated measurements (a suite that runs one twice) the first counts."""
    out = {}
    for rec in records:
        key = ids.identity(rec)
        if key is not None and key not in out:
            out[key] = rec
    return out


def compare(baseline, candidate, threshold=0.05, alpha=0.01):
    base = _index(baseline.records)
    cand = _index(candidate.records)
    rows = []
    for key in base.keys() & cand.keys():
        b, c = base[key], cand[key]
        metrics = ids.METRICS[key[0]]
        decider = next(m for m in metrics if m.decides)
        bv, cv = ids.value(b, decider), ids.value(c, decider)
        change = (cv - bv) / bv if bv else 0.0
        worse_by = change if decider.lower_is_better else -change
        beyond_noise, method, p = significant(b, c, bv, cv, decider, alpha)
        if abs(worse_by) <= threshold:
            verdict = "unchanged"
        elif not beyond_noise:
            verdict = "within noise"
        else:
            verdict = "regression" if worse_by > 0 else "improvement"
        others = []
        for m in metrics:
            if m is decider:
                continue
            ob, oc = ids.value(b, m), ids.value(c, m)
            others.append(MetricChange(m.name, m.unit, ob, oc, (oc - ob) / ob if ob else 0.0))
        rows.append(Row(ids.describe(key), verdict, decider.name, bv, cv, change, worse_by, method, p, others))
    rows.sort(key=lambda r: (ORDER[r.verdict], -r.worse_by if r.verdict == "regression" else r.worse_by, r.identity))
    only_b = sorted(ids.describe(k) for k in base.keys() - cand.keys())
    only_c = sorted(ids.describe(k) for k in cand.keys() - base.keys())
    return Comparison(baseline.path, candidate.path, threshold, alpha, rows, only_b, only_c)


def _fmt_p(p):
    return "-" if p is None else f"{p:.2g}"


def format_table(cmp):
    lines = [f"# trainscope compare: {cmp.baseline} -> {cmp.candidate}",
             f"# threshold {cmp.threshold:.0%}, significance alpha {cmp.alpha} (Mann-Whitney U on samples; stdev where samples are missing)",
             f"{'verdict':<13} {'change':>8} {'baseline':>12} {'candidate':>12} {'test':>19} {'p':>7}  record"]
    for r in cmp.rows:
        lines.append(f"{r.verdict:<13} {r.change:>+8.1%} {r.baseline:>12.4g} {r.candidate:>12.4g} {r.method:>19} {_fmt_p(r.p_value):>7}  {r.identity} [{r.metric}]")
    for d in cmp.only_in_baseline:
        lines.append(f"{'missing':<13} {'':>8} {'':>12} {'':>12} {'':>19} {'':>7}  {d} (only in the baseline)")
    for d in cmp.only_in_candidate:
        lines.append(f"{'new':<13} {'':>8} {'':>12} {'':>12} {'':>19} {'':>7}  {d} (only in the candidate)")
    lines.append(summary_line(cmp))
    return "\n".join(lines) + "\n"


def summary_line(cmp):
    counts = {v: sum(1 for r in cmp.rows if r.verdict == v) for v in ORDER}
    return (f"# {len(cmp.rows)} compared: {counts['regression']} regression(s), {counts['improvement']} improvement(s), "
            f"{counts['within noise']} within noise, {counts['unchanged']} unchanged; "
            f"{len(cmp.only_in_baseline)} only in the baseline, {len(cmp.only_in_candidate)} only in the candidate")


def _md(text):
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def format_markdown(cmp):
    verdict = "**regression**" if cmp.regressions else "no regression"
    out = [f"## trainscope compare: {verdict}", "", _md(summary_line(cmp).lstrip("# ")), "",
           f"Threshold {cmp.threshold:.0%}; a change counts only when it is also beyond noise "
           f"(Mann-Whitney U at alpha {cmp.alpha} on the per-iteration samples; twice the combined stdev where samples are missing).", ""]
    shown = [r for r in cmp.rows if r.verdict in ("regression", "improvement", "within noise")]
    if shown:
        out += ["| verdict | record | metric | baseline | candidate | change | test | p |", "|---|---|---|---:|---:|---:|---|---:|"]
        for r in shown:
            out.append(f"| {r.verdict} | {_md(r.identity)} | {r.metric} | {r.baseline:.4g} | {r.candidate:.4g} | {r.change:+.1%} | {r.method} | {_fmt_p(r.p_value)} |")
        out.append("")
    for title, items in (("Only in the baseline", cmp.only_in_baseline), ("Only in the candidate", cmp.only_in_candidate)):
        if items:
            out += [f"{title}:", ""] + [f"- {_md(i)}" for i in items] + [""]
    return "\n".join(out)


def format_junit(cmp):
    suite = ET.Element("testsuite", name="trainscope compare", tests=str(len(cmp.rows)),
                       failures=str(len(cmp.regressions)), errors="0", skipped="0")
    for r in cmp.rows:
        case = ET.SubElement(suite, "testcase", classname="trainscope." + r.identity.split(" ")[0], name=r.identity)
        if r.verdict == "regression":
            fail = ET.SubElement(case, "failure", message=f"{r.metric} {r.change:+.1%} ({r.baseline:.4g} -> {r.candidate:.4g})",
                                 type="regression")
            fail.text = f"{r.identity}: {r.metric} {r.baseline:.6g} -> {r.candidate:.6g} ({r.change:+.2%}), {r.method} p={_fmt_p(r.p_value)}"
        else:
            ET.SubElement(case, "system-out").text = f"{r.verdict}: {r.metric} {r.change:+.2%}"
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def format_json(cmp):
    return json.dumps(asdict(cmp) | {"regressions": len(cmp.regressions)}, indent=1) + "\n"


def machine_key(result):
    """The baseline name for the machine a result ran on: backend, rank count and device model."""
    run = result.run
    layout = run["layouts"][0] if run["layouts"] else {"backend": "none", "size": run["world"]["processes"]}
    host = run["hosts"][0]
    gpus = host["gpus"]["devices"]
    model = gpus[0]["name"] if gpus else (host["cpu"]["model"] or "cpu")
    key = f"{layout['backend']}-{layout['size']}x-{model}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("_")
