"""The result schema itself: valid JSON Schema, and strict where it must be."""
import copy
import json

import jsonschema
import pytest

from helpers import SCHEMA_PATH, run_trainscope


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    out = tmp_path_factory.mktemp("schema") / "doc.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce", "-b", "64", "-e", "256", "-f", "4", "-n", "2",
                        "--json", out], np=2)
    assert r.rc == 0, r.err
    return json.loads(out.read_text())


def errors(schema, doc):
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    return list(v.iter_errors(doc))


def test_real_document_validates(schema, document):
    assert errors(schema, document) == []


@pytest.mark.parametrize("path,value", [
    (("records", 0, "time_us", "median"), None),         # a NaN becomes null, and null is no time
    (("records", 0, "op"), "allreduce"),
    (("records", 0, "check", "passed"), "yes"),          # real booleans
    (("records", 0, "busbw_gbps"), -1.0),
    (("schema",), "trainscope/result/v2"),
    (("run", "world", "bootstrap"), "carrier-pigeon"),
])
def test_schema_rejects_bad_documents(schema, document, path, value):
    doc = copy.deepcopy(document)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert errors(schema, doc), f"accepted {path} = {value!r}"


def test_schema_rejects_a_missing_check(schema, document):
    doc = copy.deepcopy(document)
    del doc["records"][0]["check"]
    assert errors(schema, doc)
