"""`trainscope history report -o DIR`: the trend page of a history built from the committed quiet ci run (every
all_reduce time doubled from commit 6 on, commit 3's run measured under heavy contention), through the reports tool's
entry point: the page names every series, marks the change at its commit, draws the contended run hollow; an empty,
missing or foreign history is one line and exit 2."""
import copy
import html
import json
import re
from pathlib import Path

import pytest
from synthetic import make_doc, make_train, stats, telemetry

from reports.__main__ import main

pytest.importorskip("sqlalchemy", reason="the history needs SQLAlchemy (Debian: python3-sqlalchemy)")
from reports.history import report  # noqa: E402  (after the skip: it imports the store's neighbours)
from reports.history.series import series  # noqa: E402
from reports.history.store import open_store  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
STEP_AT, COMMITS, CONTENDED_AT = 6, 8, 3


def commit(i):
    return f"{i:02d}" * 20


def run_doc(i, scale, others=None):
    """The committed quiet ci run as commit i's: all_reduce times multiplied by `scale`; with `others`, its telemetry
    says other processes used that share of the CPUs."""
    doc = copy.deepcopy(json.loads((DATA / "ci-quiet-1.json").read_text()))
    doc["run"]["label"] = f"commit {i}"  # each file a run of its own (the history keeps a file once)
    for r in doc["records"]:
        if r.get("op") == "all_reduce" and r.get("samples_us"):
            r["samples_us"] = [x * scale for x in r["samples_us"]]
            r["time_us"] = {k: (v * scale if k in ("median", "min", "max", "mean", "p50", "p95", "p99") else v)
                            for k, v in r["time_us"].items()}
    if others is not None:
        host = doc["run"]["hosts"][0]["hostname"]
        doc["records"] = [r for r in doc["records"] if r["kind"] != "telemetry"] + [telemetry(host=host, others=others)]
    return doc


def build(tmp, scales, contended=None):
    db = str(tmp / "history.sqlite")
    for i, scale in enumerate(scales):
        p = tmp / f"run-{i}.json"
        p.write_text(json.dumps(run_doc(i, scale, 0.88 if i == contended else None)))
        assert main(["history", "add", str(p), "--commit", commit(i), "--branch", "main", "--db", db]) == 0
    return db


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    """The history with the 2x step and the contended run, and its report."""
    tmp = tmp_path_factory.mktemp("history")
    db = build(tmp, [1.0] * STEP_AT + [2.0] * (COMMITS - STEP_AT), contended=CONTENDED_AT)
    out = tmp / "trend"
    assert main(["history", "report", "-o", str(out), "--db", db]) == 0
    return db, out


def table_rows(md, first_column):
    """The rows of the summary.md table whose header starts with `first_column`, as lists of cells."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_column} |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def plain(cell):
    return re.sub(r"\\(.)", r"\1", cell)  # markdown_text's escapes undone


def test_the_page_names_every_series_and_draws_a_plot_per_family(stepped, capsys):
    db, out = stepped
    page = (out / "index.html").read_text()
    found = series(db)
    assert len(found) == 35
    for s in found:
        assert html.escape(s.key) in page, s.key
    # ci.toml's five collectives, their seven sizes the lines of one plot each
    pngs = sorted(out.glob("trend_*.png"))
    assert len(pngs) == 5 and page.count("<img src=\"data:image/png;base64,") == 5
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", page)
    assert len(captions) == 5 and captions[0].startswith("all_reduce mpi float32 sum 2 ranks out-of-place: time_us on ")
    assert "a line per size: 1K, 4K, 16K, 64K, 256K, 1M, 4M" in page


def test_the_change_is_named_at_its_commit_and_alerts_as_check_would(stepped):
    _, out = stepped
    md = (out / "summary.md").read_text()
    rows = table_rows(md, "record")
    changes = [r for r in rows if len(r) == 12]
    assert changes, md
    assert {plain(r[0]).split(" ")[0] for r in changes} == {"all_reduce"}, changes  # the doubled op alone
    assert len(changes) == 7  # each of its seven sizes
    for r in changes:
        assert r[3] == "regression" and r[4] == commit(STEP_AT)[:10] and r[5] == commit(STEP_AT - 1)[:10], r
        assert 1.9 < float(r[7]) < 2.1 and r[11] == "yes", r
    # one alert for the one change of the op, naming its sizes, as `history check` would fail on them
    assert "**Status: 1 problem(s)**" in md
    alert = next(line for line in md.splitlines() if line.startswith("**REGRESSION"))
    assert plain(alert).startswith(f"**REGRESSION from commit {commit(STEP_AT)[:10]} (after {commit(STEP_AT - 1)[:10]}): "
                                   "all_reduce mpi float32 sum 2 ranks out-of-place: time_us on ")
    assert all(f"{size} +" in alert for size in ("1K", "4K", "16K", "64K", "256K", "1M", "4M")), alert


def test_a_contended_run_is_listed_and_drawn_hollow(stepped, tmp_path):
    db, out = stepped
    rows = table_rows((out / "summary.md").read_text(), "commit")
    assert [(r[0], r[3], r[4]) for r in rows] == [(commit(CONTENDED_AT)[:10], "88%", "35")]

    class Sink:  # keeps the figure for a look at its markers (PlotSink would save and close it)
        def save(self, fig, name, title, alt):
            self.fig = fig
            return {"kind": "plot"}

    found = series(db, match="sendrecv")
    judged = report.gate.check(found).judged
    fam = report.families(judged)
    assert len(fam) == 1 and len(fam[0].lines) == 7
    sink = Sink()
    report.plot_family(fam[0], [commit(i) for i in range(COMMITS)], report.Policy(), sink, 0)
    hollow = [ln for ln in sink.fig.axes[0].get_lines() if ln.get_markerfacecolor() == "white" and len(ln.get_xdata())]
    assert len(hollow) == 7 and all(list(ln.get_xdata()) == [CONTENDED_AT] for ln in hollow)


def test_a_history_without_a_change_says_so(tmp_path, capsys):
    db = build(tmp_path, [1.0] * 5)
    out = tmp_path / "trend"
    capsys.readouterr()
    assert main(["history", "report", "-o", str(out), "--db", db, "--match", "sendrecv"]) == 0
    said = capsys.readouterr().out
    assert said == (f"history report: {out / 'index.html'} (7 series of 5 commit(s) in 1 plot(s); 0 regression(s) among "
                    "the newest 10 commits; plots and summary.md beside it)\n")
    md = (out / "summary.md").read_text()
    assert "No change of level in any series." in md
    assert "no regression among the newest 10 commits" in md


@pytest.mark.parametrize("what", ["empty", "missing", "foreign", "no match"])
def test_an_empty_missing_or_foreign_history_is_one_line_and_exit_2(tmp_path, capsys, what):
    db = tmp_path / "history.sqlite"
    args = []
    if what == "empty":
        with open_store(str(db), create=True):
            pass
    elif what == "foreign":
        db.write_text("not a database\n" * 100)
    elif what == "no match":
        db = Path(build(tmp_path, [1.0]))
        args = ["--match", "no such record"]
    assert main(["history", "report", "-o", str(tmp_path / "trend"), "--db", str(db), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainscope: error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "trend" / "index.html").exists()


def test_a_worse_loss_is_a_change_of_its_own_plot(tmp_path):
    """Quality is tracked like speed: a training's final loss is a series, drawn in a plot of its metric (on a linear
    axis: an accuracy may be 0), and a worse loss at the same steps is a regression named at its commit."""
    db = str(tmp_path / "h.sqlite")
    losses = [2.2] * STEP_AT + [5.3] * (COMMITS - STEP_AT)
    for i, loss in enumerate(losses):
        doc = make_doc([make_train(loss={"initial": 2.3, "final": loss}, step_time_us=stats([2000.0, 2001.0]),
                                   step_samples_us=[2000.0, 2001.0, 2000.5])])
        doc["run"]["started_at"] = f"2026-11-2{i}T10:00:00.000Z"
        (tmp_path / f"t{i}.json").write_text(json.dumps(doc))
        assert main(["history", "add", str(tmp_path / f"t{i}.json"), "--commit", commit(i), "--db", db]) == 0
    out = tmp_path / "trend"
    assert main(["history", "report", "-o", str(out), "--db", db]) == 0
    md = (out / "summary.md").read_text()
    changes = [r for r in table_rows(md, "record") if len(r) == 12]
    assert [(plain(r[2]), r[3], r[4]) for r in changes] == [("final_loss", "regression", commit(STEP_AT)[:10])], md
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", (out / "index.html").read_text())
    assert [c.split(" on ")[0] for c in captions] == ["final_loss", "step_time_us"]  # the change first


def test_report_with_history_adds_the_trend_of_its_records(stepped, tmp_path, capsys):
    """`report RESULT --history DB`: the result's page gains the trend section of its records (the stepped history:
    the all_reduce change at its commit, in the status line too); a result whose records the history lacks says so;
    a history that is not there is one line, exit 2, no page."""
    db, _ = stepped
    out = tmp_path / "page"
    assert main(["report", str(DATA / "ci-quiet-2.json"), "-o", str(out), "--history", db]) == 0
    page = (out / "index.html").read_text()
    assert '<section id="trend">' in page and '<section id="collectives">' in page
    md = (out / "summary.md").read_text()
    assert f"REGRESSION from commit {commit(STEP_AT)[:10]}" in md and "**Status: 1 problem(s)**" in md
    assert len([r for r in table_rows(md, "record") if len(r) == 12]) == 7

    train = tmp_path / "train.json"
    train.write_text(json.dumps(make_doc([make_train()])))
    assert main(["report", str(train), "-o", str(tmp_path / "other"), "--history", db]) == 0
    assert "has no series of these results' records on their machine(s) (mpi-2x-Test_CPU)" in plain(
        (tmp_path / "other" / "summary.md").read_text())

    capsys.readouterr()
    assert main(["report", str(train), "-o", str(tmp_path / "none"), "--history", str(tmp_path / "none.sqlite")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainscope: error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "none" / "index.html").exists()


def test_a_report_of_a_postgresql_history(postgres, tmp_path, capsys):
    """The README's chain against a team's server: three commits added, a trend page of them."""
    db = postgres.new_database()
    for i in range(3):
        p = tmp_path / f"run-{i}.json"
        p.write_text(json.dumps(run_doc(i, 1.0)))
        assert main(["history", "add", str(p), "--commit", commit(i), "--db", db]) == 0
    capsys.readouterr()
    out = tmp_path / "trend"
    assert main(["history", "report", "-o", str(out), "--db", db]) == 0
    assert "(35 series of 3 commit(s) in 5 plot(s); 0 regression(s) among" in capsys.readouterr().out
    assert len(table_rows((out / "summary.md").read_text(), "record")) == 35  # the series table: no change to list
