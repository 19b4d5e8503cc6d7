from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from toolrig.durable.store import Records, sqlite_url
from toolrig.errors import ErrorType, ToolError


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


@pytest.mark.parametrize(
    "link",
    [
        "durable.sqlite",  # the file itself
        "durable.sqlite-wal",  # a sidecar SQLite opens by name
        ".",  # the state dir
    ],
)
def test_the_records_refuse_a_symlink_a_repository_committed_in_the_state_dir(tmp_path: Path, link: str) -> None:
    victim_dir = tmp_path / "outside"
    victim_dir.mkdir()
    victim = victim_dir / "durable.sqlite"
    sqlite3.connect(victim).execute("CREATE TABLE precious (x)").connection.close()
    workspace = tmp_path / "repo"  # not the trusted "ws" fixture the conftest makes
    state = workspace / ".toolrig"
    if link == ".":
        workspace.mkdir()
        state.symlink_to(victim_dir)
    else:
        state.mkdir(parents=True)
        (state / link).symlink_to(victim_dir / link)
    with pytest.raises(ToolError) as caught:
        Records(sqlite_url(state)).step_started("run", "k")
    assert caught.value.error_type is ErrorType.DENIED
    assert [name for (name,) in sqlite3.connect(victim).execute("SELECT name FROM sqlite_master")] == ["precious"]


def test_the_records_refuse_a_symlink_put_in_place_of_their_file_while_running(tmp_path: Path) -> None:
    state = tmp_path / ".toolrig"
    records = Records(sqlite_url(state))
    assert records.step_started("run", "before")
    victim = tmp_path / "victim.sqlite"
    sqlite3.connect(victim).execute("CREATE TABLE precious (x)").connection.close()
    (state / "durable.sqlite").unlink()
    (state / "durable.sqlite").symlink_to(victim)
    with pytest.raises(ToolError) as caught:
        records.step_started("run", "after")
    assert caught.value.error_type is ErrorType.DENIED
    assert [name for (name,) in sqlite3.connect(victim).execute("SELECT name FROM sqlite_master")] == ["precious"]
