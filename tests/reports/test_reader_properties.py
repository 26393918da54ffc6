"""Property-based tests (hypothesis) of the Python readers of untrusted bytes: whatever a result file, a
.jsonl stream or a trace holds, reading it either succeeds or raises InputError (one line, exit 2); never
another exception, which would reach the user as an internal error."""
import json

from hypothesis import HealthCheck, given, settings, strategies as st

from reports.traces.trace_dir import load_trace_docs
from reports.common.errors import InputError
from reports.common.load import load_result
from synthetic import make_doc, make_record

VALID = json.dumps(make_doc([make_record()]))
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=20)


def reads_or_refuses(read, path):
    try:
        read(path)
    except InputError as e:
        assert "\n" not in str(e)


@SETTINGS
@given(st.binary(max_size=400))
def test_any_bytes_as_a_result(tmp_path, data):
    p = tmp_path / "r.json"
    p.write_bytes(data)
    reads_or_refuses(load_result, p)


@SETTINGS
@given(st.integers(min_value=0, max_value=len(VALID)), st.binary(max_size=8))
def test_a_damaged_result(tmp_path, cut, junk):
    p = tmp_path / "r.json"
    p.write_bytes(VALID.encode()[:cut] + junk)
    reads_or_refuses(load_result, p)


@SETTINGS
@given(json_values)
def test_any_json_as_a_result(tmp_path, value):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(value))
    reads_or_refuses(load_result, p)


@SETTINGS
@given(st.lists(json_values, max_size=5), json_values)
def test_any_json_as_a_trace(tmp_path, events, info):
    d = tmp_path / "t"
    d.mkdir(exist_ok=True)
    (d / "rank-0.json").write_text(json.dumps({"traceEvents": events, "distributedInfo": info}))
    reads_or_refuses(load_trace_docs, d)
