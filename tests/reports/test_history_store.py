"""`trainscope history add|show|export|import` and series(), against a SQLite file and against a real PostgreSQL server
(the `postgres` fixture: Debian's server in a temporary folder). On the committed real runs (tests/reports/data/)."""
import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic import make_doc, make_train, stats, telemetry

from reports.__main__ import main
from reports.common.load import load_result
from reports.history import database, provenance
from reports.history.series import commits, series

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
QUIET = [DATA / f"ci-quiet-{n}.json" for n in (1, 2, 3)]
# The reports tool as the trainscope binary starts it (bench/reports_commands.cpp): isolated, the package put first.
STARTER = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); "
           "runpy.run_module('reports', run_name='__main__', alter_sys=True)")


@pytest.fixture(autouse=True)
def no_ci(monkeypatch):
    """The tests say the commit themselves: a CI job running them sets GITHUB_SHA and the like."""
    for v in (*provenance.variables(), database.ENV):
        monkeypatch.delenv(v, raising=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return request.getfixturevalue("postgres").new_database()


def history(*args):
    return main(["history", *map(str, args)])


def add_three(db):
    for i, f in enumerate(QUIET):
        assert history("add", f, "--commit", f"{i}" * 40, "--branch", "main", "--db", db) == 0


def test_three_commits_make_each_records_series(db):
    add_three(db)
    found = series(db)
    first = load_result(QUIET[0])
    tracked = [r for r in first.records if r["kind"] in ("collective", "train", "kernel", "link")]
    assert len(found) == len(tracked)  # one deciding metric per record of these kinds
    s = next(s for s in found if s.key == "all_reduce mpi float32 sum 4096 B 2 ranks out-of-place")
    assert (s.metric, s.unit, s.family, s.machine) == ("time_us", "us", "speed", "mpi-2x-AMD_EPYC")
    assert [p.commit for p in s.points] == ["0" * 40, "1" * 40, "2" * 40]
    assert [p.order for p in s.points] == [0, 1, 2]
    for p, f in zip(s.points, QUIET):
        rec = next(r for r in load_result(f).records if r["kind"] == "collective" and r["op"] == "all_reduce"
                   and r["bytes"] == 4096 and not r["in_place"])
        assert p.value == rec["time_us"]["median"] and list(p.samples) == rec["samples_us"]
        assert p.trials == rec["trials"] and p.lower_is_better and p.time == load_result(f).run["started_at"]
        assert p.contention is not None and 0 <= p.contention <= 1  # the quiet runs have telemetry


def test_runs_of_one_commit_share_its_order_and_filters_choose(db):
    add_three(db)
    assert history("add", DATA / "ci-quiet-4.json", "--commit", "1" * 40, "--branch", "main", "--db", db) == 0
    assert history("add", DATA / "ci-quiet-5.json", "--commit", "f" * 40, "--branch", "topic", "--db", db) == 0
    s = series(db, match="ALL_REDUCE mpi float32 sum 4096 B 2 ranks out", metric="time_us")
    assert len(s) == 1
    assert [(p.commit[0], p.order) for p in s[0].points] == [("0", 0), ("1", 1), ("1", 1), ("2", 2), ("f", 3)]
    main_only = series(db, match="all_reduce mpi float32 sum 4096 B 2 ranks out", branch="main")[0]
    assert [p.order for p in main_only.points] == [0, 1, 1, 2]
    assert commits(db) == [c * 40 for c in "012f"] and commits(db, branch="topic") == ["f" * 40]
    assert all(commits(db)[p.order] == p.commit for p in s[0].points)
    assert series(db, machine="no-such-machine") == []
    assert series(db, metric="final_loss") == []  # no training in ci.toml


def test_the_same_file_added_twice_is_said_and_not_doubled(db, capsys):
    add_three(db)
    capsys.readouterr()
    assert history("add", QUIET[0], "--commit", "9" * 40, "--db", db) == 0
    assert f"is in the history already (commit {'0' * 10}" in capsys.readouterr().out
    assert len(series(db)[0].points) == 3


def test_quality_is_a_series_of_its_own(tmp_path):
    db = str(tmp_path / "h.sqlite")
    for i, loss in enumerate((2.2, 2.21, 5.3)):
        doc = make_doc([make_train(loss={"initial": 2.3, "final": loss}, step_time_us=stats([2000.0 + i, 2001.0 + i]),
                                   step_samples_us=[2000.0 + i, 2001.0 + i]),
                        *([telemetry(others=0.5)] if i == 2 else [])])
        doc["run"]["started_at"] = f"2026-11-2{i}T10:00:00.000Z"
        (tmp_path / f"t{i}.json").write_text(json.dumps(doc))
        assert history("add", tmp_path / f"t{i}.json", "--commit", f"c{i}", "--db", db) == 0
    by_metric = {s.metric: s for s in series(db)}
    assert set(by_metric) == {"step_time_us", "final_loss"}  # throughput repeats the step time; no evaluation ran
    loss = by_metric["final_loss"]
    assert loss.family == "quality" and loss.unit == "" and [p.value for p in loss.points] == [2.2, 2.21, 5.3]
    assert [p.samples for p in loss.points] == [(), (), ()]
    assert [p.contention for p in loss.points] == [None, None, 0.5]  # no telemetry: unknown, not zero
    assert by_metric["step_time_us"].points[2].samples == (2002.0, 2003.0)


def test_show_prints_a_block_per_series(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    add_three(db)
    capsys.readouterr()
    assert history("show", "--db", db, "--match", "all_reduce mpi float32 sum 4096 B 2 ranks out", "--last", "2") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("all_reduce mpi float32 sum 4096 B 2 ranks out-of-place | time_us (us, lower is better) "
                                   "| mpi-2x-AMD_EPYC")
    assert "1111111111" in out and "2222222222" in out and "0000000000" not in out
    assert "(1 earlier run(s) not shown" in out
    assert history("show", "--db", db, "--match", "no such record") == 2
    assert "no series in the history matches --match no such record" in capsys.readouterr().err
    assert history("show", "--db", db, "--metric", "busbw") == 2


def test_export_from_sqlite_import_into_postgresql_and_back(tmp_path, postgres, capsys):
    lite, pg, back = str(tmp_path / "a.sqlite"), postgres.new_database(), str(tmp_path / "b.sqlite")
    add_three(lite)
    assert history("export", "-o", tmp_path / "h.json", "--db", lite) == 0
    assert history("import", tmp_path / "h.json", "--db", pg) == 0
    assert history("import", tmp_path / "h.json", "--db", pg) == 0  # a second time adds nothing
    assert "0 run(s) added, 3 there already" in capsys.readouterr().out
    assert history("export", "-o", tmp_path / "h2.json", "--db", pg) == 0
    assert history("import", tmp_path / "h2.json", "--db", back) == 0
    assert series(lite) == series(pg) == series(back)
    first, second = (json.loads((tmp_path / n).read_text()) for n in ("h.json", "h2.json"))
    assert first["runs"] == second["runs"]  # added_at included: the history moved, it was not re-added


def test_commit_and_branch_come_from_the_ci_or_git(tmp_path, monkeypatch, capsys):
    db = tmp_path / "h.sqlite"
    monkeypatch.setenv("GITHUB_SHA", "a" * 40)
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    assert history("add", QUIET[0], "--db", db) == 0
    monkeypatch.delenv("GITHUB_SHA")
    monkeypatch.delenv("GITHUB_REF_NAME")
    monkeypatch.setenv("CI_COMMIT_SHA", "b" * 40)
    monkeypatch.setenv("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "feature")
    assert history("add", QUIET[1], "--db", db) == 0
    monkeypatch.delenv("CI_COMMIT_SHA")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "trunk"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(repo)
    assert history("add", QUIET[2], "--db", db) == 0
    out = capsys.readouterr().out
    assert f"commit {'a' * 10} (main)" in out and f"commit {'b' * 10} (feature)" in out and f"commit {head[:10]} (trunk)" in out
    monkeypatch.chdir(tmp_path)  # not a repository, no CI variable: the commit must be given
    assert history("add", DATA / "ci-quiet-4.json", "--db", db) == 2
    assert "give --commit" in capsys.readouterr().err


def _writer(db, files, commit):
    """One `history add` per file, one after the other, in a process of its own: a CI job adding its runs."""
    add = [sys.executable, "-I", "-c", STARTER, str(ROOT), "history", "add"]
    adds = " && ".join(shlex.join([*add, str(f), "--commit", commit, "--db", db]) for f in files)
    return subprocess.Popen(["sh", "-c", adds], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_writers_at_once_lose_nothing(db, tmp_path):
    """Two processes add four runs each to a history that does not exist yet: both create it at once, then take turns
    (SQLite: BEGIN IMMEDIATE and a wait; PostgreSQL: its own locking); every run is there."""
    files = []
    for n in range(8):  # eight distinct files: the same run with a byte more (the history keys a file by its sha256)
        f = tmp_path / f"run{n}.json"
        f.write_text(QUIET[n % 3].read_text() + " " * (n + 1))
        files.append(f)
    writers = [_writer(db, files[:4], "a" * 40), _writer(db, files[4:], "b" * 40)]
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
    s = series(db, match="all_reduce mpi float32 sum 4096 B 2 ranks out")[0]
    assert sorted(p.commit[0] for p in s.points) == ["a"] * 4 + ["b"] * 4
    assert len({len(x.points) for x in series(db)}) == 1  # every record of every run


def test_a_database_that_is_no_history_is_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "text.sqlite").write_text("not a database\n" * 100)
    con = sqlite3.connect(tmp_path / "foreign.sqlite")
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    good = tmp_path / "good.sqlite"
    add_three(good)
    torn = tmp_path / "torn.sqlite"
    torn.write_bytes(good.read_bytes()[:6000])
    newer = tmp_path / "newer.sqlite"
    newer.write_bytes(good.read_bytes())
    con = sqlite3.connect(newer)
    con.execute("UPDATE ts_meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    capsys.readouterr()
    cases = {"text.sqlite": "not a SQLite database, or a damaged one", "foreign.sqlite": "a SQLite database of another "
             "program (tables: users)", "torn.sqlite": "damaged", "newer.sqlite": "schema version 99 is newer than this "
             "trainscope reads (1)", "missing.sqlite": "no history there"}
    for name, said in cases.items():
        for args in (["show"], ["add", QUIET[0], "--commit", "c"], ["export", "-o", tmp_path / "x.json"]):
            if name == "missing.sqlite" and args[0] == "add":
                continue  # add creates it
            before = (tmp_path / name).read_bytes() if (tmp_path / name).exists() else None
            assert history(*args, "--db", tmp_path / name) == 2, (name, args)
            err = capsys.readouterr().err
            assert said in err and err.count("\n") == 1 and err.startswith("trainscope: error: "), (name, args, err)
            assert ((tmp_path / name).read_bytes() if (tmp_path / name).exists() else None) == before  # left as it was
    assert history("show", "--db", "mysql://h/d") == 2
    assert "a SQLite file or a PostgreSQL database" in capsys.readouterr().err


def test_migrations_run_once_in_order_and_are_recorded(tmp_path, monkeypatch):
    db = str(tmp_path / "h.sqlite")
    add_three(db)
    ran = []

    def v2(conn):
        ran.append("v2")
        database.sa.Table("ts_notes", database.sa.MetaData(), database.sa.Column("note", database.sa.Text)).create(conn)

    monkeypatch.setattr(database, "MIGRATIONS", [*database.MIGRATIONS, v2])
    assert history("show", "--db", db) == 2  # a reader does not migrate: it says who does
    assert history("add", DATA / "ci-quiet-4.json", "--commit", "d", "--db", db) == 0
    assert history("add", DATA / "ci-quiet-5.json", "--commit", "e", "--db", db) == 0
    assert ran == ["v2"]
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM ts_meta WHERE key = 'schema_version'").fetchone() == ("2",)
    assert con.execute("SELECT count(*) FROM ts_notes").fetchone() == (0,)
    assert len(series(db)[0].points) == 5


def test_an_incomplete_run_and_a_foreign_export_are_refused(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    assert history("add", DATA / "train-killed.jsonl", "--commit", "c", "--db", db) == 2
    assert "incomplete" in capsys.readouterr().err and not db.exists()
    (tmp_path / "other.json").write_text(json.dumps({"format": "something", "runs": []}))
    assert history("import", tmp_path / "other.json", "--db", db) == 2
    assert "not a trainscope history export" in capsys.readouterr().err
    (tmp_path / "v9.json").write_text(json.dumps({"format": "trainscope-history", "version": 9, "runs": []}))
    assert history("import", tmp_path / "v9.json", "--db", db) == 2
    assert "history export version 9" in capsys.readouterr().err
    add_three(db)
    assert history("export", "-o", tmp_path / "h.json", "--db", db) == 0
    doc = json.loads((tmp_path / "h.json").read_text())
    doc["runs"][1]["records"][0]["bytes"] = "many"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    assert history("import", tmp_path / "bad.json", "--db", tmp_path / "other.sqlite") == 2
    assert "$.runs[1].records[0]" in capsys.readouterr().err and not (tmp_path / "other.sqlite").exists()


def test_the_default_database_is_named_by_the_environment_else_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert history("add", QUIET[0], "--commit", "c") == 0
    assert (tmp_path / database.DEFAULT_FILE).is_file()
    monkeypatch.setenv(database.ENV, str(tmp_path / "elsewhere.sqlite"))
    assert history("add", QUIET[1], "--commit", "d") == 0
    assert (tmp_path / "elsewhere.sqlite").is_file() and len(series()[0].points) == 1
    assert len(series(str(tmp_path / database.DEFAULT_FILE))[0].points) == 1
    assert os.environ[database.ENV].endswith("elsewhere.sqlite")
