"""Fixtures shared by all tests: the result schema and a validator. Helpers live in helpers.py (command
line) and reports/synthetic.py (synthetic documents)."""
import json
import os
import resource
import sys
import time
from pathlib import Path

import jsonschema
import pytest

TESTS = Path(__file__).resolve().parent
for p in (TESTS.parent, TESTS, TESTS / "reports"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from helpers import SCHEMA_PATH  # noqa: E402

# The suite runs several processes to a core (three workers, each starting ranks and tools). An idle OpenMP thread
# spins before it sleeps (libgomp: ~300,000 polls, GOMP_SPINCOUNT) on the bet that it has a core of its own: here it
# takes the core from a peer that has work. Sampled over a parallel run, libgomp's spin was 15% of all the CPU (perf
# record -a, 120 s). Waiting passively changes no result, only who runs meanwhile; libgomp reads it when it loads,
# so it is set here, for every process the tests start. A test may still set its own.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(scope="session")
def schema():
    doc = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


@pytest.fixture(scope="session")
def validate(schema):
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)

    def check(document):
        errors = sorted(validator.iter_errors(document), key=lambda e: e.json_path)
        assert not errors, "\n".join(f"{e.json_path}: {e.message[:300]}" for e in errors[:10])

    return check


def pytest_configure(config):
    config.addinivalue_line("markers", "long: a file of minutes, started first so that it does not end a parallel run alone "
                                       "(scripts/test.sh runs pytest on several workers, a file to a worker: tests/README.md)")
    config.addinivalue_line("markers", "alone: timing decides the outcome (deadlines, which rank notices first, shaped "
                                       "links): scripts/test.sh runs these after the parallel part, one at a time")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the groups
def pytest_collection_modifyitems(items):
    """The `long` files first, the rest in their order, and a file as the unit of work: under `--dist loadgroup` a
    test goes with its group (`xdist_group`), and a test without one is given its file's, so a file's tests run in
    order on one worker and its module fixtures once (as `--dist loadfile` would), while a file that can be cut
    (the README's chains) gives its parts groups of their own. The longest units start first and the short ones fill
    the other workers meanwhile."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """With TS_TEST_CPU_LOG=FILE, a line per test: the CPU seconds of the processes it started (and waited for), its
    own, and its wall time. The parallel part of the suite is CPU-bound on 2 cores, so its time is cut where this
    file says the CPU goes, not where a test merely waits (pytest's --durations mixes the two)."""
    log = os.environ.get("TS_TEST_CPU_LOG")
    if not log:
        yield
        return
    before, own, wall = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    yield
    after, own_after = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    children = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    itself = own_after.ru_utime + own_after.ru_stime - own.ru_utime - own.ru_stime
    with open(log, "a") as f:
        f.write(f"{children:8.2f} {itself:8.2f} {time.monotonic() - wall:8.2f} {item.nodeid}\n")
