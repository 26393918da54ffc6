"""The collectives section shows the ops in the registry's order (comm/collectives/registry.cpp), which it
reads from the collectives' declarations in the result schema (reports/common/collective_facts.py; held equal to the
registry by the CollectiveRegistry unit tests), not in the order the records came in."""
from synthetic import make_record

from reports.common.collective_facts import names
from reports.common.load import Result
from reports.html.plots import PlotSink
from reports.html.sections.collectives import SECTION


def test_sections_follow_the_registry_whatever_order_the_records_came_in(tmp_path):
    ops = names()
    result = Result(path="r.json", doc={}, records=[make_record(op=op) for op in reversed(ops)])
    blocks = SECTION.build([result], PlotSink(tmp_path))
    assert [b["title"] for b in blocks if b["kind"] == "plot"] == ops
