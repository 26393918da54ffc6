"""`accept`: node acceptance verdicts (issue #22) — each host PASS or FAIL against a rules file (rules.py).

A rule reads the records it selects from every result given (one cluster run, or one run per node: the
fleet is every host they name). Records that measure the same thing (host_metrics.same_measurement) form a
group; in a group a host's value is the median of its figures (a host in several pairs: the median of its
pairs), and the fleet median is the median of the hosts' values. Each limit is then checked per host and
group; a value exactly at a limit passes. A host fails a rule when any group fails it.

What cannot be judged is "not measured", neither pass nor fail: a rule that selects no record with a value
for the host; a fraction of the median in a group only one host measured (one host is no fleet); a fraction
of the peak of a record that carries no peak. A host FAILs when a rule fails it, PASSes when none fails and
at least one was measured, and is "not measured" when none was. Nothing judged at all is bad input (the
rules do not fit the results), as `compare` refuses to pass when it compared nothing.
"""
import math
from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum
from statistics import median
from typing import Any

from . import host_metrics as hm
from .json_types import Block
from .junit import Case, Outcome as CaseOutcome, junit_text
from .load import Result
from .rules import Limit, Rule, Rules

EXIT_PASS, EXIT_FAIL = 0, 1  # 2: bad input


class Verdict(str, Enum):
    FAIL = "FAIL"
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

    @property
    def verdict(self) -> Verdict:
        return Verdict.FAIL if self.failed else Verdict.PASS if self.passed else Verdict.NOT_MEASURED

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
        return EXIT_FAIL if self.of(Verdict.FAIL) else EXIT_PASS


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _check(rule: Rule, value: float, fleet: float | None, fraction: float | None, unit: str) -> tuple[bool, list[Failure]]:
    """(whether any limit could be judged, the limits failed) for one host's value in one group."""
    judged, fails = False, []
    for lim, x in rule.limits.items():
        if lim in (Limit.MIN, Limit.MAX):
            bound, shown = x, f"{_fmt(x)} {unit}"
        elif lim in (Limit.MIN_FRACTION_OF_MEDIAN, Limit.MAX_FRACTION_OF_MEDIAN):
            if fleet is None:
                continue
            bound, shown = x * fleet, f"{x:g} x fleet median {_fmt(fleet)} {unit} = {_fmt(x * fleet)} {unit}"
        else:  # a fraction of the peak the record carries
            if fraction is None:
                continue
            judged = True
            if fraction < x:
                fails.append(Failure(rule.name, fraction, x, f"{_fmt(value)} {unit} = {fraction:.4g} of peak < {x:g}"))
            continue
        judged = True
        low = lim in (Limit.MIN, Limit.MIN_FRACTION_OF_MEDIAN)
        if (value < bound) if low else (value > bound):
            fails.append(Failure(rule.name, value, bound, f"{_fmt(value)} {unit} {'<' if low else '>'} {shown}"))
    return judged, fails


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


def _judge(rule: Rule, per_group: Groups, verdicts: dict[str, HostVerdict]) -> bool:
    varying = _varying(list(per_group))
    judged_hosts: set[str] = set()
    for group, by_host in per_group.items():
        mine = {h: median(v.value for v in vs) for h, vs in by_host.items()}
        fleet = median(mine.values()) if len(mine) > 1 else None  # one host is no fleet
        label = " ".join(f"{k}={v}" for k, v in group if k in varying and not isinstance(v, tuple))  # a shape: its name says it
        for host, vs in by_host.items():
            fractions = [v.value / v.peak for v in vs if v.peak]
            judged, fails = _check(rule, mine[host], fleet, median(fractions) if fractions else None, vs[0].unit)
            if judged:
                judged_hosts.add(host)
            for f in fails:
                tail = (f" [{label}]" if label else "") + (f" (median of {len(vs)})" if len(vs) > 1 else "")
                verdicts[host].failed.setdefault(rule.name, []).append(Failure(f.rule, f.value, f.limit, f.text + tail))
    for host, hv in verdicts.items():
        if rule.name in hv.failed:
            continue
        (hv.passed if host in judged_hosts else hv.not_measured).append(rule.name)
    return bool(judged_hosts)


def accept(results: list[Result], rules: Rules) -> Acceptance:
    gathered = [(rule, _gather(rule, results)) for rule in rules.rules]
    # Every host the runs name, measured or not (a host no rule judged is listed as such), and those only a
    # record names (a pair's peer).
    names = [h for res in results for h in hm.run_hosts(res)]
    names += [h for _, groups in gathered for by_host in groups.values() for h in by_host]
    hosts = {h: HostVerdict(h) for h in names}
    unmeasured = [rule.name for rule, groups in gathered if not _judge(rule, groups, hosts)]
    return Acceptance(rules, [r.path for r in results], sorted(hosts.values(), key=lambda h: h.host), unmeasured,
                      [f"{r.path}: {r.incomplete}" for r in results if r.incomplete])


def header_line(acc: Acceptance) -> str:
    why = f" ({acc.rules.why})" if acc.rules.why else ""
    return (f"# trainscope accept: {len(acc.hosts)} host(s) of {', '.join(acc.results)} against {len(acc.rules.rules)} "
            f"rule(s) of {acc.rules.path}{why}")


def verdict_line(acc: Acceptance) -> str:
    failed, unmeasured = acc.of(Verdict.FAIL), acc.of(Verdict.NOT_MEASURED)
    text = (f"verdict: FAIL — {len(failed)} of {len(acc.hosts)} host(s) fail: {', '.join(h.host for h in failed)}" if failed
            else f"verdict: PASS — all {len(acc.hosts) - len(unmeasured)} host(s) judged pass")
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
