"""`trainscope export` (reports/import_export/export.py, issue #22): CSV and OpenMetrics text that read back to the records'
own values — CSV through Python's csv reader, OpenMetrics through prometheus_client's own parser (Debian's
python3-prometheus-client) — from a real collectives result with telemetry records beside its collectives."""
import csv
import io
import json
import math
from pathlib import Path

import pytest

from reports.__main__ import main
from reports.import_export.export import COORDINATES, flatten, metric_name

DATA = Path(__file__).parent / "data"
RESULT = DATA / "ci-quiet-1.json"


def export(tmp_path, fmt, *extra):
    out = tmp_path / f"out.{fmt}"
    assert main(["export", str(RESULT), "--format", fmt, "-o", str(out), *extra]) == 0
    return out.read_text()


def records():
    return json.loads(RESULT.read_text())["records"]


def test_csv_has_a_row_per_record_whose_cells_read_back_to_its_fields(tmp_path):
    rows = list(csv.DictReader(io.StringIO(export(tmp_path, "csv"))))
    recs = records()
    assert len(rows) == len(recs) and {r["kind"] for r in recs} >= {"collective", "telemetry"}
    for i, (row, rec) in enumerate(zip(rows, recs, strict=True)):
        assert row["result"] == str(RESULT) and row["record"] == str(i)
        for key, value in flatten(rec):
            cell = row[key]
            if value is None:
                assert cell == ""
            elif isinstance(value, bool):
                assert cell == ("true" if value else "false")
            elif isinstance(value, (int, float)):
                assert float(cell) == value or (math.isnan(value) and math.isnan(float(cell))), key
            elif isinstance(value, (list, dict)):
                assert json.loads(cell) == value, key
            else:
                assert cell == value, key
        others = set(row) - {k for k, _ in flatten(rec)} - {"result", "label", "record"}
        assert all(row[k] == "" for k in others), "a column the record does not have is empty"


def test_openmetrics_parses_with_prometheus_own_parser_and_every_sample_is_a_records_number(tmp_path):
    parser = pytest.importorskip("prometheus_client.openmetrics.parser", reason="python3-prometheus-client is not installed")
    text = export(tmp_path, "openmetrics")
    families = list(parser.text_string_to_metric_families(text))  # raises on anything that is not OpenMetrics
    recs = records()
    seen = 0
    for family in families:
        assert family.type == "gauge" and family.name.startswith("trainscope_")
        for sample in family.samples:
            rec = recs[int(sample.labels["record"])]
            fields = {metric_name(rec["kind"], k): v for k, v in flatten(rec, sep="_")}
            value = fields[sample.name]
            assert sample.value == value or (math.isnan(value) and math.isnan(sample.value)), sample
            if rec["kind"] == "collective":
                assert sample.labels["op"] == rec["op"] and sample.labels["bytes"] == str(rec["bytes"])
            seen += 1
    # Every number of every record is there, but the coordinates (labels) and booleans.
    want = sum(1 for rec in recs for k, v in flatten(rec, sep="_")
               if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in COORDINATES)
    assert seen == want > 0


def test_a_label_with_quotes_and_a_newline_stays_one_label(tmp_path, write_doc):
    parser = pytest.importorskip("prometheus_client.openmetrics.parser", reason="python3-prometheus-client is not installed")
    doc = json.loads(RESULT.read_text())
    doc["records"] = [dict(doc["records"][0], label='say "hi"\nthere\\')]
    path = write_doc("hostile.json", doc)
    out = tmp_path / "h.prom"
    assert main(["export", str(path), "--format", "openmetrics", "-o", str(out)]) == 0
    labels = {s.labels["label"] for f in parser.text_string_to_metric_families(out.read_text()) for s in f.samples}
    assert labels == {'say "hi"\nthere\\'}


def test_a_bad_format_or_output_is_one_line(tmp_path, capsys):
    assert main(["export", str(RESULT), "--format", "xlsx"]) == 2
    assert "invalid choice: 'xlsx'" in capsys.readouterr().err
    assert main(["export", str(RESULT), "--format", "csv", "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_csv_text_cells_cannot_be_formulas_and_numbers_stay_numbers(tmp_path):
    """OWASP's CSV injection guidance (issue #34): a text cell starting with =, +, -, @, tab or carriage return is
    written with a single quote before it, and quoted, so that a spreadsheet shows it as text instead of running it;
    numbers, negative ones included, are written as they are and read back as numbers."""
    from reports.import_export.export import to_csv
    from reports.common.load import Result

    hostile = ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "\rx", "=1"]
    record = {"kind": "collective", "numbers": [-1], "delta": -1.5, "count": -3, "ok": "plain", "negative_text": "-x"}
    record.update({f"t{i}": text for i, text in enumerate(hostile)})
    text = to_csv([Result(path="=r.json", doc={"records": [record]}, label="@label")])
    (row,) = list(csv.DictReader(io.StringIO(text)))
    for i, cell in enumerate(hostile):
        assert row[f"t{i}"] == "'" + cell
    assert row["result"] == "'=r.json" and row["label"] == "'@label" and row["negative_text"] == "'-x"
    assert row["ok"] == "plain" and row["numbers"] == "[-1]"
    assert float(row["delta"]) == -1.5 and int(row["count"]) == -3
    line = text.split("\n")[1]  # (splitlines would split at the \r inside a quoted cell)
    assert '"\'-2+3"' in line and '"\'=1"' in line and ",-1.5," in line and ",-3," in line
