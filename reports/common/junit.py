"""JUnit XML, as CI systems read it (one <testsuite> in <testsuites>): the one writer of `compare` (a case per
record) and `accept` (a case per host)."""
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class Outcome(str, Enum):
    PASSED = "passed"
    FAILURE = "failure"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Case:
    classname: str
    name: str
    outcome: Outcome
    message: str   # the failure's or skip's one line (unused for a pass)
    text: str = ""  # the body: the details of a failure or skip, the system-out of a pass
    failure_type: str = "failure"


def junit_text(suite_name: str, cases: Sequence[Case]) -> str:
    count = {o: sum(c.outcome == o for c in cases) for o in Outcome}
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(cases)), failures=str(count[Outcome.FAILURE]),
                       errors="0", skipped=str(count[Outcome.SKIPPED]))
    for c in cases:
        case = ET.SubElement(suite, "testcase", classname=c.classname, name=c.name)
        if c.outcome == Outcome.FAILURE:
            ET.SubElement(case, "failure", message=c.message, type=c.failure_type).text = c.text
        elif c.outcome == Outcome.SKIPPED:
            ET.SubElement(case, "skipped", message=c.message).text = c.text
        else:
            ET.SubElement(case, "system-out").text = c.text
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
