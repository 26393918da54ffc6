"""`train --trace DIR` and `trainscope analyze DIR` under mpirun: per-rank and merged Chrome trace files that parse,
name every rank, nest their spans and carry the collectives' bytes and groups as Kineto names them; dp2, pp2 and tp2
directories that pass the trace schema and HTA's loader rules; a 4-rank directory read by HTA's and Perfetto's own rules
(and by HTA itself where it is installed); an analysis whose parts add up to the step; a planted straggler named."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from helpers import ROOT, base_env, run_trainscope
from trace_loader_rules import hta_iterations, hta_metadata_keys, hta_rank_files, perfetto_view, spilled

# Timing decides three of these (a planted straggler named, the step breakdown from measured times): marked
# `alone`, they run after the parallel part (tests/README.md); the rest read what the traces hold, not when.

RUNS = {
    "data-parallel": ["--model", "mlp", "--preset", "tiny", "--batch", 16, "--steps", 4],
    "pipeline": ["--model", "transformer", "--preset", "tiny", "--batch", 8, "--steps", 4, "--pp", 4, "--micro-batches", 4],
}


def traced(tmp_path, name, args, env=None):
    d = tmp_path / name
    r = run_trainscope(["train", "--no-ceiling", "--warmup-steps", 1, "--trace", d, "--json", tmp_path / f"{name}.json"] + args, np=4, env=env,
                       timeout=600)
    assert r.rc == 0, r.err
    return d


def role(e):
    """What a span is to our analysis (kernels/trace.h's category): args.role; `cat` is Kineto's."""
    return e["args"]["role"]


def analyze(d, tmp_path, *extra):
    out = tmp_path / "analysis.json"
    r = run_trainscope(["analyze", d, "--json", out] + list(extra))
    assert r.rc == 0, r.err
    return json.loads(out.read_text()), r.out


def assert_nested(spans):
    """Spans of one track either contain one another or follow one another, as Perfetto reads them."""
    problems = spilled([(e["ts"], e["dur"], e["name"]) for e in spans])
    assert not problems, problems


@pytest.mark.parametrize("run", list(RUNS))
def test_traces_are_per_rank_merged_nested_and_carry_bytes(tmp_path, run):
    d = traced(tmp_path, run, RUNS[run])
    for rank in range(4):
        doc = json.loads((d / f"rank-{rank}.json").read_text())
        info = doc["distributedInfo"]
        assert (info["rank"], info["world_size"], info["backend"]) == (rank, 4, "mpi")
        spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        assert all(e["pid"] == rank for e in spans)
        for tid in {e["tid"] for e in spans}:  # every track, the communication lanes too: slices nest or follow
            assert_nested([e for e in spans if e["tid"] == tid])
        steps = [e for e in spans if role(e) == "step"]
        assert [e["name"] for e in steps] == [f"ProfilerStep#{i}" for i in range(4)]  # PyTorch's profiler's names
        assert {e["cat"] for e in steps} == {"user_annotation"}  # a record_function range, as PyTorch's steps are
        comm = [e for e in spans if role(e) == "communication"]
        # Ops in flight together go to lanes of their own: tid 1, then 10, 11, ...
        assert comm and all((e["tid"] == 1 or 10 <= e["tid"] < 100) and e["args"]["bytes"] > 0 and e["args"]["group"] for e in comm)
        # Kineto's names for the same facts, as PyTorch's profiler writes them on its NCCL spans (issue #22).
        for e in comm:
            a = e["args"]
            assert a["Collective name"] == e["name"] and a["dtype"] in ("float32", "float64") and a["Group size"] == a["ranks"], a
            assert a["In msg nelems"] + a["Out msg nelems"] > 0 and a["In msg nelems"] <= a["bytes"] * a["ranks"], a
            # the group by name and global ranks, as distributedInfo.pg_config lists it
            group = next(g for g in info["pg_config"] if g["pg_name"] == a["group"])
            assert (a["Process Group Name"], a["Process Group Ranks"]) == (a["group"], group["ranks"]) and e["cat"] == "cpu_op", a
            assert rank in json.loads(a["Process Group Ranks"])
        layers = {e["name"] for e in spans if e["name"].startswith(("forward layer", "backward layer"))}
        assert layers  # every rank ran some layers
        if run == "pipeline":
            assert {e["name"] for e in comm} >= ({"send"} if rank < 3 else {"recv"})
            # Each send and receive names the stage it went to or came from (issue #22): the next stage's
            # activations, the previous stage's gradient, so always a neighbour.
            p2p = [e for e in comm if e["name"] in ("send", "recv")]
            assert p2p and all(e["args"]["peer"] in (rank - 1, rank + 1) for e in p2p), p2p[:3]
            # and Kineto's other end, a global rank (the pipeline group here is the world)
            assert all(e["args"]["Dst Rank" if e["name"] == "send" else "Src Rank"] == e["args"]["peer"] for e in p2p)
    merged = json.loads((d / "merged" / "merged.json").read_text())["traceEvents"]
    assert {e["pid"] for e in merged if e["ph"] == "X"} == {0, 1, 2, 3}
    last = {}
    for e in merged:  # monotonic per track
        if e["ph"] != "X":
            continue
        key = (e["pid"], e["tid"])
        assert e["ts"] >= last.get(key, float("-inf"))
        last[key] = e["ts"]
    # one time axis: every rank's first step starts within a step's length of the others'
    firsts = [min(e["ts"] for e in merged if e["ph"] == "X" and e["pid"] == p and role(e) == "step") for p in range(4)]
    longest = max(e["dur"] for e in merged if e["ph"] == "X" and role(e) == "step")
    assert max(firsts) - min(firsts) < longest


# Two ranks on each axis: the layouts whose traces must load in HTA and Perfetto (issue #22), small and short.
LAYOUTS = {
    "dp2": ["--model", "mlp", "--preset", "tiny", "--batch", 16, "--steps", 3],
    "pp2": ["--model", "transformer", "--preset", "tiny", "--batch", 8, "--steps", 3, "--pp", 2, "--micro-batches", 2],
    "tp2": ["--model", "mlp", "--preset", "tiny", "--batch", 16, "--steps", 3, "--tp", 2],
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_dp_pp_and_tp_directories_pass_the_trace_schema_and_holistic_trace_analysis_loader_rules(tmp_path, layout):
    """Every rank file against reports/schema/trace-v2.schema.json, and what HTA's loader requires of a trace directory
    (HTA is on PyPI, not Debian), checked as it checks (hta/common/trace_file.py, create_rank_to_trace_dict): every entry of
    os.listdir(DIR) ending in .json or .gz is one rank's trace with an integer distributedInfo.rank >= 0 (the merged view
    is in DIR/merged/, a directory it skips); then events with ph/name/cat/ts/dur/pid/tid, iterations found by
    ProfilerStep#N spans, the same on every rank; and no two slices of one (pid, tid) overlapping (Perfetto)."""
    validator = jsonschema.Draft202012Validator(json.loads((ROOT / "reports" / "schema" / "trace-v2.schema.json").read_text()))
    r = run_trainscope(["train", "--no-ceiling", "--warmup-steps", 1, "--trace", tmp_path / "t"] + LAYOUTS[layout], np=2, timeout=600)
    assert r.rc == 0, r.err
    d = tmp_path / "t"
    files = sorted(d / name for name in os.listdir(d) if name.endswith((".json", ".gz")))
    assert [f.name for f in files] == ["rank-0.json", "rank-1.json"]
    iterations = set()
    for f in files:
        doc = json.loads(f.read_text())
        errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, errors[:3]
        info = doc["distributedInfo"]
        assert isinstance(info["rank"], int) and info["rank"] >= 0 and info["world_size"] == 2
        # The layout's one group of two ranks, under its axis's name, beside the world's.
        assert [(g["pg_desc"], g["ranks"]) for g in info["pg_config"]] == [(layout[:2], "[0, 1]"), ("default_pg", "[0, 1]")]
        spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
        assert all({"name", "cat", "ts", "dur", "pid", "tid"} <= e.keys() for e in spans)
        for key in {(e["pid"], e["tid"]) for e in spans}:
            assert_nested([e for e in spans if (e["pid"], e["tid"]) == key])
        comm = [e for e in spans if "Collective name" in e["args"]]
        assert comm and all(e["args"]["Process Group Description"] == layout[:2] for e in comm)
        steps = sorted(int(m.group(1)) for e in spans if (m := re.fullmatch(r"ProfilerStep#(\d+)", e["name"])))
        iterations.add(tuple(steps))
        assert perfetto_view(f)[1] == []  # and as Perfetto reads it: threads kept apart, slices nested
    assert iterations == {(0, 1, 2)}
    assert {r: f.name for r, f in hta_rank_files(d).items()} == {0: "rank-0.json", 1: "rank-1.json"}
    merged = json.loads((d / "merged" / "merged.json").read_text())
    assert {e["pid"] for e in merged["traceEvents"] if e["ph"] == "X"} == {0, 1}
    assert perfetto_view(d / "merged" / "merged.json")[1] == []


# Issue #36: a data-parallel run of 4 ranks, 3 steps, read as HTA and Perfetto read it (tests/integration/trace_loader_rules.py).
FOUR_RANKS = ["--model", "mlp", "--preset", "tiny", "--batch", 16, "--steps", 3]


@pytest.fixture(scope="module")
def four_rank_traces(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("four-ranks")
    r = run_trainscope(["train", "--no-ceiling", "--warmup-steps", 1, "--trace", tmp / "t"] + FOUR_RANKS, np=4, timeout=600)
    assert r.rc == 0, r.err
    return tmp / "t"


@pytest.mark.parametrize("version", ["v0.6.1", "v0.2.0"])
def test_holistic_trace_analysis_rules_find_every_rank_and_every_step(four_rank_traces, version):
    """HTA finds a file's rank with a regex on its raw text ("rank": and at least one space, v0.5.0-v0.6.1; exactly one,
    v0.2.0), so compact JSON ("rank":1) made every file rank 0 and HTA kept one of the 4."""
    files = hta_rank_files(four_rank_traces, version)
    assert {r: f.name for r, f in files.items()} == {r: f"rank-{r}.json" for r in range(4)}
    for rank, f in files.items():
        assert hta_iterations(f, include_last_profiler_step=True) == {0, 1, 2}, rank
        assert hta_iterations(f) == {0, 1}, rank  # HTA's default leaves the last step out
        assert "distributedInfo" in hta_metadata_keys(f)  # read by the ijson backends before traceEvents


def test_perfetto_json_importer_keeps_every_rank_s_threads_apart(four_rank_traces):
    """Perfetto reads tid 0 on a pid other than 0 as tid = pid: rank 1's main thread (tid 0) became its communication
    thread (tid 1), their slices overlapping without nesting. Every rank file and the merged one: each thread named once,
    as written, no slice spilled, every field of a type Perfetto reads."""
    merged_threads = {}
    for rank in range(4):
        view, problems = perfetto_view(four_rank_traces / f"rank-{rank}.json")
        assert problems == [], problems[:3]
        names = [t["name"] for (pid, _), t in view.items() if pid == rank]
        assert sorted(names) == ["communication", "main"], view.keys()
        assert any(name.startswith("ProfilerStep#") for t in view.values() for _, _, name in t["slices"])
        merged_threads.update({(rank, t["name"]): len(t["slices"]) for (pid, _), t in view.items() if pid == rank})
    view, problems = perfetto_view(four_rank_traces / "merged" / "merged.json")
    assert problems == [], problems[:3]
    assert {(pid, t["name"]): len(t["slices"]) for (pid, _), t in view.items()} == merged_threads


def test_the_perfetto_rules_flag_what_its_importer_misreads(tmp_path):
    """The rules themselves, on what only a GPU run writes (flows) and on the old writer's faults: a float flow id, tid 0
    on pid 1 beside tid 1, a displayTimeUnit at the start; and a file without them passes."""
    def doc(flow_id, main_tid, extra):
        return {**extra, "traceEvents": [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": main_tid, "args": {"name": "main"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "communication"}},
            {"ph": "X", "name": "ProfilerStep#0", "cat": "user_annotation", "ts": 0, "dur": 10, "pid": 1, "tid": main_tid},
            {"ph": "X", "name": "all_reduce", "cat": "cpu_op", "ts": 5, "dur": 10, "pid": 1, "tid": 1},
            {"ph": "s", "name": "ac2g", "cat": "ac2g", "id": flow_id, "ts": 1, "pid": 1, "tid": 2},
            {"ph": "f", "name": "ac2g", "cat": "ac2g", "id": flow_id, "ts": 2, "pid": 1, "tid": 100, "bp": "e"}]}
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(doc(7, 3, {})))
    bad.write_text(json.dumps(doc(7.0, 0, {"displayTimeUnit": "ms"})))
    assert perfetto_view(good)[1] == []
    problems = perfetto_view(bad)[1]
    assert [p.split(" ")[0] for p in problems] == ['"displayTimeUnit":', "a", "a", "thread", "thread"], problems


def holistic_trace_analysis_path():
    """Where HTA's source is (TRAINSCOPE_HTA_SRC, a checkout holding hta/) or "" where it is installed, or a visible skip.
    HTA is not in Debian; its source with Debian's python3-pandas, python3-plotly and python3-networkx runs."""
    src = os.environ.get("TRAINSCOPE_HTA_SRC", "")
    if src and not (Path(src) / "hta" / "trace_analysis.py").is_file():
        pytest.fail(f"TRAINSCOPE_HTA_SRC={src} holds no hta/trace_analysis.py")
    probe = subprocess.run([sys.executable, "-c", "import hta.trace_analysis"], capture_output=True, text=True,
                           env=base_env({"PYTHONPATH": src} if src else None), timeout=120)
    if probe.returncode != 0:
        pytest.skip("Holistic Trace Analysis is not importable (set TRAINSCOPE_HTA_SRC to its source, with python3-pandas, "
                    f"python3-plotly and python3-networkx installed): {probe.stderr.strip().splitlines()[-1:]}")
    return src


def test_holistic_trace_analysis_itself_loads_every_rank_and_every_step(four_rank_traces):
    src = holistic_trace_analysis_path()
    script = ("import json, sys\n"
              "from hta.trace_analysis import TraceAnalysis\n"
              "out = {}\n"
              "for last in (True, False):\n"
              "    t = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=last).t\n"
              "    out[str(last)] = {str(r): [int(i) for i in t.get_iterations(r)] for r in t.get_ranks()}\n"
              "print(json.dumps(out))\n")
    r = subprocess.run([sys.executable, "-c", script, str(four_rank_traces)], capture_output=True, text=True,
                       env=base_env({"PYTHONPATH": src} if src else None), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    found = json.loads(r.stdout.strip().splitlines()[-1])
    # Every step of every rank; by default (include_last_profiler_step=False) HTA leaves the last one out.
    assert found == {"True": {str(rank): [0, 1, 2] for rank in range(4)}, "False": {str(rank): [0, 1] for rank in range(4)}}, \
        r.stderr[-3000:]


@pytest.mark.parametrize("run", list(RUNS))
@pytest.mark.alone
def test_the_breakdown_adds_up_to_the_step(tmp_path, run):
    d = traced(tmp_path, run, RUNS[run])
    result, out = analyze(d, tmp_path)
    assert [r["rank"] for r in result["ranks"]] == [0, 1, 2, 3]
    for r in result["ranks"]:
        for s in r["per_step"]:
            parts = s["compute_us"] + s["exposed_us"] + s["idle_us"]
            assert parts == pytest.approx(s["step_us"], rel=0.02)
            assert s["compute_us"] > 0 and s["exposed_us"] >= 0 and s["idle_us"] >= -1e-6
            assert s["exposed_us"] <= s["communication_us"] + 1e-6
    if run == "pipeline":
        assert any(r["pipeline_bubble"] > 0 for r in result["ranks"])  # stages wait for each other
        assert_critical_path(result["critical_path"], stages=4)
        assert "# pipeline critical path of step" in out
    else:
        assert result["critical_path"] is None
    assert "compute + exposed communication + idle = step" in out


def assert_critical_path(cp, stages):
    """From stage 0's first forward to its last backward, each op held up by its stage's previous op or by
    the op it receives from (forward from the stage before, backward from the stage after)."""
    path = cp["path"]
    assert cp["stages"] == stages
    assert path[0]["stage"] == 0 and path[0]["op"].startswith("forward")
    assert path[-1]["stage"] == 0 and path[-1]["op"].startswith("backward")
    for prev, cur in zip(path, path[1:]):
        kind, micro = cur["op"].split()
        if cur["held_by"] == "stage":
            assert prev["stage"] == cur["stage"] and prev["end_us"] <= cur["start_us"] + 1e-3
        else:
            assert cur["held_by"] == "receive" and prev["op"] == cur["op"]
            assert prev["stage"] == cur["stage"] + (-1 if kind == "forward" else 1)
    assert 0 < cp["compute_us"] <= cp["length_us"] + 1e-3
    assert cp["before_us"] + cp["length_us"] + cp["after_us"] == pytest.approx(cp["step_us"], rel=0.05)


@pytest.mark.alone
def test_a_planted_straggler_is_named(tmp_path):
    d = traced(tmp_path, "straggler", RUNS["data-parallel"], env={"TRAINSCOPE_FAULT": "delay:rank=2:ms=40"})
    result, out = analyze(d, tmp_path, "--straggler-ms", 10)
    assert result["late_ranks"] == [2], out
    assert "# stragglers: rank 2" in out
    # The others' exposed time is mostly waiting for rank 2 (issue #40), not transfer; rank 2 waits for nobody.
    rows = {r["rank"]: r for r in result["ranks"]}
    assert rows[0]["waiting_us"] > 20e3 and rows[0]["transfer_us"] < rows[0]["waiting_us"], rows[0]
    assert rows[2]["waiting_us"] < 0.1 * rows[0]["waiting_us"], rows[2]
    assert rows[0]["waiting_us"] + rows[0]["transfer_us"] == pytest.approx(rows[0]["exposed_us"])
    assert "# exposed (ms): waiting for peers" in out
    # the train record names it too, without a trace (launch times on clocks aligned at a barrier)
    record = next(x for x in json.loads((tmp_path / "straggler.json").read_text())["records"] if x["kind"] == "train")
    skew = record["stragglers"]
    assert 2 in skew["late_ranks"] and [r["rank"] for r in skew["ranks"]] == [0, 1, 2, 3]
    assert skew["ranks"][2]["median_skew_us"] > 30e3 and skew["ranks"][2]["late"]


def test_analyze_without_traces_is_one_line(tmp_path):
    r = run_trainscope(["analyze", tmp_path])
    assert r.rc == 2
    assert r.error_lines() == [f"trainscope: error: {tmp_path}: no trace files: neither rank-<r>.json (`trainscope train --trace {tmp_path}`) "
                               "nor PyTorch profiler traces (*.json)"]


@pytest.mark.alone
def test_the_report_gets_a_profile_section_from_the_traces(tmp_path):
    d = traced(tmp_path, "straggler", RUNS["data-parallel"], env={"TRAINSCOPE_FAULT": "delay:rank=1:ms=40"})
    rep = tmp_path / "rep"
    r = run_trainscope(["report", tmp_path / "straggler.json", "--trace", d, "-o", rep])
    assert r.rc == 0, r.err
    html = (rep / "index.html").read_text()
    assert "Profile" in html and "Arrival skew at the collectives" in html
    # The planted straggler is named; on a loaded 2-core machine another rank may be late too ("rank 0, rank 1").
    assert re.search(r"stragglers: [^<]*\brank 1\b", html), re.findall(r"stragglers: [^<]*", html)
    for png in ("profile_gantt.png", "profile_breakdown.png"):
        assert (rep / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## Profile" in (rep / "summary.md").read_text()


def test_the_report_warns_of_a_trace_of_another_run(tmp_path):
    """A --trace directory of a dp4 MLP run beside the result of a one-process run: the report says, at the top of its
    profile and on stderr, that the trace is of another run; beside its own result, nothing is said."""
    d = traced(tmp_path, "dp4", RUNS["data-parallel"])
    other = tmp_path / "one.json"
    assert run_trainscope(["train", "--no-ceiling", "--steps", 3, "--warmup-steps", 1, "--json", other]).rc == 0
    r = run_trainscope(["report", other, "--trace", d, "-o", tmp_path / "rep"])
    assert r.rc == 0, r.err
    assert "report: warning: --trace" in r.err and "'train mlp tiny dp=4' over 4 rank(s)" in r.err
    assert '<div class="alert">This trace is of &#39;train mlp tiny dp=4&#39;' in (tmp_path / "rep" / "index.html").read_text()
    r = run_trainscope(["report", tmp_path / "dp4.json", "--trace", d, "-o", tmp_path / "own"])
    assert r.rc == 0 and "warning" not in r.err, r.err


def test_collectives_and_kernels_runs_trace_their_measurements(tmp_path, validate):
    d = tmp_path / "coll"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce,all_gather", "-b", "1K", "-e", "4K", "-f", 4, "-n", 3, "-w", 1,
                        "--trace", d, "--json", tmp_path / "c.json"], np=2)
    assert r.rc == 0, r.err
    for rank in range(2):
        spans = [e for e in json.loads((d / f"rank-{rank}.json").read_text())["traceEvents"] if e["ph"] == "X"]
        assert_nested(spans)
        assert perfetto_view(d / f"rank-{rank}.json")[1] == []
        outer = [e for e in spans if e["name"].startswith(("all_reduce", "all_gather"))]
        assert len(outer) == 2 * 2 * 2 and all(e["args"]["bytes"] in (1024, 4096) for e in outer)  # 2 ops x 2 sizes x 2 placements
        assert {e["name"].split()[0] for e in spans} >= {"check", "warm-up", "trial"}
    result, out = analyze(d, tmp_path)
    assert result["ranks"] == [] and len(result["spans"]) == 2 and "no training steps" in out
    assert result["spans"][0]["phases_us"]["trial"] > 0

    k = tmp_path / "kern"
    r = run_trainscope(["kernels", "--ops", "gemm,softmax", "--no-ceilings", "-n", 2, "--trace", k, "--json", tmp_path / "k.json"])
    assert r.rc == 0, r.err
    spans = [e for e in json.loads((k / "rank-0.json").read_text())["traceEvents"] if e["ph"] == "X"]
    assert_nested(spans)
    cases = [e for e in spans if e["name"].startswith("kernel ")]
    kdoc = json.loads((tmp_path / "k.json").read_text())
    validate(kdoc)
    records = [x for x in kdoc["records"] if x["kind"] == "kernel"]
    assert len(cases) == len(records) > 0
    assert {e["name"] for e in spans if not e["name"].startswith("kernel ")} == {"check", "timed"}


def test_scale_traces_every_point(tmp_path, validate):
    d = tmp_path / "scale-trace"
    r = run_trainscope(["scale", "--ranks", "1,2", "--batch", 8, "--launcher-args", "--oversubscribe", "--trace", d, "--json", tmp_path / "s.json",
                        "--model", "mlp", "--preset", "tiny", "--steps", 3, "--warmup-steps", 1, "--no-ceiling"])
    assert r.rc == 0, r.err
    doc = json.loads((tmp_path / "s.json").read_text())
    validate(doc)
    points = [x for x in doc["records"] if x["kind"] == "scaling"]
    assert [p["trace"] for p in points] == [str(d / "ranks1"), str(d / "ranks2")]
    for n in (1, 2):
        assert sorted(p.name for p in (d / f"ranks{n}").iterdir()) == sorted([f"rank-{i}.json" for i in range(n)] + ["merged"])


def test_the_report_shows_the_critical_path_and_collectives_traces(tmp_path):
    d = traced(tmp_path, "pipeline", RUNS["pipeline"])
    rep = tmp_path / "rep"
    r = run_trainscope(["report", tmp_path / "pipeline.json", "--trace", d, "-o", rep])
    assert r.rc == 0, r.err
    html = (rep / "index.html").read_text()
    assert "pipeline critical path of step" in html and "held by" in html

    c = tmp_path / "coll"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce", "-b", "1K", "-e", "1K", "-n", 2, "-w", 1, "--trace", c,
                        "--json", tmp_path / "c.json"], np=2)
    assert r.rc == 0, r.err
    r = run_trainscope(["report", tmp_path / "c.json", "--trace", c, "-o", tmp_path / "crep"])
    assert r.rc == 0, r.err
    assert "measurement span(s)" in (tmp_path / "crep" / "index.html").read_text()


def test_a_suite_step_traces_with_its_trace_key(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text(f'''[[step]]
kind = "collectives"
backend = "mpi"
ops = "broadcast"
min_bytes = "1K"
max_bytes = "1K"
iters = 2
trace = "{tmp_path / 'ct'}"

[[step]]
kind = "train"
model = "mlp"
preset = "tiny"
steps = 3
warmup_steps = 1
ceiling = false
trace = "{tmp_path / 'tt'}"
''')
    r = run_trainscope(["suite", suite, "--json", tmp_path / "s.json"], np=2)
    assert r.rc == 0, r.err
    for d in ("ct", "tt"):
        assert sorted(p.name for p in (tmp_path / d).iterdir()) == ["merged", "rank-0.json", "rank-1.json"]
