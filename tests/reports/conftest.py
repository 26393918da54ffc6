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
