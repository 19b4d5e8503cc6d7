from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.sqlite import Database

MIGRATIONS = ("CREATE TABLE t (v INTEGER);", "ALTER TABLE t ADD COLUMN w TEXT;")


def test_migrations_apply_once_in_order_and_record_the_schema_version(tmp_path: Path) -> None:
    db = Database(tmp_path / "x.sqlite", MIGRATIONS)
    db.write(lambda conn: conn.execute("INSERT INTO t VALUES (1, 'a')"))
    db.close()
    again = Database(tmp_path / "x.sqlite", MIGRATIONS)
    assert again.read(lambda conn: conn.execute("PRAGMA user_version").fetchone()[0]) == 2
    assert again.read(lambda conn: conn.execute("SELECT * FROM t").fetchall()) == [(1, "a")]
    assert again.read(lambda conn: conn.execute("PRAGMA journal_mode").fetchone()[0]) == "wal"
    again.close()


def test_a_store_written_by_a_newer_schema_is_refused(tmp_path: Path) -> None:
    Database(tmp_path / "x.sqlite", MIGRATIONS).close()
    with pytest.raises(RuntimeError, match="newer toolrig"):
        Database(tmp_path / "x.sqlite", MIGRATIONS[:1])


def test_a_failed_write_rolls_back_entirely(tmp_path: Path) -> None:
    db = Database(tmp_path / "x.sqlite", MIGRATIONS)

    def half(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t VALUES (1, 'a')")
        raise ValueError("boom")

    with pytest.raises(ValueError):
        db.write(half)
    assert db.read(lambda conn: conn.execute("SELECT count(*) FROM t").fetchone()[0]) == 0
    db.close()


def test_a_write_waits_for_another_connections_lock_instead_of_failing(tmp_path: Path) -> None:
    db = Database(tmp_path / "x.sqlite", MIGRATIONS, busy_timeout_ms=1)
    other = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    done = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            db.write(lambda conn: conn.execute("INSERT INTO t VALUES (2, 'b')"))
        except BaseException as exc:
            errors.append(exc)
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    assert not done.wait(0.2)  # still retrying while the other connection holds the lock
    other.execute("COMMIT")
    assert done.wait(30)
    thread.join()
    assert errors == []
    assert db.read(lambda conn: conn.execute("SELECT v FROM t").fetchall()) == [(2,)]
    other.close()
    db.close()


def test_a_lock_held_past_the_wait_limit_becomes_unavailable_not_database_is_locked(tmp_path: Path) -> None:
    db = Database(tmp_path / "x.sqlite", MIGRATIONS, busy_timeout_ms=1, max_wait=0.2)
    other = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(ToolError) as caught:
        db.write(lambda conn: conn.execute("INSERT INTO t VALUES (3, 'c')"))
    assert caught.value.error_type is ErrorType.UNAVAILABLE
    assert "database is locked" not in caught.value.message
    other.execute("ROLLBACK")
    other.close()
    db.close()
