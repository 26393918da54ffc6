"""The report's first lines: its verdict (issue #22). Every section says what went wrong in alert blocks
(failed result checks, throttled clocks, ceilings measured under, stragglers, a busy host, a trace of another
run, an incomplete result, a host that failed its acceptance rules, a measured step outside its predicted band);
the banner gathers them at the top, each a link to its section, so a reader sees at once whether anything failed
and where, and says so plainly when nothing did. The banner has no detector of its own: what it lists is what the
sections raised (issue #35: it once said "no straggler" for a run whose sections never looked at the record's
stragglers)."""
from dataclasses import dataclass

from ..common.load import Result
from .sections import BuiltSection

SHORT = 160  # characters of an alert's text in the banner (the section has the whole)

# What the sections raise an alert for, as the all-clear line names it: a section that learns to look for
# something new adds it here.
LOOKED_FOR = ("failed check", "stopped or incomplete run", "throttled clock", "suspect ceiling", "straggler", "busy host",
              "host failing acceptance", "step outside its predicted band")


@dataclass
class Status:
    problems: list[tuple[str, str, str]]  # (section key, section title, the alert's text, shortened)
    checked: list[str]  # what was looked at and found fine, for the all-clear line
    looked_for: tuple[str, ...] = LOOKED_FOR  # what the alerts are about (another page, the history's, has its own)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def all_clear(self) -> str:
        """What the all-clear line says was found absent."""
        *first, last = self.looked_for
        return "no " + (", ".join(first) + " or " if first else "") + last


def _short(text: str) -> str:
    return text if len(text) <= SHORT else text[:SHORT - 1].rstrip() + "…"


def status_of(results: list[Result], sections: list[BuiltSection], looked_for: tuple[str, ...] = LOOKED_FOR) -> Status:
    problems = [("runs", "Runs", _short(f"{r.label} is incomplete: {r.incomplete}")) for r in results if r.incomplete]
    for s in sections:
        for b in s["blocks"]:
            if b["kind"] == "alert":
                problems.append((s["key"], s["title"], _short(str(b["text"]))))
    checked = [s["title"] for s in sections]
    return Status(problems, checked, looked_for)
