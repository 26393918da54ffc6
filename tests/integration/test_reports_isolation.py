"""The reports subcommands run no code and read no settings from the folder they are started in nor from the results'
folder (issue #34 item 1): `python3 -m reports` put the working directory first on the import path, so a `signal.py`
beside a result ran under `report` and a `json.py` under `compare`; matplotlib read a `./matplotlibrc` (a FIFO there
hung the report). Each subcommand is run through the binary from a folder holding such files, and so is the folder of
its inputs; none of them runs, and each subcommand does its work."""
import json
import os
import shutil

import pytest

from helpers import ROOT, run_trainscope

from reports.common.option_facts import python_tools

DATA = ROOT / "tests" / "reports" / "data"
# Modules every subcommand imports after start-up (not those Python has loaded before the path is set), and the
# ones the binary's probe imports: each, if run, leaves a marker file named after itself.
PLANTED = ("signal", "json", "argparse", "math", "jinja2", "jsonschema", "matplotlib", "numpy", "tomllib", "sqlalchemy")


def plant(folder, markers):
    for name in PLANTED:
        (folder / f"{name}.py").write_text(f"open({str(markers / (folder.name + '-' + name))!r}, 'w').close()\n")


def trace_dir(folder):
    folder.mkdir()
    events = [{"ph": "X", "name": "step 0", "cat": "step", "ts": 0, "dur": 90, "pid": 0, "tid": 0, "args": {"step": 0}}]
    (folder / "rank-0.json").write_text(json.dumps({"traceEvents": events, "distributedInfo": {"rank": 0, "world_size": 1}}))
    return folder


def invocation(command, inputs, out):
    """The arguments `command` runs with here, given the inputs' folder and the output folder, and the exit codes of
    doing its work. Every Python tool of the registry is run (reports/common/option_facts.py); one added without a line here
    fails with its name."""
    runs = {
        "report": (["report", inputs / "r.json", "-o", out / "rep"], {0}),
        "compare": (["compare", inputs / "r.json", inputs / "r.json"], {0, 3}),
        "export": (["export", inputs / "r.json", "--format", "csv", "-o", out / "r.csv"], {0}),
        "import": (["import", inputs / "osu_allreduce.txt", "--ranks", "2", "-o", out / "osu.json"], {0}),
        "analyze": (["analyze", inputs / "trace"], {0}),
        # an absolute floor no measured bandwidth is under: accept judges the host (PASS), it does not stop at "nothing judged"
        "accept": (["accept", inputs / "r.json", "--rules", inputs / "rules.toml"], {0}),
        "history": (["history", "add", inputs / "r.json", "--commit", "c", "--db", out / "h.sqlite"], {0}),
        "predict": (["predict", "check", "--calibration", inputs / "r.json"], {0}),
    }
    assert command in runs, f"the Python tool {command} has no invocation in this test"
    return runs[command]


@pytest.mark.parametrize("command", python_tools())
def test_no_module_of_the_working_or_the_results_folder_runs(tmp_path, command):
    markers, work, inputs = tmp_path / "markers", tmp_path / "work", tmp_path / "results"
    for d in (markers, work, inputs):
        d.mkdir()
    shutil.copy(DATA / "ci-quiet-1.json", inputs / "r.json")
    shutil.copy(DATA / "import" / "osu_allreduce.txt", inputs)
    (inputs / "rules.toml").write_text('[[rule]]\nname = "any all_reduce"\nmetric = "collective.busbw_gbps"\n'
                                       'where = { op = "all_reduce" }\nmin = 1e-9\n')
    trace_dir(inputs / "trace")
    plant(work, markers)
    plant(inputs, markers)
    args, codes = invocation(command, inputs, tmp_path)
    r = run_trainscope(args, cwd=work, timeout=120)
    assert sorted(p.name for p in markers.iterdir()) == [], (r.out, r.err)
    assert r.rc in codes and "internal error" not in r.err, (r.rc, r.out, r.err)


def test_a_matplotlibrc_in_the_working_folder_is_not_read(tmp_path):
    """matplotlib reads ./matplotlibrc before any other settings; a FIFO there blocked the report (and the binary's
    check that python3 has matplotlib) forever, and a file there set how the plots look (text.usetex: LaTeX run on
    a result's labels)."""
    shutil.copy(DATA / "ci-quiet-1.json", tmp_path / "r.json")
    work = tmp_path / "work"
    work.mkdir()
    os.mkfifo(work / "matplotlibrc")
    r = run_trainscope(["report", tmp_path / "r.json", "-o", tmp_path / "rep"], cwd=work, timeout=120)
    assert r.rc == 0, r.err
    assert (tmp_path / "rep" / "index.html").is_file()
