"""`trainscope analyze` of a trace without steps (a collectives or kernels run): where the time went, by outermost span
of each rank's main thread, which the trace names (the trace schema's $defs.mainThread), whatever its tid; in a
PyTorch profiler trace, which names no thread so, the host thread whose spans cover the most time."""
import json

from synthetic import span

from reports.traces.analyze import analyze
from reports.traces.trace_roles import kineto_categories, main_thread_name

KINETO = kineto_categories()


def thread_name(tid, name):
    return {"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": name}}


def ours(d):
    """A trainscope (trace-v2) file of one rank whose main thread is on tid 7: two measurements, a check inside the
    first; a communication span on tid 1; spans on tids 3 and 0 (where trainscope's main thread is now and was
    before) of threads named otherwise."""
    spans = [span("all_reduce 1 KiB", "communication", 0, 100, 7), span("check", "communication", 60, 90, 7),
             span("all_reduce 4 KiB", "communication", 200, 250, 7), span("all_reduce", "communication", 10, 50, 1),
             span("elsewhere", "compute", 300, 900, 3), span("earlier", "compute", 900, 990, 0)]
    events = [thread_name(7, main_thread_name()), thread_name(1, "communication"), thread_name(3, "another"),
              thread_name(0, "yet another")]
    events += [dict(e, cat=KINETO[e["cat"]], args=dict(e["args"], role=e["cat"])) for e in spans]
    d.mkdir()
    (d / "rank-0.json").write_text(json.dumps({
        "traceEvents": events, "trainscope": {"format": "trace-v2", "what": "collectives"},
        "distributedInfo": {"rank": 0, "world_size": 1, "pg_count": 1,
                            "pg_config": [{"pg_name": "world", "pg_desc": "default_pg", "pg_size": 1, "ranks": "[0]"}]}}))
    return d


def test_the_spans_are_the_named_main_threads_whatever_its_tid(tmp_path):
    (row,) = analyze(ours(tmp_path / "trace"))["spans"]
    assert (row["spans"], row["total_us"], row["phases_us"]) == (2, 150, {"check": 30}), row  # before: tids 3 and 0's
    assert [t["name"] for t in row["top"]] == ["all_reduce 1 KiB", "all_reduce 4 KiB"]


def test_a_pytorch_trace_without_steps_is_read_on_its_busiest_host_thread(tmp_path):
    cpu_op = lambda name, a, b, tid: {"ph": "X", "name": name, "cat": "cpu_op", "ts": a, "dur": b - a, "pid": 4000, "tid": tid,
                                      "args": {}}
    events = [cpu_op("aten::mm", 0, 400, 4242), cpu_op("aten::add", 500, 600, 4242), cpu_op("aten::copy_", 0, 50, 4300)]
    (tmp_path / "rank0.pt.trace.json").write_text(json.dumps({"traceEvents": events, "baseTimeNanoseconds": 0,
                                                              "distributedInfo": {"rank": 0}}))
    (row,) = analyze(tmp_path)["spans"]
    assert (row["spans"], row["total_us"]) == (2, 500), row  # the thread of tid 4242; before: no span on a tid of 3 or 0
