"""Every `trainscope report|compare|accept|predict|...` is a Python process that builds the parser of every
subcommand: what that imports, each of them pays (a CI gate runs many). The libraries only one command needs —
SQLAlchemy for the history, matplotlib and jinja2 for the HTML report, scipy — are imported inside that command.
SQLAlchemy alone was 0.15 s of CPU per process, pulled in by the history's help text naming its default file."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sqlalchemy", "matplotlib", "jinja2", "scipy", "psycopg2", "psycopg", "torch")


def test_the_entry_point_imports_no_library_that_one_command_alone_needs():
    probe = f"import sys, reports.__main__; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"imported at start: {r.stdout.strip()}"


def test_the_history_still_names_its_default_file_and_variable():
    from reports.history import database, names
    assert (database.DEFAULT_FILE, database.ENV) == (names.DEFAULT_FILE, names.ENV)
    r = subprocess.run([sys.executable, "-m", "reports", "history", "add", "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and names.DEFAULT_FILE in r.stdout and names.ENV in r.stdout, r.stdout + r.stderr
