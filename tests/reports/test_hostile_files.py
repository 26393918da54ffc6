"""The reports tool against hostile files and paths (issue #17, docs/reliability.md "Paths"): inputs that are
devices or too large are refused before they are read, outputs that are not regular files are never
replaced, a failed report leaves its folder as it was, result text cannot inject HTML or links into
Markdown, traces that break the trace schema are refused, and a closed pipe ends the tool quietly."""
import json
import os
import signal
import stat
import subprocess
import sys

from reports.common.markdown import markdown_text
from synthetic import make_doc, make_record

from test_compare import ROOT, run_tool


def error_line(r):
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr  # one line, never a traceback
    return lines[0]


def test_a_device_is_not_read(tmp_path):
    r = run_tool("report", "/dev/zero", "-o", tmp_path / "out")
    assert r.returncode == 2
    assert "/dev/zero: is a character device, not a regular file" in error_line(r)
    assert not (tmp_path / "out").exists()


def test_an_input_over_the_bound_is_refused_before_it_is_read(write_doc, tmp_path):
    doc = write_doc("big.json", make_doc([make_record()]))
    env = dict(os.environ, TRAINSCOPE_MAX_INPUT_BYTES="100")
    r = subprocess.run([sys.executable, "-m", "reports", "report", str(doc), "-o", str(tmp_path / "o")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "more than the 100 an input may be" in error_line(r)


def test_nan_is_not_json(write_doc, tmp_path):
    p = tmp_path / "nan.json"
    p.write_text(json.dumps(make_doc([make_record()])).replace('"mean": ', '"mean": NaN, "x": ', 1))
    r = run_tool("report", p, "-o", tmp_path / "o")
    assert r.returncode == 2 and "NaN is not a JSON number" in error_line(r)


def test_a_record_of_unknown_kind_fails_the_schema(write_doc, tmp_path):
    doc = make_doc([make_record()])
    doc["records"].append({"kind": "bogus"})
    r = run_tool("report", write_doc("x.json", doc), "-o", tmp_path / "o")
    assert r.returncode == 2 and "$.records[1].kind" in error_line(r)


def test_compare_outputs_are_checked_before_comparing_and_never_replace_a_fifo(write_doc, tmp_path):
    base = write_doc("base.json", make_doc([make_record()]))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = run_tool("compare", base, base, "--json", fifo)
    assert r.returncode == 2 and f"--json {fifo}: is a FIFO; only a regular file is replaced" in error_line(r)
    assert r.stdout == ""  # nothing compared
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    target = tmp_path / "target.md"
    target.write_text("keep")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    r = run_tool("compare", base, base, "--markdown", link)
    assert r.returncode == 2 and "is a symbolic link" in error_line(r)
    assert link.is_symlink() and target.read_text() == "keep"
    r = run_tool("compare", base, base, "--junit", tmp_path)
    assert r.returncode == 2 and "is a directory" in error_line(r)


def test_a_failed_report_leaves_its_folder_as_it_was(write_doc, tmp_path):
    doc = write_doc("r.json", make_doc([make_record(op=op) for op in ("all_reduce", "all_gather")]))
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("the user's")
    bad_trace = tmp_path / "trace"
    bad_trace.mkdir()
    (bad_trace / "rank-0.json").write_text('{"traceEvents": [], "distributedInfo": {"rank": -1}}')
    r = run_tool("report", doc, "-o", out, "--trace", bad_trace)
    assert r.returncode == 2, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]  # no half-written report, nothing of the user's lost
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []  # no staging folder left
    r = run_tool("report", doc, "-o", out)
    assert r.returncode == 0, r.stderr
    assert {"index.html", "summary.md", "mine.txt"} <= {p.name for p in out.iterdir()}


def test_summary_markdown_is_inert(write_doc, tmp_path):
    label = "<img src=x onerror=alert(1)> [click](javascript:alert(1)) | `code` *bold*"
    doc = write_doc("r.json", make_doc([make_record()], label=label))
    r = run_tool("report", doc, "-o", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "o" / "summary.md").read_text()
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
    assert "[click](" not in md and "\\[click\\](javascript" in md  # the brackets escaped: text, not a link
    assert markdown_text("a|b\nc") == "a\\|b c"
    assert markdown_text("all_reduce 4 MiB") == "all\\_reduce 4 MiB"


def write_trace(d, events, rank=0):
    d.mkdir(exist_ok=True)
    (d / f"rank-{rank}.json").write_text(json.dumps({"traceEvents": events, "distributedInfo": {"rank": rank, "world_size": 1}}))
    return d


def step(ts, dur):
    return {"ph": "X", "name": "step 0", "cat": "step", "ts": ts, "dur": dur, "pid": 0, "tid": 0, "args": {"step": 0}}


def test_analyze_refuses_what_breaks_the_trace_schema(tmp_path):
    r = run_tool("analyze", write_trace(tmp_path / "neg", [step(0, -5)]))
    assert r.returncode == 2 and "traceEvents[0].dur" in error_line(r)
    nan = write_trace(tmp_path / "nan", [step(0, 5)])
    (nan / "rank-0.json").write_text((nan / "rank-0.json").read_text().replace('"ts": 0', '"ts": NaN'))
    r = run_tool("analyze", nan)
    assert r.returncode == 2 and "NaN is not a JSON number" in error_line(r)
    r = run_tool("analyze", write_trace(tmp_path / "noname", [{"ph": "X", "ts": 0, "dur": 1}]))
    assert r.returncode == 2 and "'name' is a required property" in error_line(r)


def test_a_closed_pipe_ends_analyze_quietly(tmp_path):
    d = write_trace(tmp_path / "t", [step(0, 90)])
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line, as `| head -0` would leave it
    proc = subprocess.run([sys.executable, "-m", "reports", "analyze", str(d)], cwd=ROOT, stdout=write_end,
                          stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == -signal.SIGPIPE  # ended by the pipe, as any Unix tool: never taken for a pass
