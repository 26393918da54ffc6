"""trace-v2 (Kineto's categories in `cat`, our role in args.role, process groups in distributedInfo) and trace-v1 (our
role in `cat`) read alike; a v2 file breaking its schema (a category that does not go with its role, a collective
without its group's ranks, a format this version does not know) is refused in one line."""
import json

import pytest
from synthetic import span

from reports.traces.analyze import analyze
from reports.common.errors import InputError
from reports.traces.trace_roles import kineto_categories

KINETO = kineto_categories()
ALL_REDUCE = {"bytes": 4096, "group": "dp0", "ranks": 2, "Collective name": "all_reduce", "In msg nelems": 1024, "Out msg nelems": 1024,
              "dtype": "float32", "Group size": 2, "Process Group Name": "dp0", "Process Group Description": "dp",
              "Process Group Ranks": "[0, 1]"}


def spans():
    return [span("ProfilerStep#0", "step", 0, 100, step=0), span("forward 0", "compute", 0, 60), span("data", "phase", 60, 70),
            span("wait all_reduce", "wait", 80, 90, group="dp0"), span("all_reduce", "communication", 75, 95, 1, **ALL_REDUCE)]


def v1(d):
    d.mkdir()
    (d / "rank-0.json").write_text(json.dumps({"traceEvents": spans(), "distributedInfo": {"rank": 0, "world_size": 2}}))
    return d


def v2(d, change=lambda doc: None):
    events = [dict(e, cat=KINETO[e["cat"]], args=dict(e["args"], role=e["cat"])) for e in spans()]
    doc = {"traceEvents": events, "trainscope": {"format": "trace-v2", "what": "train mlp tiny dp=2"},
           "distributedInfo": {"rank": 0, "world_size": 2, "backend": "mpi", "pg_count": 2,
                               "pg_config": [{"pg_name": "dp0", "pg_desc": "dp", "pg_size": 2, "ranks": "[0, 1]"},
                                             {"pg_name": "world", "pg_desc": "default_pg", "pg_size": 2, "ranks": "[0, 1]"}]}}
    change(doc)
    d.mkdir()
    (d / "rank-0.json").write_text(json.dumps(doc))
    return d


def test_v1_and_v2_files_of_one_run_read_alike(tmp_path):
    a, b = analyze(v1(tmp_path / "v1")), analyze(v2(tmp_path / "v2"))
    assert a["ranks"] == b["ranks"]
    # compute [0, 60] less no wait inside it; communication [75, 95] all exposed; idle the rest
    assert [(s["compute_us"], s["exposed_us"], s["idle_us"]) for s in b["ranks"][0]["per_step"]] == [(60, 20, 20)]


def args_of(doc, name):
    return next(e["args"] for e in doc["traceEvents"] if e["name"] == name)


@pytest.mark.parametrize("change,message", [
    (lambda doc: args_of(doc, "forward 0").update(role="step"), "traceEvents[1].cat: 'user_annotation' was expected"),  # a cpu_op as a step
    (lambda doc: args_of(doc, "all_reduce").pop("Process Group Ranks"), "'Process Group Ranks' is a required property"),
    (lambda doc: args_of(doc, "all_reduce").update({"Process Group Ranks": [0, 1]}), "[0, 1] is not of type 'string'"),
    (lambda doc: args_of(doc, "all_reduce").update({"Collective name": "send"}), "'Dst Rank' is a required property"),
    (lambda doc: doc["distributedInfo"].pop("pg_config"), "'pg_config' is a required property"),
    (lambda doc: doc["trainscope"].update(format="trace-v9"), 'trainscope.format "trace-v9" is not a trace format this version reads'),
    (lambda doc: doc["trainscope"].update(format=["trace-v2"]), "is not a trace format this version reads"),
])
def test_a_v2_file_breaking_its_schema_is_refused(tmp_path, change, message):
    with pytest.raises(InputError) as e:
        analyze(v2(tmp_path / "t", change))
    assert message in str(e.value) and "\n" not in str(e.value)
