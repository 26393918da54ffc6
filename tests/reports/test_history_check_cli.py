"""`trainscope history check` end to end, through the reports tool's entry point: runs added with `history add` to a
SQLite history, a 2x step in the newest commits fails the check (exit 1) and is named at its commit, a history
without one passes (exit 0), a history that is not there is one line and exit 2. Needs the history's store and its
subcommand (the h-store part of issue 38): skipped, saying so, where they are absent."""
import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reports.__main__ import main

store = pytest.importorskip("reports.history.store", reason="the history store (issue 38's h-store part) is not here")

DATA = Path(__file__).resolve().parent / "data"


def run_of(tmp_path, i, scale):
    """The committed quiet ci run as the run of commit i: every time multiplied by `scale`, its label the commit's
    (so that each file is a run of its own)."""
    doc = json.loads((DATA / "ci-quiet-1.json").read_text())
    doc = copy.deepcopy(doc)
    doc["run"]["label"] = f"commit {i}"
    for r in doc["records"]:
        if r.get("samples_us"):
            r["samples_us"] = [x * scale for x in r["samples_us"]]
            r["time_us"] = {k: (v * scale if k in ("median", "min", "max", "mean", "p50", "p95", "p99") else v)
                            for k, v in r["time_us"].items()}
    p = tmp_path / f"run-{i}.json"
    p.write_text(json.dumps(doc))
    return p


def add(tmp_path, db, scales):
    for i, scale in enumerate(scales):
        assert main(["history", "add", str(run_of(tmp_path, i, scale)), "--commit", f"{i:02d}" * 20, "--branch", "main",
                     "--db", db]) == 0


def test_a_2x_step_in_the_newest_commits_fails_the_check(tmp_path, capsys):
    db = str(tmp_path / "history.sqlite")
    add(tmp_path, db, [1.0] * 6 + [2.0] * 2)
    capsys.readouterr()
    junit, md = tmp_path / "check.xml", tmp_path / "check.md"
    assert main(["history", "check", "--db", db, "--junit", str(junit), "--markdown", str(md)]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION: all_reduce mpi float32 sum 4096 B 2 ranks out-of-place [time_us] on " in out
    assert "from commit 0606060606 (after 0505050505): +100.0% [" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert int(suite.get("failures")) == int(suite.get("tests")) > 0
    assert "regression(s)**" in md.read_text()


def test_a_history_without_a_step_passes(tmp_path, capsys):
    db = str(tmp_path / "history.sqlite")
    add(tmp_path, db, [1.0] * 6)
    assert main(["history", "check", "--db", db]) == 0
    assert "0 regression(s) among the newest 10 commits: pass" in capsys.readouterr().out


def test_a_missing_history_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["history", "check", "--db", str(tmp_path / "none.sqlite")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainscope: error: ") and err.count("\n") == 1
