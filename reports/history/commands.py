"""`trainscope history add|show|report|export|import`: the command line of the history wing. Each command sets `history_run`,
which the entry point calls. SQLAlchemy is imported inside the commands, not here: the parser is built for every
subcommand of the reports tool, and only the history needs it."""
import argparse
import sys
from typing import Any

from ..common import identity as ids
from ..common.errors import InputError
from ..common.files import check_output_dir, check_output_file, write_atomically
from ..common.load import load_result
from .check import RECENT
from .names import DEFAULT_FILE, ENV

DB_HELP = (f"the history: a SQLite file (created by add and import), sqlite:///PATH, or postgresql://USER@HOST/DATABASE "
           f"(psycopg2; a password from ~/.pgpass or PGPASSWORD rather than the URL); default ${ENV}, else ./{DEFAULT_FILE}")


def add_parsers(sub: Any) -> Any:
    """The `history` command and its own subcommands on the reports tool's subparsers `sub`; returns the history's
    subparsers, for `history check` (check.py's add_check_parser) to join."""
    h = sub.add_parser("history", help="every run kept in a database (SQLite or PostgreSQL): add runs, show a record's "
                       "series across commits, export/import a history")
    hs = h.add_subparsers(dest="history_command", metavar="COMMAND", required=True, parser_class=type(h))
    a = hs.add_parser("add", help="add result documents as runs of a commit (default: the CI's commit, else git's HEAD)")
    a.add_argument("results", nargs="+", metavar="RESULT", help="result documents (trainscope .json; runs that finished)")
    a.add_argument("--commit", help="the commit the runs are of (default: GITHUB_SHA, CI_COMMIT_SHA, BUILDKITE_COMMIT, "
                   "CIRCLE_SHA1, ... when set, else `git rev-parse HEAD` here)")
    a.add_argument("--branch", help="its branch (default: the CI's branch variable, else git's current branch)")
    a.add_argument("--machine", help="the machine the runs are filed under (default: each result's machine key, as "
                   "compare --baseline-dir names it: backend, ranks and device)")
    a.add_argument("--db", help=DB_HELP)
    a.set_defaults(history_run=_add)
    s = hs.add_parser("show", help="each record's series across commits: commit, run time, value, spread, contention")
    s.add_argument("--db", help=DB_HELP)
    _filters(s)
    s.add_argument("--last", type=int, default=10, help="the newest N runs of each series (default 10; 0: all)")
    s.set_defaults(history_run=_show)
    r = hs.add_parser("report", help="trend pages: a plot per family of series across commits, change points marked, a "
                      "table of the changes, summary.md (the HTML report's look)")
    r.add_argument("-o", "--output", required=True, help="directory to write index.html, the plots and summary.md into")
    r.add_argument("--db", help=DB_HELP)
    _filters(r)
    r.add_argument("--title", default="trainscope history")
    r.add_argument("--recent", type=int, default=RECENT, help=f"a regression that starts among the newest N commits is "
                   f"the page's alert, as `history check` fails on it (default {RECENT})")
    r.set_defaults(history_run=_report)
    x = hs.add_parser("export", help="write the whole history as one JSON file (history-v1), for import elsewhere")
    x.add_argument("-o", "--output", required=True, help="the file to write")
    x.add_argument("--db", help=DB_HELP)
    x.set_defaults(history_run=_export)
    i = hs.add_parser("import", help="add the runs of an export file (runs already there are not doubled)")
    i.add_argument("file", metavar="FILE", help="a `history export` file")
    i.add_argument("--db", help=DB_HELP)
    i.set_defaults(history_run=_import)
    return hs


def _filters(p: Any) -> None:
    """The options that choose series, alike for show and report."""
    p.add_argument("--metric", help="only this metric (time_us, step_time_us, final_loss, eval_loss, eval_accuracy; a "
                   "prediction's step_us, abs_error)")
    p.add_argument("--match", help="only the records whose name contains this text (any case), e.g. 'all_reduce'")
    p.add_argument("--machine", help="only this machine key")
    p.add_argument("--branch", help="only the runs added with this branch")


def require_sqlalchemy(what: str = "trainscope history") -> None:
    try:
        import sqlalchemy  # noqa: F401  (the probe of bench/reports_commands.cpp asks for the other commands' modules only)
    except ImportError:
        raise InputError(f"{what} needs SQLAlchemy 1.4 (Debian: python3-sqlalchemy; python3-psycopg2 for "
                         "PostgreSQL)") from None


def run(args: argparse.Namespace) -> int:
    require_sqlalchemy()
    code: int = args.history_run(args)
    return code


def _add(args: argparse.Namespace) -> int:
    from .provenance import commit_and_branch
    from .store import file_sha256, open_store, run_of
    commit, branch = commit_and_branch(args.commit, args.branch)
    if args.machine is not None and not args.machine.strip():
        raise InputError("--machine is empty")
    new = [run_of(load_result(p), file_sha256(p), commit, branch, args.machine) for p in args.results]
    with open_store(args.db, create=True) as store:
        added = store.add(new)
        n_runs, n_commits = store.counts()
    for a in added:
        r = a.run
        if a.new:
            print(f"history: added {r.source}: commit {r.commit[:10]}" + (f" ({r.branch})" if r.branch else "")
                  + f", machine {r.machine}, {len(r.records)} record(s)")
        else:
            print(f"history: {r.source} is in the history already (commit {a.commit_there[:10]}, added {a.added_there}): "
                  "not added again")
    print(f"history: {store.name}: {n_runs} run(s) of {n_commits} commit(s)")
    return 0


def _check_metric(metric: str | None) -> None:
    known = sorted({m.name for ms in ids.METRICS.values() for m in ms if m.decides})
    if metric is not None and metric not in known:
        raise InputError(f"--metric {metric}: not a metric the history tracks ({', '.join(known)})")


def _none_found(args: argparse.Namespace) -> InputError:
    filters = (("--metric", args.metric), ("--match", args.match), ("--machine", args.machine), ("--branch", args.branch))
    given = [f"{o} {v}" for o, v in filters if v is not None]
    return InputError("no series in the history" + (f" matches {', '.join(given)}" if given else ""))


def _show(args: argparse.Namespace) -> int:
    from .series import series
    from .show import format_show
    if args.last < 0:
        raise InputError(f"--last {args.last}: a count of runs, 0 or more (0: all)")
    _check_metric(args.metric)
    found = series(args.db, metric=args.metric, match=args.match, machine=args.machine, branch=args.branch)
    if not found:
        raise _none_found(args)
    sys.stdout.write(format_show(found, args.last))
    return 0


def _report(args: argparse.Namespace) -> int:
    """An empty history (or filters that match nothing) is bad input, as for show and check: a page of nothing would
    pass for a history that had no change."""
    from .report import write_history_report
    from .store import open_store
    check_output_dir(args.output, "-o/--output")
    if args.recent < 1:
        raise InputError(f"--recent {args.recent}: a count of commits, 1 or more")
    _check_metric(args.metric)
    with open_store(args.db, create=False) as store:
        found = store.series(metric=args.metric, match=args.match, machine=args.machine, branch=args.branch)
        commits = store.commits(machine=args.machine, branch=args.branch)
        name = store.name
    if not found:
        raise _none_found(args)
    w = write_history_report(found, commits, args.output, name, args.title, args.recent)
    print(f"history report: {w.index} ({len(found)} series of {len(commits)} commit(s) in {w.plots} plot(s); "
          f"{len(w.check.regressions)} regression(s) among the newest {args.recent} commits; plots and summary.md "
          "beside it)")
    return 0


def _export(args: argparse.Namespace) -> int:
    from .store import open_store
    from .transfer import export_text
    check_output_file(args.output, "-o/--output")
    with open_store(args.db, create=False) as store:
        text = export_text(store.all_runs())
        name = store.name
    write_atomically(args.output, text)
    print(f"history: exported {name} to {args.output}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from .store import open_store
    from .transfer import read_export
    new = read_export(args.file)
    with open_store(args.db, create=True) as store:
        added = store.add(new)
        n_runs, n_commits = store.counts()
    fresh = sum(a.new for a in added)
    print(f"history: imported {args.file}: {fresh} run(s) added, {len(added) - fresh} there already; "
          f"{store.name}: {n_runs} run(s) of {n_commits} commit(s)")
    return 0
