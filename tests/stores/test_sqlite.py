from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.sqlite import Database

MIGRATIONS = ("CREATE TABLE t (v INTEGER);", "ALTER TABLE t ADD COLUMN w TEXT;")
TWO_ON_ONE_LINE = ["CREATE TABLE t (v INTEGER)", "ALTER TABLE t ADD COLUMN w TEXT; CREATE TABLE u (x)"]


def insert(value: int) -> object:
    return lambda conn: conn.execute("INSERT INTO t (v) VALUES (?)", (value,))


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


def test_a_newer_schema_is_used_as_it_is_when_the_user_accepts_it(tmp_path: Path) -> None:
    Database(tmp_path / "x.sqlite", MIGRATIONS).close()
    db = Database(tmp_path / "x.sqlite", MIGRATIONS[:1], accept_newer=True)
    db.write(lambda conn: conn.execute("INSERT INTO t (v) VALUES (1)"))
    assert db.read(lambda conn: conn.execute("PRAGMA user_version").fetchone()[0]) == 2  # not downgraded
    db.close()


def test_migrations_split_on_statement_ends_not_on_semicolons_inside_strings(tmp_path: Path) -> None:
    script = "CREATE TABLE t (v TEXT DEFAULT 'a;b'); CREATE TABLE u (x);\nINSERT INTO t DEFAULT VALUES;"
    db = Database(tmp_path / "x.sqlite", [script])
    assert db.read(lambda conn: conn.execute("SELECT v FROM t").fetchall()) == [("a;b",)]
    assert db.read(lambda conn: conn.execute("SELECT count(*) FROM u").fetchone()[0]) == 0
    db.close()


def test_a_lazy_database_creates_its_file_only_when_first_used(tmp_path: Path) -> None:
    db = Database(tmp_path / "state" / "x.sqlite", MIGRATIONS, lazy=True)
    assert not (tmp_path / "state").exists()
    db.write(insert(1))
    assert db.read(lambda conn: conn.execute("SELECT v FROM t").fetchall()) == [(1,)]
    db.close()


def test_each_database_keeps_its_own_synchronous_setting(tmp_path: Path) -> None:
    full = Database(tmp_path / "full.sqlite", synchronous="full")
    normal = Database(tmp_path / "normal.sqlite")
    assert full.read(lambda conn: conn.execute("PRAGMA synchronous").fetchone()[0]) == 2
    assert normal.read(lambda conn: conn.execute("PRAGMA synchronous").fetchone()[0]) == 1
    full.close()
    normal.close()
    with pytest.raises(ValueError, match="synchronous must be one of"):
        Database(tmp_path / "bad.sqlite", synchronous="NORMAL; DROP TABLE t")


def test_a_closed_database_reopens_on_next_use(tmp_path: Path) -> None:
    db = Database(tmp_path / "x.sqlite", MIGRATIONS)
    db.write(insert(1))
    db.close()
    assert db.read(lambda conn: conn.execute("SELECT v FROM t").fetchall()) == [(1,)]
    db.close()


# ---------------------------------------------------------------------------------- write_async


@pytest.mark.anyio
async def test_migrations_run_once_in_order_whoever_opens_first(tmp_path: Path) -> None:
    first = Database(tmp_path / "a.db", TWO_ON_ONE_LINE[:1], lazy=True)
    await first.write_async(insert(1))
    second = Database(tmp_path / "a.db", TWO_ON_ONE_LINE, lazy=True)
    await second.write_async(insert(2))
    assert second.read(lambda c: c.execute("PRAGMA user_version").fetchone()[0]) == 2
    assert second.read(lambda c: c.execute("SELECT v, w FROM t ORDER BY v").fetchall()) == [(1, None), (2, None)]
    assert first.read(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0]) == "wal"
    first.close()
    second.close()


@pytest.mark.anyio
async def test_a_failed_async_transaction_leaves_nothing_behind(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db", TWO_ON_ONE_LINE)

    def half(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t (v) VALUES (1)")
        raise ValueError("changed my mind")

    with pytest.raises(ValueError, match="changed my mind"):
        await db.write_async(half)
    await db.write_async(insert(2))
    assert db.read(lambda c: c.execute("SELECT v FROM t").fetchall()) == [(2,)]
    db.close()


@pytest.mark.anyio
async def test_an_async_write_to_a_free_file_runs_on_the_event_loop_thread(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db", TWO_ON_ONE_LINE)
    threads: list[int] = []

    def body(conn: sqlite3.Connection) -> None:
        threads.append(threading.get_ident())
        conn.execute("INSERT INTO t (v) VALUES (1)")

    await db.write_async(body)
    await db.write_async(body, single=True)
    assert threads == [threading.get_ident()] * 2
    db.close()


@pytest.mark.anyio
async def test_an_async_write_waits_in_a_thread_while_another_process_holds_the_lock(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db", TWO_ON_ONE_LINE)
    await db.write_async(insert(1))
    other = sqlite3.connect(tmp_path / "a.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t (v) VALUES (2)")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(db.write_async, insert(3))  # busy at once: moves to a worker thread and waits there
            await anyio.to_thread.run_sync(other.commit)
    other.close()
    assert db.read(lambda c: c.execute("SELECT v FROM t ORDER BY rowid").fetchall()) == [(1,), (2,), (3,)]
    db.close()


@pytest.mark.anyio
async def test_an_async_write_past_the_wait_limit_becomes_unavailable(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db", TWO_ON_ONE_LINE, busy_timeout_ms=1, max_wait=0.2)
    other = sqlite3.connect(tmp_path / "a.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with anyio.fail_after(10), pytest.raises(ToolError) as caught:
        await db.write_async(insert(1))
    assert caught.value.error_type is ErrorType.UNAVAILABLE
    other.execute("ROLLBACK")
    other.close()
    db.close()


# ---------------------------------------------------------------------------------- shared


def test_one_shared_database_per_file_whatever_the_path_spelling(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    first = Database.shared(tmp_path / "x.sqlite", MIGRATIONS)
    assert Database.shared(tmp_path / "sub" / ".." / "x.sqlite", MIGRATIONS) is first
    assert Database.shared(tmp_path / "x.sqlite", MIGRATIONS) is first
    private = Database(tmp_path / "x.sqlite", MIGRATIONS)
    assert first.is_shared and not private.is_shared
    private.close()
    first.close()  # ends the sharing: the next caller gets a new database
    again = Database.shared(tmp_path / "x.sqlite", MIGRATIONS)
    assert again is not first and again.is_shared and not first.is_shared
    again.write(insert(1))
    assert again.read(lambda conn: conn.execute("SELECT v FROM t").fetchall()) == [(1,)]
    again.close()


FORKER = """
import os, sys
from pathlib import Path
from toolrig.stores.sqlite import Database

path, migrations = Path(sys.argv[1]), ["CREATE TABLE t (v TEXT)"]
parent = Database.shared(path, migrations)
parent.write(lambda c: c.execute("INSERT INTO t VALUES ('parent')"))
pid = os.fork()
if pid == 0:
    child = Database.shared(path, migrations)
    fresh = child is not parent and not parent.is_shared
    child.write(lambda c: c.execute("INSERT INTO t VALUES ('child')"))
    child.close()
    os._exit(0 if fresh else 3)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
parent.write(lambda c: c.execute("INSERT INTO t VALUES ('parent again')"))
print([v for (v,) in parent.read(lambda c: c.execute("SELECT v FROM t ORDER BY rowid").fetchall())])
"""


def test_a_forked_child_opens_its_own_shared_database_and_leaves_the_parents_alone(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    done = subprocess.run([sys.executable, "-c", FORKER, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['parent', 'child', 'parent again']"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


# ---------------------------------------------------------------------------------- driver and setup


@pytest.mark.anyio
async def test_setup_runs_on_every_connection_before_it_is_used(tmp_path: Path) -> None:
    def setup(conn: sqlite3.Connection) -> None:
        conn.create_function("double", 1, lambda value: value * 2)

    db = Database(tmp_path / "a.db", TWO_ON_ONE_LINE, setup=setup)
    await db.write_async(lambda conn: conn.execute("INSERT INTO t (v) VALUES (double(2))"))  # the fast connection
    db.write(lambda conn: conn.execute("INSERT INTO t (v) VALUES (double(3))"))  # the waiting one
    assert db.read(lambda conn: conn.execute("SELECT double(v) FROM t ORDER BY v").fetchall()) == [(8,), (12,)]
    db.close()


def test_another_sqlite_driver_gets_the_same_bounded_wait(tmp_path: Path) -> None:
    from pysqlite3 import dbapi2

    db = Database(tmp_path / "a.db", TWO_ON_ONE_LINE, driver=dbapi2, busy_timeout_ms=1, max_wait=0.2)
    assert type(db.connection).__module__.startswith("pysqlite3")
    # Two SQLite libraries in one process do not see each other's locks: the other writer uses the same one.
    other = dbapi2.connect(str(tmp_path / "a.db"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(ToolError) as caught:  # not pysqlite3's own "database is locked"
        db.write(insert(1))
    assert caught.value.error_type is ErrorType.UNAVAILABLE
    other.execute("ROLLBACK")
    other.close()
    db.write(insert(2))
    assert db.read(lambda conn: conn.execute("SELECT v FROM t").fetchall()) == [(2,)]
    db.close()


# ---------------------------------------------------------------------------------- the file at the path
# An open connection holds an inode, not a name: a state dir deleted or replaced under a running process must not
# swallow its later writes (they would go to an unlinked inode and be lost without an error).


def rows_at(path: Path) -> list[int]:
    """What a newcomer opening the path sees (a fresh connection, not the database under test)."""
    conn = sqlite3.connect(path)
    try:
        return [v for (v,) in conn.execute("SELECT v FROM t ORDER BY v")]
    finally:
        conn.close()


def delete_dir(path: Path) -> None:
    """Delete the state dir in one step (``rmtree`` alone races a writer that makes it again meanwhile)."""
    gone = path.parent.with_name(f"gone-{os.urandom(4).hex()}")
    path.parent.rename(gone)
    shutil.rmtree(gone)


def move_dir_away(path: Path) -> None:
    path.parent.rename(path.parent.with_name("moved-away"))


def restore_a_copy(path: Path) -> None:
    """Replace the file by an older copy (a backup restored by rename), sidecars gone: the user's new file."""
    backup = path.with_name("backup.sqlite")
    conn = sqlite3.connect(backup)
    conn.execute("CREATE TABLE t (v INTEGER, w TEXT)")
    conn.execute("INSERT INTO t (v) VALUES (-1)")
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
    conn.commit()
    conn.close()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    os.replace(backup, path)


REPLACEMENTS = {"deleted": delete_dir, "moved away": move_dir_away, "restored from a copy": restore_a_copy}


@pytest.mark.parametrize("replace", REPLACEMENTS.values(), ids=REPLACEMENTS.keys())
@pytest.mark.anyio
async def test_writes_after_the_state_dir_is_replaced_land_in_the_file_now_at_the_path(
    tmp_path: Path, replace: Callable[[Path], None]
) -> None:
    path = tmp_path / ".toolrig" / "x.sqlite"
    db = Database.shared(path, MIGRATIONS)
    db.write(insert(1))
    await db.write_async(insert(2))  # both connections open on the old file
    before = [-1] if replace is restore_a_copy else []
    replace(path)
    db.write(insert(3))
    await db.write_async(insert(4))
    assert rows_at(path) == [*before, 3, 4]
    assert db.read(lambda conn: [v for (v,) in conn.execute("SELECT v FROM t ORDER BY v")]) == [*before, 3, 4]
    assert Database.shared(path, MIGRATIONS) is db  # still the one shared database, now on the new file
    db.close()


@pytest.mark.anyio
async def test_a_symlink_put_where_the_open_file_was_is_refused_not_followed(tmp_path: Path) -> None:
    path = tmp_path / ".toolrig" / "x.sqlite"
    elsewhere = tmp_path / "elsewhere.sqlite"
    db = Database(path, MIGRATIONS)
    db.write(insert(1))
    Database(elsewhere, MIGRATIONS).close()
    path.unlink()
    path.symlink_to(elsewhere)
    with pytest.raises(ToolError) as caught:
        db.write(insert(2))
    assert caught.value.error_type is ErrorType.DENIED
    with pytest.raises(ToolError) as caught:
        await db.write_async(insert(3))
    assert caught.value.error_type is ErrorType.DENIED
    assert rows_at(elsewhere) == []  # nothing written through the link
    db.close()


def test_a_database_kept_open_elsewhere_in_the_process_sees_the_replacement_too(tmp_path: Path) -> None:
    path = tmp_path / ".toolrig" / "x.sqlite"
    shared, private = Database.shared(path, MIGRATIONS), Database(path, MIGRATIONS)
    shared.write(insert(1))
    delete_dir(path)
    private.write(insert(2))  # reopens: makes the directory and the file anew, migrated
    assert shared.read(lambda conn: conn.execute("SELECT v FROM t").fetchall()) == [(2,)]
    shared.write(insert(3))
    assert rows_at(path) == [2, 3]
    shared.close()
    private.close()


STEPS = st.lists(
    st.sampled_from(["write", "write_async", "read", *REPLACEMENTS]),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_after_any_sequence_of_writes_and_replacements_the_file_at_the_path_holds_every_write_since(
    tmp_path: Path, steps: list[str]
) -> None:
    home = Path(tempfile.mkdtemp(dir=tmp_path))
    path = home / ".toolrig" / "x.sqlite"
    db = Database(path, MIGRATIONS, lazy=True)
    expected: list[int] = []  # what the file now at the path must hold
    for number, step in enumerate(steps):
        if step in REPLACEMENTS:
            if path.exists():
                REPLACEMENTS[step](path)
                expected = [-1] if step == "restored from a copy" else []
                shutil.rmtree(home / "moved-away", ignore_errors=True)
        elif step == "read":
            assert db.read(lambda conn: [v for (v,) in conn.execute("SELECT v FROM t ORDER BY v")]) == expected
        else:
            if step == "write":
                db.write(insert(number))
            else:
                anyio.run(db.write_async, insert(number))
            expected.append(number)
        if path.exists():
            assert rows_at(path) == expected
    db.close()


@pytest.mark.anyio
async def test_a_running_rigs_audit_and_rate_limits_follow_a_deleted_state_dir(workspace: Path) -> None:
    from tests.support.sample_tools import all_tools
    from toolrig.policy.audit import AuditLog
    from toolrig.registry import Registry
    from toolrig.rig import Rig

    with Rig(workspace, config={"rate_limits": {"echo": "2/hour"}}, registry=Registry(all_tools())) as rig:
        assert [(await rig.call("echo", {"text": str(n)})).is_error for n in range(3)] == [False, False, True]
        shutil.rmtree(workspace / ".toolrig")
        result = await rig.call("echo", {"text": "after"})  # a new bucket file: the limit starts again
        assert not result.is_error
        (row,) = AuditLog(workspace / ".toolrig").query()  # the row is in the file a reader now finds
        assert row.args == {"text": "after"} and row.call_id == result.meta.call_id


def test_a_key_value_store_follows_a_deleted_state_dir(tmp_path: Path) -> None:
    from toolrig.stores.kv import SqliteKeyValueStore

    path = tmp_path / ".toolrig" / "kv.sqlite"
    store = SqliteKeyValueStore(path)
    store.set("ns", "before", 1)
    delete_dir(path)
    store.set("ns", "after", 2)
    again = SqliteKeyValueStore(path)
    assert again.get("ns", "after") == (True, 2) and again.get("ns", "before") == (False, None)
    again.close()
    store.close()


@pytest.mark.anyio
async def test_a_write_after_the_whole_workspace_is_deleted_is_a_clear_error_not_a_lost_row(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    path = workspace / ".toolrig" / "x.sqlite"
    workspace.mkdir()
    db = Database(path, MIGRATIONS)
    db.write(insert(1))
    shutil.rmtree(workspace)  # the trusted base is gone: nothing to recreate the state dir in
    with pytest.raises(ToolError) as caught:
        db.write(insert(2))
    assert caught.value.error_type is ErrorType.UNAVAILABLE and str(workspace) in caught.value.message
    with pytest.raises(ToolError) as caught:
        await db.write_async(insert(3))
    assert caught.value.error_type is ErrorType.UNAVAILABLE and str(workspace) in caught.value.message
    assert not workspace.exists()
    db.close()


def test_threads_and_an_event_loop_writing_while_the_state_dir_is_replaced_lose_nothing_written_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".toolrig" / "x.sqlite"
    db = Database(path, MIGRATIONS)
    stop, errors = threading.Event(), []

    def keep_writing(write: Callable[[int], None], base: int) -> None:
        number = base
        while not stop.is_set():
            try:
                write(number)
            except BaseException as exc:  # any error at all is the failure this test looks for
                errors.append(exc)
                return
            number += 1

    async def write_on_the_loop(number: int) -> None:
        await db.write_async(insert(number))

    writers = [
        threading.Thread(target=keep_writing, args=(lambda n: db.write(insert(n)), 1_000_000)),
        threading.Thread(target=keep_writing, args=(lambda n: db.write(insert(n), single=True), 2_000_000)),
        threading.Thread(target=keep_writing, args=(lambda n: anyio.run(write_on_the_loop, n), 3_000_000)),
    ]
    for thread in writers:
        thread.start()
    try:
        for round_ in range(30):
            db.write(insert(round_))  # the state dir exists (the writers may not have recreated it yet)
            (delete_dir, move_dir_away, restore_a_copy)[round_ % 3](path)
            shutil.rmtree(tmp_path / "moved-away", ignore_errors=True)
    finally:
        stop.set()
        for thread in writers:
            thread.join(timeout=60)
    assert not errors
    db.write(insert(7))  # written after the last replacement: in the file a newcomer finds
    anyio.run(write_on_the_loop, 8)
    assert {7, 8} <= set(rows_at(path))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    db.close()


def test_the_generation_changes_only_when_the_connections_open_on_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / ".toolrig" / "x.sqlite"
    db = Database(path, MIGRATIONS, lazy=True)
    first = db.generation
    db.write(insert(1))
    assert db.generation == first  # reads and writes on the same file keep it
    delete_dir(path)
    assert db.generation != first  # a cache of the old file's rows must reload


def _wal_frames(db: Database) -> int:
    """Frames in the WAL now (a PASSIVE checkpoint reports them and copies what it can)."""
    return int(db.read(lambda conn: conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]))


def _settle(db: Database) -> None:
    """Wait for a background checkpoint in flight (the test then knows exactly what ran)."""
    running = db._checkpointer
    if running is not None:
        running.join(timeout=60)


@pytest.mark.anyio
async def test_checkpoints_run_beside_the_committing_call_and_the_wal_starts_over(tmp_path: Path) -> None:
    db = Database(tmp_path / "x.sqlite", MIGRATIONS, checkpoint_after=10, page_size=1024)
    for value in range(100):
        assert db.write_soon(insert(value), single=True) is None  # committed here, nothing to await
        _settle(db)
    # No commit checkpoints (SQLite's autocheckpoint is off on every connection); a thread of its own does.
    assert db.read(lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == 0
    assert db._fast is not None and db._fast.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert db._checkpointer is not None and db._checkpointer.name == "toolrig-sqlite-checkpoint"
    assert db.read(lambda conn: conn.execute("PRAGMA page_size").fetchone()[0]) == 1024
    assert _wal_frames(db) <= 11  # copied back and started over, not 100 frames long
    assert db.read(lambda conn: conn.execute("SELECT COUNT(*) FROM t").fetchone()[0]) == 100
    db.close()


def test_a_reader_pinning_the_wal_delays_no_writer_and_the_wal_starts_over_once_it_lets_go(tmp_path: Path) -> None:
    db = Database(tmp_path / "x.sqlite", MIGRATIONS, checkpoint_after=5)
    db.write(insert(0), single=True)
    reader = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM t").fetchone()  # a snapshot: no checkpoint may copy past it
    for value in range(1, 40):  # past the restart threshold (4 checkpoints' worth): the restart gives up
        db.write(insert(value), single=True)
        _settle(db)
    assert _wal_frames(db) >= 39
    reader.execute("COMMIT")
    reader.close()
    for value in range(40, 50):
        db.write(insert(value), single=True)
        _settle(db)
    assert _wal_frames(db) < 10
    assert db.read(lambda conn: conn.execute("SELECT COUNT(*) FROM t").fetchone()[0]) == 50
    db.close()


CHECKPOINTING_WRITER = """
import sys
from pathlib import Path
from toolrig.stores.sqlite import Database
db = Database(Path(sys.argv[1]), ["CREATE TABLE t (v INTEGER)"], checkpoint_after=3, page_size=1024)
n = 0
while True:
    db.write(lambda conn: conn.execute("INSERT INTO t (v) VALUES (?)", (n,)), single=True)
    n += 1
    print(n, flush=True)  # acknowledged: committed
"""


def test_a_kill_during_background_checkpoints_loses_no_committed_row(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    acknowledged = 0
    with subprocess.Popen(
        [sys.executable, "-c", CHECKPOINTING_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        try:
            while acknowledged < 300:  # a checkpoint every 3 commits: some are in flight at the kill
                line = child.stdout.readline()
                assert line, "the writer stopped before it was killed"
                acknowledged = int(line)
            child.kill()
            child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
    db = Database(path, ["CREATE TABLE t (v INTEGER)"])
    assert db.read(lambda conn: conn.execute("PRAGMA integrity_check").fetchone()[0]) == "ok"
    assert db.read(lambda conn: conn.execute("SELECT COUNT(*) FROM t").fetchone()[0]) >= acknowledged
    db.close()
