from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from toolrig.durable.store import Records, sqlite_url


def steps_at(path: Path) -> list[tuple[str, str]]:
    """What a newcomer opening the path sees (its own connection, not the pool under test)."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.execute("SELECT run_id, key FROM toolrig_steps ORDER BY key"))
    finally:
        conn.close()


@pytest.mark.parametrize("how", ["deleted", "moved away"])
def test_the_pooled_records_follow_a_state_dir_deleted_or_moved_while_running(tmp_path: Path, how: str) -> None:
    state = tmp_path / ".toolrig"
    records = Records(sqlite_url(state))
    assert records.step_started("run", "before")  # the pool now holds a connection to this file
    if how == "deleted":
        shutil.rmtree(state)
    else:
        state.rename(tmp_path / "moved-away")
    assert records.step_started("run", "after")  # a new file with its tables, not the unlinked inode
    records.step_done("run", "after", {"n": 2})
    assert steps_at(state / "durable.sqlite") == [("run", "after")]
    assert records.step("run", "after") == ("done", {"n": 2}) and records.step("run", "before") is None
