"""Loading: good documents load; broken ones are rejected with the file and the field named, no traceback."""
import json
import subprocess
import sys

import pytest
from synthetic import ROOT, make_doc, make_record, make_train

from reports.common.errors import InputError
from reports.common.load import load_result, load_results, validate
from reports.common.option_facts import config_version


def run_tool(*args):
    return subprocess.run([sys.executable, "-m", "reports", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_good_document_loads(write_doc):
    r = load_result(write_doc("ok.json", make_doc([make_record()])))
    assert len(r.records) == 1 and r.label == "node-a 2026-11-22 10:00"


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d["records"][0].pop("check"), "$.records[0]"),
    (lambda d: d["records"][0]["time_us"].update(median=None), "$.records[0].time_us.median"),
    (lambda d: d["records"][0].update(op="allreduce"), "$.records[0].op"),
    (lambda d: d["run"].pop("hosts"), "$.run"),
    (lambda d: d.update(schema="trainscope/result/v0"), "$.schema"),
])
def test_broken_document_names_file_and_field(write_doc, mutate, field):
    doc = make_doc([make_record()])
    mutate(doc)
    path = write_doc("broken.json", doc)
    with pytest.raises(InputError) as e:
        load_result(path)
    assert str(path) in str(e.value) and field in str(e.value)
    r = run_tool("report", path, "-o", path.parent / "out")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("trainscope: error: ") and r.stderr.count("\n") == 1 and field in r.stderr


def test_not_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": ')
    with pytest.raises(InputError, match=r"bad.json: not JSON: .* line 1"):
        load_result(bad)
    with pytest.raises(InputError, match="cannot read"):
        load_result(tmp_path / "absent.json")


def test_labels_one_per_result_and_made_unique(write_doc):
    a = write_doc("a.json", make_doc([make_record()]))
    b = write_doc("b.json", make_doc([make_record()]))
    with pytest.raises(InputError, match="--label was given 1 time"):
        load_results([a, b], ["x"])
    r = load_results([a, b])
    assert r[0].label != r[1].label


@pytest.mark.parametrize("config", [{"stepz": 3}, {"timeout_s": 600.0, "optimizer": {"kind": "adamw"}}],
                         ids=["unknown-key", "pre-37"])
def test_a_config_is_described_by_the_version_its_record_states(config):
    """A run or train record that states the current config_version has the config the option tables describe: a key no
    table has (or a config written before issue #37) is refused there. One that states none was written before records
    stated it: its config stays valid, not described."""
    for where in ("run", "train"):
        doc = make_doc([make_train()])
        doc["run"]["subcommand"] = "train"
        record = doc["run"] if where == "run" else doc["records"][0]
        record["config"] = config
        validate(doc)  # no version: a legacy config
        record["config_version"] = config_version()
        with pytest.raises(InputError, match=r"\$\.(run|records\[0\])\.config"):
            validate(doc)
        record["config"] = {"steps": 3, "label": "x"}  # what a table declares
        validate(doc)
