"""Issue #34: every JSON reader of the reports tool under one policy (reports/common/strict_json.py), its environment variables
checked, `import` refusing what `report` could not read, and memory bounded by what is read.

Before: a result nested 100,000 deep was a RecursionError; a lone `\\ud800` escape passed until a report was written
(UnicodeEncodeError); an integer of 10^30 reached numpy (TypeError); `1e400` was read as infinity and accepted by report,
compare and analyze. Now each is one line naming the file and the place, exit 2, for documents, streams and traces."""
import json
import os
import subprocess
import sys

import pytest
from synthetic import ROOT, make_doc, make_record, span

from reports.common import strict_json
from reports.__main__ import main
from reports.common.errors import InputError

DATA = ROOT / "tests" / "reports" / "data"
IMPORT = DATA / "import"


def one_error(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trainscope: error: "), err
    return err


def valid_text():
    return json.dumps(make_doc([make_record()]))


# name -> (the document's text made hostile, what the error line says)
HOSTILE = {
    "deep": (lambda t: t[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 64 arrays and objects"),
    "deep-but-parsable": (lambda t: t[:-1] + ', "x": ' + "[" * 70 + "]" * 70 + "}", "$.x" + "[0]" * 63 + ": nested deeper"),
    "surrogate": (lambda t: t.replace('"dtype": "float32"', '"dtype": "float32", "label": "a\\ud800b"', 1),
                  "$.records[0].label: a lone UTF-16 surrogate (\\ud800)"),
    "surrogate-key": (lambda t: t.replace('"dtype": "float32"', '"dtype": "float32", "\\udc00": 1', 1),
                      "$.records[0]: a key holds a lone UTF-16 surrogate (\\udc00)"),
    "huge-integer": (lambda t: t.replace('"bytes": 1048576', '"bytes": 1' + "0" * 30, 1),
                     "$.records[0].bytes: the integer 1000000000000000000000000000000 is outside -2^63..2^63-1"),
    "just-past-int64": (lambda t: t.replace('"bytes": 1048576', f'"bytes": {1 << 63}', 1),
                        "$.records[0].bytes: the integer 9223372036854775808 is outside"),
    "many-digits": (lambda t: t.replace('"bytes": 1048576', '"bytes": ' + "9" * 5000, 1), "an integer of more than"),
    "overflowing-float": (lambda t: t.replace('"median": 100.0', '"median": 1e400', 1),
                          "$.records[0].time_us.median: a number beyond the range of a double (read as infinity)"),
    "negative-overflow": (lambda t: t.replace('"mean": 100.0', '"mean": -1e400', 1),
                          "$.records[0].time_us.mean: a number beyond"),
    "nan": (lambda t: t.replace('"median": 100.0', '"median": NaN', 1), "NaN is not a JSON number"),
}


@pytest.mark.parametrize("case", HOSTILE)
@pytest.mark.parametrize("command", ["report", "compare", "export", "memory", "accept", "analyze --kernels-result",
                                     "history add", "predict check"])
def test_a_hostile_result_is_one_line_and_exit_2(tmp_path, capsys, case, command):
    make, says = HOSTILE[case]
    bad = tmp_path / "bad.json"
    bad.write_text(make(valid_text()))
    args = {"report": ["report", bad, "-o", tmp_path / "rep"], "compare": ["compare", bad, bad],
            "export": ["export", bad, "--format", "csv"], "memory": ["memory", bad],
            "accept": ["accept", bad, "--rules", ROOT / "bench" / "suites" / "rules" / "quick.toml"],
            "analyze --kernels-result": ["analyze", DATA / "kineto-gpu", "--kernels-result", bad],
            "history add": ["history", "add", bad, "--commit", "c", "--db", tmp_path / "h.sqlite"],
            "predict check": ["predict", "check", "--calibration", bad]}[command]
    assert main([str(a) for a in args]) == 2
    err = one_error(capsys)
    assert f"{bad}: " in err and says in err, err
    assert not (tmp_path / "rep").exists() and not (tmp_path / "h.sqlite").exists()


def stream_lines():
    return (DATA / "train-killed.jsonl").read_text().splitlines()


@pytest.mark.parametrize("case", ["deep", "surrogate", "huge-integer", "overflowing-float"])
def test_a_hostile_line_of_a_stream_is_one_line_naming_it(tmp_path, capsys, case):
    lines = stream_lines()
    step = json.loads(lines[3])
    hostile = {"deep": lambda: lines[3][:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
               "surrogate": lambda: lines[3].replace('"label":"killed"', '"label":"\\ud800"'),
               "huge-integer": lambda: json.dumps(dict(step, train_step=10 ** 30)),
               "overflowing-float": lambda: lines[3].replace(f'"step_us":{json.dumps(step["step_us"])}',
                                                             '"step_us":1e400')}[case]()
    assert hostile != lines[3]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines[:3] + [hostile] + lines[4:]) + "\n")
    assert main(["report", str(bad), "-o", str(tmp_path / "rep")]) == 2
    err = one_error(capsys)
    assert f"{bad}: line 4: " in err, err


@pytest.mark.parametrize("case", ["deep", "surrogate", "huge-integer", "overflowing-float"])
def test_a_hostile_trace_is_one_line(tmp_path, capsys, case):
    d = tmp_path / "trace"
    d.mkdir()
    doc = {"traceEvents": [span("step 0", "step", 0, 90, step=0)], "distributedInfo": {"rank": 0, "world_size": 1}}
    text = json.dumps(doc)
    text = {"deep": lambda: text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "surrogate": lambda: text.replace('"step 0"', '"step \\ud800"'),
            "huge-integer": lambda: text.replace('"ts": 0', '"ts": ' + "1" + "0" * 30),
            "overflowing-float": lambda: text.replace('"ts": 0', '"ts": 1e400')}[case]()
    (d / "rank-0.json").write_text(text)
    assert main(["analyze", str(d)]) == 2
    assert f"{d / 'rank-0.json'}: " in one_error(capsys)


def test_a_hostile_pytorch_trace_is_one_line(tmp_path, capsys):
    d = tmp_path / "pt"
    d.mkdir()
    source = next((DATA / "kineto-gpu").iterdir())
    (d / source.name).write_text(source.read_text().replace('"ts": ', '"ts": 1e400, "was": ', 1))
    assert main(["analyze", str(d)]) == 2
    assert "a number beyond the range of a double" in one_error(capsys)


def test_the_policy_keeps_what_trainscope_and_kineto_write():
    """64 levels, int64's ends (a Kineto trace's nanosecond clock needs more than 2^53), the largest double, and
    characters outside the BMP written as a surrogate pair are all read."""
    deep = "[" * 64 + "]" * 64
    assert strict_json.loads(deep, "d") == json.loads(deep)
    value = {"a": [-(1 << 63), (1 << 63) - 1, 1.7976931348623157e308, -5e-324], "b": "\U0001F600 \u00e9"}
    assert strict_json.loads(json.dumps(value), "v") == value
    assert strict_json.loads('"\\ud83d\\ude00"', "pair") == "\U0001F600"
    with pytest.raises(InputError, match=r"^d: \$(\[0\]){64}: nested deeper than 64 arrays and objects$"):
        strict_json.loads("[" * 65 + "]" * 65, "d")


def tool(*args, env=None):
    return subprocess.run([sys.executable, "-m", "reports", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("args", [["report", DATA / "ci-quiet-1.json", "-o", "{tmp}/rep"],
                                  ["compare", DATA / "ci-quiet-1.json", DATA / "ci-quiet-2.json"],
                                  ["analyze", DATA / "kineto-gpu"], ["export", DATA / "ci-quiet-1.json", "--format", "csv"],
                                  ["import", IMPORT / "osu_allreduce.txt", "--ranks", "2"],
                                  ["accept", DATA / "ci-quiet-1.json", "--rules", ROOT / "bench/suites/rules/quick.toml"],
                                  ["memory", DATA / "train-killed.jsonl"]], ids=lambda a: a[0])
def test_a_bad_input_limit_is_one_line_for_every_subcommand(tmp_path, args):
    r = tool(*[str(a).format(tmp=tmp_path) for a in args], env={"TRAINSCOPE_MAX_INPUT_BYTES": "abc"})
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr == ("trainscope: error: TRAINSCOPE_MAX_INPUT_BYTES=abc: not a whole number of bytes from 1 to "
                        "1099511627776 (unset, it is 2147483648)\n")


@pytest.mark.parametrize("value", ["0", "-5", "1e9", "4G", " ", "1" + "0" * 30, "2199023255552"])
def test_every_bad_input_limit_is_refused(capsys, monkeypatch, value):
    monkeypatch.setenv("TRAINSCOPE_MAX_INPUT_BYTES", value)
    assert main(["memory", str(DATA / "train-killed.jsonl")]) == 2
    assert f"TRAINSCOPE_MAX_INPUT_BYTES={value}: not a whole number of bytes" in one_error(capsys)


@pytest.mark.parametrize("name", ["TRAINSCOPE_VERSION", "TRAINSCOPE_GIT_COMMIT"])
@pytest.mark.parametrize("value", ["1.0\x1b[2J", "x" * 300, "bad\udcff"])
def test_the_build_named_in_an_import_must_be_printable(tmp_path, capsys, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    out = tmp_path / "osu.json"
    assert main(["import", str(IMPORT / "osu_allreduce.txt"), "--ranks", "2", "-o", str(out)]) == 2
    err = one_error(capsys)
    assert f"{name}=" in err and "\x1b" not in err and not out.exists()


def nccl_text(size):
    text = (IMPORT / "nccl-tests-all_reduce.txt").read_text()
    first = next(line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    cells = first.split()
    return text.replace(first, first.replace(cells[0], size, 1), 1), first


@pytest.mark.parametrize("size", ["1" + "0" * 30, str(1 << 63), "\u0661\u0662"])  # the last: Arabic-Indic digits
def test_import_refuses_a_size_no_result_can_hold(tmp_path, capsys, size):
    text, _ = nccl_text(size)
    src = tmp_path / "nccl.txt"
    src.write_text(text)
    out = tmp_path / "out.json"
    assert main(["import", str(src), "-o", str(out)]) == 2
    err = one_error(capsys)
    assert f"{src}: line " in err and "size" in err, err
    assert not out.exists()


def test_import_refuses_figures_that_overflow_and_a_time_too_small_to_divide_by(tmp_path, capsys):
    text = (IMPORT / "osu_allreduce.txt").read_text()
    row = [line for line in text.splitlines() if line.strip() and not line.startswith("#")][-1]  # the largest size
    for t in ("1e-320", "1e-305"):  # a time that underflowed to 0 when scaled to seconds; one whose bandwidth overflows
        cells = row.split()
        src = tmp_path / f"osu-{t}.txt"
        src.write_text(text.replace(row, "  ".join([cells[0], t, *cells[2:]]), 1))
        out = tmp_path / "out.json"
        assert main(["import", str(src), "--ranks", "2", "-o", str(out)]) == 2
        err = one_error(capsys)
        assert f"{src}: line " in err and "internal error" not in err, err
        assert not out.exists()


def test_import_refuses_a_json_size_no_result_can_hold(tmp_path, capsys):
    doc = json.loads((IMPORT / "nccl-tests-all_reduce.json").read_text())
    doc["results"][0]["size"] = 10 ** 30
    src = tmp_path / "nccl.json"
    src.write_text(json.dumps(doc))
    assert main(["import", str(src)]) == 2
    assert f"{src}: $.results[0].size: the integer 1{'0' * 30} is outside" in one_error(capsys)


def test_what_import_writes_report_reads(tmp_path, capsys):
    """The largest size import accepts (2^63-1) is one that report, compare and export read back."""
    text, _ = nccl_text(str((1 << 63) - 1))
    src = tmp_path / "nccl.txt"
    src.write_text(text)
    out = tmp_path / "big.json"
    assert main(["import", str(src), "-o", str(out)]) == 0, capsys.readouterr().err
    for args, codes in ((["report", out, "-o", tmp_path / "rep"], (0,)), (["compare", out, out], (0, 3)),
                        (["export", out, "--format", "csv"], (0,))):
        assert main([str(a) for a in args]) in codes, capsys.readouterr().err
        assert "error" not in capsys.readouterr().err


# The tool is started by this small wrapper, which reports the peak of its own child: a process started from pytest
# itself inherits pytest's high-water mark (Linux records the old address space's peak at exec, and a vfork child's old
# address space is pytest's), so after a few hundred tests every child "peaked" at pytest's 350 MB.
MEASURE = ("import os, subprocess, sys\n"
           "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
           "_, status, usage = os.wait4(p.pid, 0)\n"
           "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")


def max_rss_kib(args, env=None):
    """Runs the tool and returns (exit code, stderr, its peak resident memory in KiB)."""
    p = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "reports", *map(str, args)], cwd=ROOT,
                       capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    assert p.returncode == 0, p.stderr
    rc, rss = map(int, p.stdout.split())
    return rc, p.stderr, rss


def test_a_file_of_2_gib_is_refused_without_being_read(tmp_path):
    """`report` of a 2 GiB file took 4.26 GB before refusing it: read whole, then decoded. A file of zeros (a sparse one
    here) is refused on its first block, at the default limit and at a raised one."""
    big = tmp_path / "zeros.json"
    with open(big, "wb") as f:
        f.truncate(2 << 30)
    for env in ({}, {"TRAINSCOPE_MAX_INPUT_BYTES": str(4 << 30)}):
        rc, err, rss = max_rss_kib(["report", big, "-o", tmp_path / "rep"], env)
        assert rc == 2 and err.count("\n") == 1 and str(big) in err, err
        assert rss < 300 << 10, f"{rss} KiB to refuse it"


def test_compare_of_a_long_stream_is_bounded(tmp_path):
    """compare of a 30,000-step stream took 1.09 GB, most of it the bootstrap's resamples of every step at once; of
    10,000 steps, 0.4 GB. Now the resamples are drawn in blocks."""
    lines = stream_lines()
    first, step = json.loads(lines[1]), json.loads(lines[2])
    out = [lines[0]]
    for i in range(10_000):
        p = dict(first if i == 0 else step, train_step=i, timed=i >= 2, step_us=13000.0 + (i * 7919) % 101)
        out.append(json.dumps(p, separators=(",", ":")))
    stream = tmp_path / "long.jsonl"
    stream.write_text("\n".join(out) + "\n")
    rc, err, rss = max_rss_kib(["compare", stream, stream])
    assert rc in (0, 3) and "error" not in err, err
    assert rss < 250 << 10, f"{rss} KiB"


@pytest.mark.parametrize("option", ["accept --rules", "compare --policy"])
def test_a_hostile_toml_file_is_one_line(tmp_path, capsys, option):
    """The rules and policy files (TOML): nested 100,000 deep was a RecursionError; they are read only up to 1 MiB."""
    result = str(DATA / "ci-quiet-1.json")
    command, flag = option.split()
    deep, big = tmp_path / "deep.toml", tmp_path / "big.toml"
    deep.write_text("threshold = " + "[" * 100_000 + "]" * 100_000 + "\n")
    big.write_text("# padding\n" * 200_000)
    for f, says in ((deep, "nested deeper than Python's parser can follow"), (big, "more than the 1048576 an input may be")):
        args = [command, result] + ([result] if command == "compare" else []) + [flag, str(f)]
        assert main(args) == 2
        assert f"{f}: " in (err := one_error(capsys)) and says in err, err


def test_figures_whose_arithmetic_overflows_never_pass_a_comparison(tmp_path, capsys):
    """Finite numbers near a double's largest (1.7e308) keep the policy, but their medians overflow: compare said
    `pass +nan%` under numpy's warnings. Such a record is inconclusive, and said why."""
    record = make_record()
    big = 1.7e308
    stats = {"min": big, "median": big, "mean": big, "p95": big, "max": big, "stdev": 0.0, "cv": 0.0, "n": 20}
    record.update(samples_us=[big] * 20, time_us=stats)
    doc = tmp_path / "huge.json"
    doc.write_text(json.dumps(make_doc([record])))
    assert main(["compare", str(doc), str(doc), "--json", str(tmp_path / "c.json")]) == 3
    strict_json.loads((tmp_path / "c.json").read_text(), "compare --json")
    out, err = capsys.readouterr()
    assert err == "" and "nan" not in out, (out, err)
    assert "inconclusive" in out and "overflow" in out, out
