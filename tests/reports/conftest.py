"""Fixtures of the reports tests."""
import json

import pytest


@pytest.fixture
def write_doc(tmp_path):
    def write(name, doc):
        p = tmp_path / name
        p.write_text(json.dumps(doc))
        return p
    return write


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for this session (postgres_server.py); its new_database() gives each test a database."""
    from postgres_server import Server, binaries
    bindir = binaries()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (Debian: postgresql; scripts/setup.sh installs it)")
    server = Server(bindir).start()
    yield server
    server.stop()
