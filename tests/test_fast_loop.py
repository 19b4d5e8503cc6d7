"""The fast inner loop's lists (tests/conftest.py's SLOW_FILES and SLOW_TESTS) name tests that exist: a
renamed or moved test would otherwise silently come back into `pytest -m "not slow"` (one had: the MCP client
tests moved from tests/adapters to tests/sources and their entry kept the old path). And the per-test
directories that tests/conftest.py numbers itself (pytest's numbering lists the whole base temp per test) keep
what pytest's promise: new, empty, the test's own, never a path an earlier test had."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SLOW_FILES, SLOW_TESTS

ROOT = Path(__file__).resolve().parents[1]
SEEN: set[Path] = set()

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


@pytest.mark.parametrize("round_", range(3))
def test_every_test_gets_a_new_empty_tmp_path_and_toolrig_home_never_used_by_another_test(
    round_: int, tmp_path: Path, toolrig_home: Path
) -> None:
    assert tmp_path.is_dir() and not any(tmp_path.iterdir()) and (tmp_path.stat().st_mode & 0o777) == 0o700
    assert tmp_path.name.startswith("test_every_test_gets_a_new_emp") and tmp_path.name.endswith(tuple("0123456789"))
    assert toolrig_home.is_dir() and not any(toolrig_home.iterdir()) and os.environ["TOOLRIG_HOME"] == str(toolrig_home)
    assert tmp_path not in toolrig_home.parents and toolrig_home not in tmp_path.parents
    assert not {tmp_path, toolrig_home} & SEEN, "a per-test directory came back in the same session"
    SEEN.update({tmp_path, toolrig_home})
