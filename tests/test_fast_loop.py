"""The fast inner loop's lists (tests/conftest.py's SLOW_FILES and SLOW_TESTS) name tests that exist: a
renamed or moved test would otherwise silently come back into `pytest -m "not slow"` (one had: the MCP client
tests moved from tests/adapters to tests/sources and their entry kept the old path)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SLOW_FILES, SLOW_TESTS

ROOT = Path(__file__).resolve().parents[1]

# One collection of the whole suite, in a fresh process, printing the test ids as JSON.
COLLECT = """
import json, sys
import pytest

class Ids:
    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]

ids = Ids()
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"], plugins=[ids])
print("IDS " + json.dumps(ids.ids))
sys.exit(int(code))
"""


@pytest.mark.slow  # collects the whole suite in a new process
def test_every_entry_of_the_slow_lists_names_a_test_that_exists() -> None:
    done = subprocess.run([sys.executable, "-c", COLLECT], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    collected: list[str] = json.loads(done.stdout.split("IDS ", 1)[1].splitlines()[0])
    ids = set(collected) | {nodeid.split("[")[0] for nodeid in collected}  # an entry without [...] is every param
    assert sorted(SLOW_TESTS - ids) == [], "SLOW_TESTS names tests that do not exist"
    assert sorted(SLOW_FILES - {nodeid.split("::")[0] for nodeid in ids}) == [], "SLOW_FILES names missing files"
