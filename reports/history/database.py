"""Where a history lives and its schema: a --db value made a database URL, the tables, the versioned migrations, and
the checks that turn a file that is no history (corrupt, foreign, newer than this tool) into one line.

One library for both stores, SQLAlchemy Core 1.4 (Debian's python3-sqlalchemy), with psycopg2 for PostgreSQL: the
tables and queries are written once, as SQLAlchemy constructs, and each dialect renders them. What is SQLite's own
is the driver's transaction handling (_serialize_sqlite_writers), not SQL.

The schema's version is a row of ts_meta; MIGRATIONS are the steps from each version to the next, run in order in one
transaction. A database at a version above len(MIGRATIONS) was written by a newer trainscope: it is refused, not read.
Every table is named ts_*: a team's PostgreSQL database may hold other things; a SQLite file that holds other tables
is another program's, and is refused.
"""
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from ..common.errors import InputError
from .names import DEFAULT_FILE, ENV

FORMAT = "trainscope-history"  # ts_meta's "format": what tells our database from another program's
# How long a writer waits for another to finish (seconds): two CI jobs adding at once take turns, neither fails.
LOCK_WAIT_S = 120

metadata = sa.MetaData()
meta = sa.Table("ts_meta", metadata,
                sa.Column("key", sa.String(64), primary_key=True),
                sa.Column("value", sa.Text, nullable=False))
runs = sa.Table(
    "ts_runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),  # the add order: commits are ordered by it
    sa.Column("sha256", sa.String(64), nullable=False, unique=True),    # of the result file: the same file is added once
    sa.Column("commit", sa.String(200), nullable=False),
    sa.Column("branch", sa.String(200), nullable=False),
    sa.Column("machine", sa.String(200), nullable=False),
    sa.Column("started_at", sa.String(64), nullable=False),             # the run's, as its result states it
    sa.Column("added_at", sa.String(64), nullable=False),
    sa.Column("label", sa.Text, nullable=False),
    sa.Column("hosts", sa.Text, nullable=False),                        # the hostnames, comma-separated
    sa.Column("contention", sa.Float, nullable=True),                   # contention.share with no limits; NULL: no telemetry
    sa.Column("source", sa.Text, nullable=False),                       # the file's name as added
)
records = sa.Table(
    "ts_records", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("ts_runs.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("kind", sa.String(40), nullable=False),
    sa.Column("identity", sa.Text, nullable=False),  # identity.identity as JSON: what pairs a record across runs
    sa.Column("key", sa.Text, nullable=False),       # identity.describe: the printable name, which --match searches
    sa.Column("doc", sa.Text, nullable=False),       # the record as the result held it: metrics are read from it
)


def _v1(conn: Connection) -> None:
    metadata.create_all(conn, tables=[runs, records])


# Version N is reached by MIGRATIONS[N - 1]. A change of schema appends a function (sa.DDL or table constructs on the
# connection), never edits one that shipped: databases out there are at every version.
MIGRATIONS: list[Callable[[Connection], None]] = [_v1]


@dataclass(frozen=True)
class Location:
    url: sa.engine.URL
    name: str             # what messages call it: the file's path, or the URL without its password
    path: Path | None     # the SQLite file; None for a server


def locate(db: str | None) -> Location:
    """The database a --db value names: a path or sqlite:///PATH (a SQLite file), postgresql://... (a server); None:
    $TRAINSCOPE_HISTORY, else ./trainscope-history.sqlite."""
    text = db if db is not None else os.environ.get(ENV) or DEFAULT_FILE
    if not text.strip():
        raise InputError("--db is empty: give a file, sqlite:///PATH or postgresql://USER@HOST/DATABASE")
    if "://" not in text:
        path = Path(text).expanduser().absolute()
        return Location(sa.engine.URL.create("sqlite", database=str(path)), str(text), path)
    try:
        url = sa.engine.make_url(text)
    except ArgumentError:
        raise InputError(f"--db {text.split('@')[-1]}: not a database URL (sqlite:///PATH or postgresql://...)") from None
    backend = url.get_backend_name()
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise InputError("--db sqlite: give a file (sqlite:///relative/path or sqlite:////absolute/path)")
        path = Path(url.database).expanduser().absolute()
        return Location(url.set(database=str(path)), url.database, path)
    if backend == "postgresql":
        if url.get_driver_name() != "psycopg2":
            raise InputError(f"--db {_hidden(url)}: the PostgreSQL driver here is psycopg2 (postgresql:// or "
                             "postgresql+psycopg2://)")
        return Location(url, _hidden(url), None)
    raise InputError(f"--db {_hidden(url)}: a history is a SQLite file or a PostgreSQL database, not {backend}")


def _hidden(url: sa.engine.URL) -> str:
    return url.render_as_string(hide_password=True)


def _serialize_sqlite_writers(engine: Engine) -> None:
    """pysqlite begins a transaction at the first write, after the reads before it took a shared lock; two writers
    that both read first then deadlock, and SQLite fails one at once ("database is locked") instead of waiting. Each
    transaction takes the write lock at its start (BEGIN IMMEDIATE) instead, and the second writer waits for the first
    (the connection's timeout): SQLAlchemy's documented recipe for pysqlite."""
    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        dbapi_connection.isolation_level = None  # the driver emits no BEGIN of its own
        dbapi_connection.execute("PRAGMA foreign_keys = ON")

    @sa.event.listens_for(engine, "begin")
    def _begin(conn):  # type: ignore[no-untyped-def]
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def engine_for(loc: Location) -> Engine:
    try:
        if loc.path is not None:
            engine = sa.create_engine(loc.url, future=True, poolclass=sa.pool.NullPool,
                                      connect_args={"timeout": LOCK_WAIT_S})
            _serialize_sqlite_writers(engine)
            return engine
        return sa.create_engine(loc.url, future=True, poolclass=sa.pool.NullPool, connect_args={"connect_timeout": 10})
    except NoSuchModuleError:
        raise InputError(f"--db {loc.name}: no SQLAlchemy dialect for it here") from None
    except ImportError as e:
        raise InputError(f"--db {loc.name}: needs the Python module {e.name} (Debian: python3-psycopg2)") from None


def problem(loc: Location, e: DBAPIError) -> InputError:
    """What the driver's error means to a user, in one line."""
    text = " ".join(str(e.orig).split()) if e.orig is not None else str(e)
    if loc.path is not None:
        if "not a database" in text or "malformed" in text:
            return InputError(f"{loc.name}: not a trainscope history: not a SQLite database, or a damaged one ({text})")
        return InputError(f"{loc.name}: {text}")
    return InputError(f"{loc.name}: {text[:300]}")


def _check_file(loc: Location, create: bool) -> None:
    assert loc.path is not None
    if loc.path.is_dir():
        raise InputError(f"{loc.name}: a directory, not a history file")
    if not loc.path.exists():
        if not create:
            raise InputError(f"{loc.name}: no history there (`trainscope history add` creates one; --db or ${ENV} "
                             "names another)")
        if not loc.path.parent.is_dir():
            raise InputError(f"{loc.name}: its folder {loc.path.parent} does not exist")
    elif not os.access(loc.path, os.R_OK):
        raise InputError(f"{loc.name}: cannot read it (permission denied)")


def _version(conn: Connection, loc: Location) -> int:
    """The schema version of the database on `conn`: 0 for one with no history yet. A database that is another
    program's, or one a newer trainscope wrote, is an InputError."""
    tables = set(sa.inspect(conn).get_table_names())
    ours = {t for t in tables if t.startswith("ts_")}
    if meta.name not in tables:
        if loc.path is not None and tables:
            listed = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise InputError(f"{loc.name}: not a trainscope history: a SQLite database of another program (tables: {listed})")
        if ours:
            raise InputError(f"{loc.name}: not a trainscope history: it has {', '.join(sorted(ours))} but no {meta.name}")
        return 0
    rows = dict(conn.execute(sa.select(meta.c.key, meta.c.value)).all())
    if rows.get("format") != FORMAT or not str(rows.get("schema_version", "")).isdigit():
        raise InputError(f"{loc.name}: not a trainscope history: its {meta.name} table is another program's")
    version = int(rows["schema_version"])
    if version > len(MIGRATIONS):
        raise InputError(f"{loc.name}: history schema version {version} is newer than this trainscope reads "
                         f"({len(MIGRATIONS)}): use a newer trainscope")
    return version


def _migrate(conn: Connection, loc: Location) -> None:
    version = _version(conn, loc)
    if version == len(MIGRATIONS):
        return
    if version == 0:
        metadata.create_all(conn, tables=[meta])
        conn.execute(sa.insert(meta), [{"key": "format", "value": FORMAT}, {"key": "schema_version", "value": "0"}])
    for step in MIGRATIONS[version:]:
        step(conn)
    conn.execute(sa.update(meta).where(meta.c.key == "schema_version").values(value=str(len(MIGRATIONS))))


@contextmanager
def opened(db: str | None, create: bool) -> Iterator[tuple[Engine, Location]]:
    """The engine of the history at `db`, its schema current: created or migrated when `create` (a writer), only
    checked otherwise (a reader: a database of an older schema is migrated by the next writer, read as it is now)."""
    loc = locate(db)
    if loc.path is not None:
        _check_file(loc, create)
    engine = engine_for(loc)
    try:
        if create:
            _create_or_migrate(engine, loc)
        else:
            with engine.connect() as conn:
                version = _version(conn, loc)
            if version == 0:
                raise InputError(f"{loc.name}: no history there yet (`trainscope history add` creates one)")
            if version < len(MIGRATIONS):
                raise InputError(f"{loc.name}: history schema version {version}, older than this trainscope's "
                                 f"({len(MIGRATIONS)}): `trainscope history add` (or import) upgrades it")
        yield engine, loc
    except DBAPIError as e:
        raise problem(loc, e) from None
    finally:
        engine.dispose()


def _create_or_migrate(engine: Engine, loc: Location) -> None:
    """Migrates in one transaction. Two writers that find a database new at once: SQLite lets one in at a time (BEGIN
    IMMEDIATE); on PostgreSQL the second's CREATE TABLE fails when the first commits, and it reads the version again
    (already current) instead."""
    for attempt in range(3):
        try:
            with engine.begin() as conn:
                _migrate(conn, loc)
            return
        except DBAPIError:
            if attempt == 2 or loc.path is not None:
                raise
