from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from toolrig.errors import ErrorType, ToolError
from toolrig.workers.dbos_engine import DbosEngine


def test_the_engine_refuses_a_system_database_a_repository_committed_as_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.sqlite"
    sqlite3.connect(victim).execute("CREATE TABLE precious (x)").connection.close()
    state = tmp_path / "ws" / ".toolrig"
    state.mkdir(parents=True)
    (state / "dbos.sqlite").symlink_to(victim)
    engine = DbosEngine(f"sqlite:///{state / 'durable.sqlite'}", str(state))
    with pytest.raises(ToolError) as caught:
        engine.start(root=str(tmp_path / "ws"), concurrency=1)  # refused before DBOS opens anything
    assert caught.value.error_type is ErrorType.DENIED
    assert [name for (name,) in sqlite3.connect(victim).execute("SELECT name FROM sqlite_master")] == ["precious"]
