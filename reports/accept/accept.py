"""`accept`: node acceptance verdicts (issues #22, #35) — each host PASS, FAIL or INCONCLUSIVE against a rules
file (rules.py), and optionally a reference (results of a known good node, or a baseline run).

A rule reads the records it selects from every result given (one cluster run, or one run per node: the
fleet is every host they name). Records that measure the same thing (host_metrics.same_measurement) form a
group; in a group a host's value is the median of its figures (a host in several pairs: the median of its
pairs), and the fleet median is the median of the hosts' values. Each limit is then checked per host and
group; a value exactly at a limit passes. A host fails a rule when any group fails it; a rule with a
`quantile` judges each limit once per host, on that quantile (from the worst) of the host's groups' figures.
A fraction of the reference compares the host's value in a group with the reference's value in the same
group (the median over the reference's hosts): what a fleet median cannot catch when much of the fleet is
degraded alike.

What cannot be judged is "not measured", neither pass nor fail: a rule that selects no record with a value
for the host; a fraction of the median in a group only one host measured (one host is no fleet); a fraction
of the peak of a record that carries no peak; a fraction of the reference without one, or of a
measurement the reference lacks. A host FAILs when a rule fails it, PASSes when none fails and at least one
was measured, and is "not measured" when none was. A host that fails a rule while it was busy with other
work (contention.py: its telemetry or the records' own share of the CPUs other processes took) is
INCONCLUSIVE instead: its figures say nothing about the node. Nothing judged at all is bad input (the rules
do not fit the results), as `compare` refuses to pass when it compared nothing.
"""
import math
from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum
from statistics import median
from typing import Any

from ..common import contention
from . import host_metrics as hm
from ..common.json_types import Block
from ..common.junit import Case, Outcome as CaseOutcome, junit_text
from ..common.load import Result
from ..common.policy import Policy
from .rules import LOW, Limit, Rule, Rules

EXIT_PASS, EXIT_FAIL, EXIT_INCONCLUSIVE = 0, 1, 3  # 2: bad input (as compare's)


class Verdict(str, Enum):
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    PASS = "PASS"
    NOT_MEASURED = "not measured"


@dataclass(frozen=True)
class Failure:
    rule: str
    value: float
    limit: float   # the value the host had to reach (or stay under), in the metric's unit or as a fraction
    text: str      # "6.1 GB/s < 0.8 x fleet median 9.2 GB/s = 7.36 GB/s [test=mpi_bandwidth bytes=...]"


@dataclass
class HostVerdict:
    host: str
    passed: list[str] = field(default_factory=list)       # rule names
    failed: dict[str, list[Failure]] = field(default_factory=dict)
    not_measured: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)         # signs of contention while it was measured

    @property
    def verdict(self) -> Verdict:
        if self.failed:
            return Verdict.INCONCLUSIVE if self.busy else Verdict.FAIL
        return Verdict.PASS if self.passed else Verdict.NOT_MEASURED

    def failures(self) -> list[Failure]:
        """The worst failure of each failing rule (the others are counted in its text)."""
        out = []
        for fails in self.failed.values():
            fails = sorted(fails, key=lambda f: -(abs(f.value - f.limit) / f.limit if f.limit else math.inf))  # furthest first
            more = f" (and {len(fails) - 1} more)" if len(fails) > 1 else ""
            out.append(Failure(fails[0].rule, fails[0].value, fails[0].limit, fails[0].text + more))
        return out

    def failing(self, sep: str = "; ") -> str:
        return sep.join(f"{f.rule}: {f.text}" for f in self.failures())


@dataclass
class Acceptance:
    rules: Rules
    results: list[str]
    hosts: list[HostVerdict]
    unmeasured: list[str]        # rules that judged no host
    incomplete: list[str]        # results of runs that did not finish
    reference: list[str] = field(default_factory=list)  # the reference results, when given

    def of(self, verdict: Verdict) -> list[HostVerdict]:
        return [h for h in self.hosts if h.verdict == verdict]

    @property
    def judged_nothing(self) -> bool:
        return len(self.unmeasured) == len(self.rules.rules)

    def nothing_judged(self) -> str:
        return (f"nothing judged: no rule of {self.rules.path} found a value it could judge in {', '.join(self.results)} "
                "(rules for another kind of machine or suite?)")

    @property
    def exit_code(self) -> int:
        return EXIT_FAIL if self.of(Verdict.FAIL) else EXIT_INCONCLUSIVE if self.of(Verdict.INCONCLUSIVE) else EXIT_PASS


def _fmt(x: float) -> str:
    return f"{x:.4g}"


@dataclass(frozen=True)
class Judged:
    """One measurement (group) of a host against one limit: `figure` in the limit's own terms (the value for
    an absolute limit, the fraction for the others), failing when on the wrong side of `x`."""
    limit: Limit
    figure: float
    x: float
    failure: Failure | None  # as a measurement judged on its own reads


def _fails(lim: Limit, figure: float, x: float) -> bool:
    return figure < x if lim in LOW else figure > x


def _limits(rule: Rule, value: float, fleet: float | None, fraction: float | None, ref: float | None,
            unit: str) -> list[Judged]:
    """Each limit that can be judged for one host's value in one group."""
    out = []
    for lim, x in rule.limits.items():
        sign = "<" if lim in LOW else ">"
        if lim in (Limit.MIN, Limit.MAX):
            fig, bound, text = value, x, f"{_fmt(value)} {unit} {sign} {_fmt(x)} {unit}"
        elif lim in (Limit.MIN_FRACTION_OF_MEDIAN, Limit.MAX_FRACTION_OF_MEDIAN, Limit.MIN_FRACTION_OF_REFERENCE,
                     Limit.MAX_FRACTION_OF_REFERENCE):
            of_median = lim in (Limit.MIN_FRACTION_OF_MEDIAN, Limit.MAX_FRACTION_OF_MEDIAN)
            base = fleet if of_median else ref
            if not base:
                continue
            fig, bound = value / base, x * base
            text = (f"{_fmt(value)} {unit} {sign} {x:g} x {'fleet median' if of_median else 'reference'} {_fmt(base)} {unit} "
                    f"= {_fmt(bound)} {unit}")
        else:  # a fraction of the peak the record carries
            if fraction is None:
                continue
            out.append(Judged(lim, fraction, x, Failure(rule.name, fraction, x, f"{_fmt(value)} {unit} = {fraction:.4g} of peak "
                                                        f"< {x:g}") if fraction < x else None))
            continue
        out.append(Judged(lim, fig, x, Failure(rule.name, value, bound, text) if _fails(lim, fig, x) else None))
    return out


def _varying(groups: list[tuple[Any, ...]]) -> set[str]:
    """The fields that tell a rule's groups apart (the others are the same in all, so need no saying)."""
    seen: defaultdict[str, set[Any]] = defaultdict(set)
    for g in groups:
        for k, v in g:
            seen[k].add(v)
    return {k for k, vs in seen.items() if len(vs) > 1}


Groups = dict[tuple[Any, ...], dict[str, list[hm.Value]]]  # same measurement -> host -> its figures


def _gather(rule: Rule, results: list[Result]) -> Groups:
    per_group: defaultdict[tuple[Any, ...], defaultdict[str, list[hm.Value]]] = defaultdict(lambda: defaultdict(list))
    for res in results:
        for rec in res.records:
            if rule.selects(rec):
                group = hm.same_measurement(rule.metric, rec)
                for v in hm.values(rule.metric, res, rec):
                    per_group[group][v.host].append(v)
    return {g: dict(by_host) for g, by_host in per_group.items()}


def _quantile(figures: list[float], q: float, low: bool) -> float:
    """The q-quantile counted from the worst (0: the worst), between neighbours as numpy's default does."""
    xs = sorted(figures, reverse=not low)
    pos = q * (len(xs) - 1)
    i = math.floor(pos)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (pos - i)


IN_TERMS = {Limit.MIN_FRACTION_OF_MEDIAN: "x fleet median", Limit.MAX_FRACTION_OF_MEDIAN: "x fleet median",
            Limit.MIN_FRACTION_OF_PEAK: "of peak", Limit.MIN_FRACTION_OF_REFERENCE: "x reference",
            Limit.MAX_FRACTION_OF_REFERENCE: "x reference"}


def _pooled(rule: Rule, judged: list[tuple[str, Judged]], unit: str) -> list[Failure]:
    """A rule with a quantile: each limit once, on the quantile of the host's figures (label, judged) over its groups."""
    assert rule.quantile is not None
    out = []
    for lim in rule.limits:
        mine = [(label, j) for label, j in judged if j.limit == lim]
        if not mine:
            continue
        low = lim in LOW
        figure = _quantile([j.figure for _, j in mine], rule.quantile, low)
        x = mine[0][1].x
        if not _fails(lim, figure, x):
            continue
        terms = IN_TERMS.get(lim, unit)
        worst_label, worst = min(mine, key=lambda lj: lj[1].figure if low else -lj[1].figure)
        which = "median" if rule.quantile == 0.5 else f"{rule.quantile:g}-quantile from the worst"
        worst_text = f"worst {worst.figure:.4g}" + (f" [{worst_label}]" if worst_label else "")
        out.append(Failure(rule.name, figure, x, f"{which} of {len(mine)}: {figure:.4g} {terms} {'<' if low else '>'} {x:g} "
                                                 f"({worst_text})"))
    return out


def _judge(rule: Rule, per_group: Groups, verdicts: dict[str, HostVerdict], reference: Groups) -> bool:
    varying = _varying(list(per_group))
    judged_hosts: set[str] = set()
    pooled: defaultdict[str, list[tuple[str, Judged]]] = defaultdict(list)
    units: dict[str, str] = {}
    for group, by_host in per_group.items():
        mine = {h: median(v.value for v in vs) for h, vs in by_host.items()}
        fleet = median(mine.values()) if len(mine) > 1 else None  # one host is no fleet
        refs = reference.get(group)
        ref = median(median(v.value for v in vs) for vs in refs.values()) if refs else None
        label = " ".join(f"{k}={v}" for k, v in group if k in varying and not isinstance(v, tuple))  # a shape: its name says it
        for host, vs in by_host.items():
            fractions = [v.value / v.peak for v in vs if v.peak]
            judged = _limits(rule, mine[host], fleet, median(fractions) if fractions else None, ref, vs[0].unit)
            if judged:
                judged_hosts.add(host)
            if rule.quantile is not None:
                pooled[host] += [(label, j) for j in judged]
                units[host] = vs[0].unit
                continue
            for f in (j.failure for j in judged if j.failure):
                tail = (f" [{label}]" if label else "") + (f" (median of {len(vs)})" if len(vs) > 1 else "")
                verdicts[host].failed.setdefault(rule.name, []).append(Failure(f.rule, f.value, f.limit, f.text + tail))
    for host, figures in pooled.items():
        for f in _pooled(rule, figures, units[host]):
            verdicts[host].failed.setdefault(rule.name, []).append(f)
    for host, hv in verdicts.items():
        if rule.name in hv.failed:
            continue
        (hv.passed if host in judged_hosts else hv.not_measured).append(rule.name)
    return bool(judged_hosts)


def accept(results: list[Result], rules: Rules, reference: list[Result] | None = None,
           policy: Policy | None = None) -> Acceptance:
    """`reference`: results of a known good node (or a baseline run) that the fraction-of-reference limits
    read; `policy`: when a host counts as busy (its max_others_busy, max_load_per_cpu)."""
    reference = reference or []
    gathered = [(rule, _gather(rule, results)) for rule in rules.rules]
    # Every host the runs name, measured or not (a host no rule judged is listed as such), and those only a
    # record names (a pair's peer).
    names = [h for res in results for h in hm.run_hosts(res)]
    names += [h for _, groups in gathered for by_host in groups.values() for h in by_host]
    busy = contention.by_host(results, policy or Policy())
    hosts = {h: HostVerdict(h, busy=busy.get(h, [])) for h in names}
    unmeasured = [rule.name for rule, groups in gathered if not _judge(rule, groups, hosts, _gather(rule, reference))]
    return Acceptance(rules, [r.path for r in results], sorted(hosts.values(), key=lambda h: h.host), unmeasured,
                      [f"{r.path}: {r.incomplete}" for r in results if r.incomplete], [r.path for r in reference])


def header_line(acc: Acceptance) -> str:
    why = f" ({acc.rules.why})" if acc.rules.why else ""
    ref = f", reference {', '.join(acc.reference)}" if acc.reference else ""
    return (f"# trainscope accept: {len(acc.hosts)} host(s) of {', '.join(acc.results)} against {len(acc.rules.rules)} "
            f"rule(s) of {acc.rules.path}{why}{ref}")


def verdict_line(acc: Acceptance) -> str:
    failed, unmeasured, busy = acc.of(Verdict.FAIL), acc.of(Verdict.NOT_MEASURED), acc.of(Verdict.INCONCLUSIVE)
    inconclusive = (f"{len(busy)} of {len(acc.hosts)} host(s) failed a rule while busy with other work, so say nothing: "
                    f"{', '.join(h.host for h in busy)} (measure again on a quiet host)")
    if failed:
        text = f"verdict: FAIL — {len(failed)} of {len(acc.hosts)} host(s) fail: {', '.join(h.host for h in failed)}"
        text += f"; inconclusive: {inconclusive}" if busy else ""
    elif busy:
        text = f"verdict: INCONCLUSIVE — {inconclusive}"
    else:
        text = f"verdict: PASS — all {len(acc.hosts) - len(unmeasured)} host(s) judged pass"
    if unmeasured:
        text += f"; not measured: {', '.join(h.host for h in unmeasured)}"
    return text + ("; incomplete: " + "; ".join(acc.incomplete) if acc.incomplete else "")


def format_table(acc: Acceptance) -> str:
    width = max([4] + [len(h.host) for h in acc.hosts])
    lines = [header_line(acc), f"{'host':<{width}}  {'verdict':<12}  {'pass/fail/not measured':>22}  failing rules"]
    for h in acc.hosts:
        counts = f"{len(h.passed)}/{len(h.failed)}/{len(h.not_measured)}"
        fails = h.failures()
        first = f"{fails[0].rule}: {fails[0].text}" if fails else ""
        lines.append(f"{h.host:<{width}}  {h.verdict.value:<12}  {counts:>22}  {first}".rstrip())
        lines += [f"{'':<{width + 40}}{f.rule}: {f.text}" for f in fails[1:]]
        if h.verdict == Verdict.INCONCLUSIVE:
            lines += [f"{'':<{width + 40}}busy: {b}" for b in h.busy]
    if acc.unmeasured:
        lines.append(f"# not measured on any host: {', '.join(acc.unmeasured)}")
    lines.append(verdict_line(acc))
    return "\n".join(lines) + "\n"


def format_junit(acc: Acceptance) -> str:
    """One test case per host: a failure listing its failing rules; skipped when no rule judged it."""
    cases = []
    for h in acc.hosts:
        if h.verdict == Verdict.FAIL:
            cases.append(Case("trainscope.accept", h.host, CaseOutcome.FAILURE,
                              h.failing(), h.failing("\n")))
        elif h.verdict == Verdict.INCONCLUSIVE:
            cases.append(Case("trainscope.accept", h.host, CaseOutcome.SKIPPED,
                              f"inconclusive: measured while busy ({'; '.join(h.busy)}): {h.failing()}"))
        elif h.verdict == Verdict.NOT_MEASURED:
            cases.append(Case("trainscope.accept", h.host, CaseOutcome.SKIPPED, "not measured: no rule found a value for it"))
        else:
            unmeasured = f"; not measured: {', '.join(h.not_measured)}" if h.not_measured else ""
            cases.append(Case("trainscope.accept", h.host, CaseOutcome.PASSED, "", f"pass: {', '.join(h.passed)}{unmeasured}"))
    return junit_text("trainscope accept", cases)


def section(acc: Acceptance) -> list[Block]:
    """The report's blocks: an alert per failing host (the status banner gathers them), then the table."""
    blocks: list[Block] = [{"kind": "alert", "text": f"{h.host} FAILS acceptance: {h.failing()}"}
                           for h in acc.of(Verdict.FAIL)]
    blocks += [{"kind": "alert", "text": f"{h.host}: acceptance INCONCLUSIVE, measured while busy ({'; '.join(h.busy)}): "
                f"{h.failing()}"} for h in acc.of(Verdict.INCONCLUSIVE)]
    blocks.append({"kind": "text", "text": header_line(acc).lstrip("# ") + ". " + verdict_line(acc)})
    rows = [[h.host, h.verdict.value, len(h.passed), len(h.failed), len(h.not_measured),
             h.failing() or "-"] for h in acc.hosts]
    blocks.append({"kind": "table", "caption": "Node acceptance per host",
                   "columns": ["host", "verdict", "rules passed", "failed", "not measured", "failing rules"], "rows": rows})
    if acc.judged_nothing:
        blocks.append({"kind": "text", "text": acc.nothing_judged() + "."})
    elif acc.unmeasured:
        blocks.append({"kind": "text", "text": f"Not measured on any host: {', '.join(acc.unmeasured)}."})
    return blocks
