"""Fixtures shared by all tests: the result schema and a validator. Helpers live in helpers.py (command
line) and reports/synthetic.py (synthetic documents)."""
import json
import sys
from pathlib import Path

import jsonschema
import pytest

TESTS = Path(__file__).resolve().parent
for p in (TESTS.parent, TESTS, TESTS / "reports"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from helpers import SCHEMA_PATH  # noqa: E402


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


def pytest_collection_modifyitems(items):
    """The `long` files first, the rest in their order: with a file as the unit of work (`--dist loadfile`), the
    longest units start first and the short ones fill the other worker meanwhile."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
