"""The collectives section shows the ops in the registry's order (comm/collectives/registry.cpp), which it
reads from the result schema's enum (held equal to the registry by the CollectiveRegistry unit test), not
in the order the records came in."""
import json

from synthetic import ROOT, make_record

from reports.load import Result, collective_ops
from reports.plots import PlotSink
from reports.sections.collectives import SECTION


def test_order_is_the_schemas_enum():
    schema = json.loads((ROOT / "reports" / "schema" / "result-v1.schema.json").read_text())
    assert collective_ops() == schema["$defs"]["collective"]["properties"]["op"]["enum"]


def test_sections_follow_the_registry_whatever_order_the_records_came_in(tmp_path):
    ops = collective_ops()
    result = Result(path="r.json", doc={}, records=[make_record(op=op) for op in reversed(ops)])
    blocks = SECTION.build([result], PlotSink(tmp_path))
    assert [b["title"] for b in blocks if b["kind"] == "plot"] == ops
