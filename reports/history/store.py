"""The history's reads and writes: runs added (each result file once), runs listed (export), and each record's series
(series.py's interface). The schema and its checks are database.py's."""
import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from ..common import identity as ids
from ..common.contention import has_telemetry, share
from ..common.errors import InputError
from ..common.files import open_input
from ..common.json_types import Record, number
from ..common.load import Result
from ..common.policy import Policy
from ..compare.compare import machine_key
from .database import Location, opened, records, runs
from .series import Point, Series

# Contention as a share, with no limit below which it counts as none: the detector weighs each run by it.
_UNLIMITED = Policy(max_others_busy=0.0, max_load_per_cpu=0.0)


@dataclass(frozen=True)
class Run:
    """One result as the history holds it: where it came from, and its records that have an identity."""
    sha256: str
    commit: str
    branch: str
    machine: str
    started_at: str
    added_at: str
    label: str
    hosts: str
    contention: float | None
    source: str
    records: tuple[Record, ...]


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open_input(path) as (f, _):
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_of(result: Result, sha256: str, commit: str, branch: str, machine: str | None) -> Run:
    """The run `result` makes in the history. A run that did not finish is refused: a series point from a crashed
    run (a step killed halfway) would read as a change of speed."""
    if result.incomplete:
        raise InputError(f"{result.path} is incomplete ({result.incomplete}): the history keeps runs that finished")
    return Run(sha256, commit, branch, machine or machine_key(result), result.run["started_at"], now(),
               result.label, ",".join(h["hostname"] for h in result.run["hosts"]),
               share(result, _UNLIMITED) if has_telemetry(result) else None, result.path,
               tuple(r for r in result.records if ids.identity(r) is not None))


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Added:
    run: Run
    new: bool            # False: the same file was in the history already
    commit_there: str    # the commit it is filed under in the history (another than asked, for a file added before)
    added_there: str


def _record_row(run_id: int, record: Record) -> dict[str, Any]:
    ident = ids.identity(record)
    assert ident is not None  # run_of kept the records that have one
    return {"run_id": run_id, "kind": record["kind"], "identity": json.dumps(ident, separators=(",", ":")),
            "key": ids.describe(ident), "doc": json.dumps(record, separators=(",", ":"))}


class Store:
    def __init__(self, engine: Engine, loc: Location) -> None:
        self.engine, self.loc = engine, loc

    @property
    def name(self) -> str:
        return self.loc.name

    def add(self, new_runs: Sequence[Run]) -> list[Added]:
        """Adds the runs in one transaction: all of them or, on an error, none. A run whose file is in the history
        already is not added again (a CI job retried, or an export imported twice)."""
        out = []
        with self.engine.begin() as conn:
            for run in new_runs:
                out.append(self._add(conn, run))
        return out

    def _add(self, conn: Connection, run: Run) -> Added:
        there = conn.execute(sa.select(runs.c.commit, runs.c.added_at).where(runs.c.sha256 == run.sha256)).first()
        if there is not None:
            return Added(run, False, there.commit, there.added_at)
        try:
            with conn.begin_nested():  # a writer that added the same file since the select above: it is there
                run_id = conn.execute(sa.insert(runs).values(
                    sha256=run.sha256, commit=run.commit, branch=run.branch, machine=run.machine, started_at=run.started_at,
                    added_at=run.added_at, label=run.label, hosts=run.hosts, contention=run.contention,
                    source=run.source)).inserted_primary_key[0]
                if run.records:
                    conn.execute(sa.insert(records), [_record_row(run_id, r) for r in run.records])
        except IntegrityError:
            there = conn.execute(sa.select(runs.c.commit, runs.c.added_at).where(runs.c.sha256 == run.sha256)).first()
            if there is None:
                raise
            return Added(run, False, there.commit, there.added_at)
        return Added(run, True, run.commit, run.added_at)

    def counts(self) -> tuple[int, int]:
        """How many runs and commits the history holds."""
        with self.engine.connect() as conn:
            n_runs = conn.execute(sa.select(sa.func.count()).select_from(runs)).scalar_one()
            n_commits = conn.execute(sa.select(sa.func.count(sa.distinct(runs.c.commit)))).scalar_one()
        return int(n_runs), int(n_commits)

    def all_runs(self) -> Iterator[Run]:
        """Every run with its records, in the order they were added."""
        with self.engine.connect() as conn:
            docs: dict[int, list[Record]] = defaultdict(list)
            for row in conn.execute(sa.select(records.c.run_id, records.c.doc).order_by(records.c.id)):
                docs[row.run_id].append(json.loads(row.doc))
            for r in conn.execute(sa.select(runs).order_by(runs.c.id)):
                yield Run(r.sha256, r.commit, r.branch, r.machine, r.started_at, r.added_at, r.label, r.hosts, r.contention,
                          r.source, tuple(docs.get(r.id, ())))

    def commits(self, machine: str | None = None, branch: str | None = None) -> list[str]:
        """series.commits() on this store."""
        with self.engine.connect() as conn:
            return list(_order(self._runs(conn, machine, branch)))

    @staticmethod
    def _runs(conn: Connection, machine: str | None, branch: str | None) -> dict[int, Any]:
        """The runs on `machine` and `branch` (None: any) by id."""
        chosen = sa.select(runs.c.id, runs.c.commit, runs.c.machine, runs.c.started_at, runs.c.contention)
        if machine is not None:
            chosen = chosen.where(runs.c.machine == machine)
        if branch is not None:
            chosen = chosen.where(runs.c.branch == branch)
        return {r.id: r for r in conn.execute(chosen)}

    def series(self, metric: str | None = None, match: str | None = None, machine: str | None = None,
               branch: str | None = None) -> list[Series]:
        """series.series() on this store."""
        with self.engine.connect() as conn:
            picked = self._runs(conn, machine, branch)
            order = _order(picked)
            rows = sa.select(records.c.run_id, records.c.kind, records.c.identity, records.c.key, records.c.doc)
            if match:
                rows = rows.where(sa.func.lower(records.c.key).contains(match.lower(), autoescape=True))
            found: dict[tuple[str, str, str], list[tuple[Point, int]]] = defaultdict(list)
            keys: dict[tuple[str, str, str], tuple[str, ids.Metric]] = {}
            for row in conn.execute(rows.order_by(records.c.id)):
                run = picked.get(row.run_id)
                if run is None:
                    continue
                doc = json.loads(row.doc)
                for m in ids.METRICS.get(row.kind, ()):
                    if not m.decides or (metric is not None and m.name != metric):
                        continue  # a derived figure (bandwidth from time) would repeat its source's changes
                    point = _point(doc, m, run, order[run.commit])
                    if point is not None:
                        k = (run.machine, row.identity, m.name)
                        keys[k] = (row.key, m)
                        found[k].append((point, row.run_id))
        out = []
        for k in sorted(found, key=lambda k: (k[0], _natural(keys[k][0]), k[2])):
            key, m = keys[k]
            points = tuple(p for p, _ in sorted(found[k], key=lambda x: (x[0].order, x[0].time, x[1])))
            out.append(Series(key, m.name, points, k[0], m.unit, m.family.value))
        return out


def _order(picked: dict[int, Any]) -> dict[str, int]:
    """Each commit's place: when its first run (of those picked) was added."""
    return {c: i for i, c in enumerate(dict.fromkeys(picked[i].commit for i in sorted(picked)))}


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """'4096 B' before '1048576 B': the numbers in a name compared as numbers."""
    return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", text) if t)


def _point(doc: Record, m: ids.Metric, run: Any, order: int) -> Point | None:
    v = number(ids.find(doc, m.path))
    if v is None:
        return None  # a train record without a held-out evaluation has no eval_loss
    raw = doc.get(m.samples) if m.samples else None
    samples = tuple(x for x in map(number, raw) if x is not None) if isinstance(raw, list) else ()
    trials = doc.get("trials")
    return Point(run.commit, order, run.started_at, samples, v, run.contention, m.lower_is_better,
                 trials if isinstance(trials, int) and trials > 0 else 1)


@contextmanager
def open_store(db: str | None, create: bool) -> Iterator[Store]:
    """The history at `db` (database.locate), created when missing if `create` (the writers: add, import)."""
    with opened(db, create) as (engine, loc):
        yield Store(engine, loc)
