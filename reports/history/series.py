"""A record's history as the detector reads it: one Series per (record identity, machine, metric), its Points in
commit order. The interface between the store (store.py: `history add/show/export/import`) and the change-point
detection (detect.py, check.py: `history check`); nothing here knows how the history is stored.

Order: `Point.order` is the position of the point's commit among all the commits of the history that the query
selects (same machine and branch filters), by when each commit was first added, from 0. The runs of one commit share
its order; a gap in a series' orders is a commit of the history where this record has no run (a record added later,
a suite that skipped it): the range to bisect spans it.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """One run of one record at one commit."""
    commit: str                  # full SHA (or any id the user gave)
    order: int                   # the commit's position in the history (module docstring); runs of a commit share it
    time: str                    # ISO time the run started (the result's run.started_at)
    samples: tuple[float, ...]   # the record's per-iteration (or per-trial) values, in the metric's unit; () if none
    value: float                 # the record's headline value (its median; for metrics without samples, the value)
    contention: float | None     # share of the CPUs other processes used while it ran, 0..1; None: no telemetry
    lower_is_better: bool
    trials: int = 1              # how many trials `samples` are, in equal consecutive blocks (compare's by_trial)


@dataclass(frozen=True)
class Series:
    key: str                     # the record's identity (compare's: reports/common/identity.py), printable
    metric: str                  # the metric's name in identity.METRICS, e.g. "time_us", "step_time_us", "final_loss"
    points: tuple[Point, ...]    # ordered by `order`, then by run time; several points may share a commit
    machine: str = ""            # the machine key (compare's machine_key) the runs are of
    unit: str = ""               # the metric's unit ("us"; "" for a loss)
    family: str = "speed"        # identity.Family's value: "speed" or "quality"


def series(db: str | None = None, *, metric: str | None = None, match: str | None = None, machine: str | None = None,
           branch: str | None = None) -> list[Series]:
    """Every series of the history at `db` (a --db value: a path, sqlite:///PATH or postgresql://...; None: the
    default, store.default_url()), sorted by machine, key and metric. Filters: `metric` its name, `match` a text the
    printable key contains, `machine` a machine key, `branch` the runs added with that branch (orders then count that
    branch's commits only). A database that is missing, corrupt, foreign or newer than this tool: InputError."""
    from .store import open_store  # SQLAlchemy is imported by the history commands only
    with open_store(db, create=False) as store:
        return store.series(metric=metric, match=match, machine=machine, branch=branch)


def commits(db: str | None = None, *, machine: str | None = None, branch: str | None = None) -> list[str]:
    """The history's commits in order (under the same filters as series()): commits(...)[p.order] == p.commit, and
    the commits between two orders of a series are those a record has no run at (what a bisect range spans)."""
    from .store import open_store
    with open_store(db, create=False) as store:
        return store.commits(machine=machine, branch=branch)
