from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from toolrig.policy.sqlite import SqliteFile

pytestmark = pytest.mark.anyio

MIGRATIONS = ["CREATE TABLE t (v INTEGER)", "ALTER TABLE t ADD COLUMN w TEXT; CREATE TABLE u (x)"]


def insert(value: int) -> object:
    return lambda conn: conn.execute("INSERT INTO t (v) VALUES (?)", (value,))


async def test_migrations_run_once_in_order_whoever_opens_first(tmp_path: Path) -> None:
    first = SqliteFile(tmp_path / "a.db", MIGRATIONS[:1])
    await first.write(insert(1))
    second = SqliteFile(tmp_path / "a.db", MIGRATIONS)
    await second.write(insert(2))
    assert second.read(lambda c: c.execute("PRAGMA user_version").fetchone()[0]) == 2
    assert second.read(lambda c: c.execute("SELECT v, w FROM t ORDER BY v").fetchall()) == [(1, None), (2, None)]
    assert first.read(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0]) == "wal"
    first.close()
    second.close()


async def test_a_failed_transaction_leaves_nothing_behind(tmp_path: Path) -> None:
    db = SqliteFile(tmp_path / "a.db", MIGRATIONS)

    def half(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t (v) VALUES (1)")
        raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        await db.write(half)
    await db.write(insert(2))
    assert db.read(lambda c: c.execute("SELECT v FROM t").fetchall()) == [(2,)]
    db.close()


async def test_a_write_waits_in_a_thread_while_another_process_holds_the_lock(tmp_path: Path) -> None:
    db = SqliteFile(tmp_path / "a.db", MIGRATIONS)
    await db.write(insert(1))
    other = sqlite3.connect(tmp_path / "a.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t (v) VALUES (2)")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(db.write, insert(3))  # busy at once: moves to a worker thread and waits there
            await anyio.to_thread.run_sync(other.commit)
    other.close()
    assert db.read(lambda c: c.execute("SELECT v FROM t ORDER BY rowid").fetchall()) == [(1,), (2,), (3,)]
    db.close()
