"""Nothing lost: a writer killed with SIGKILL mid-burst, and two processes writing one SQLite store at once.

Each child prints an acknowledgement after every write returns; whatever it acknowledged must be there
afterwards, and the store must open cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.state_servers import BaseXServer, RedisServer
from toolrig.rig import Rig
from toolrig.stores.kv import RedisKeyValueStore, SqliteKeyValueStore
from toolrig.stores.librarian.basex import BaseXLibrarian
from toolrig.stores.librarian.embedded import EmbeddedLibrarian

WRITER = r"""
import json, sys
kind, target, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
prefix = options.get("prefix", "")
if kind == "kv-sqlite":
    from toolrig.stores.kv import SqliteKeyValueStore
    store = SqliteKeyValueStore(__import__("pathlib").Path(target))
    write = lambda i: store.set("ns", f"{prefix}{i}", {"i": i})
elif kind == "kv-redis":
    from toolrig.stores.kv import RedisKeyValueStore
    store = RedisKeyValueStore(target)
    write = lambda i: store.set("ns", f"{prefix}{i}", {"i": i})
elif kind == "memory":
    from toolrig.rig import Rig
    rig = Rig(target, config={})
    def write(i):
        result = rig.call_sync("memory_write", {"file_path": "memory/log.md", "content": f"entry {prefix}{i}"})
        assert not result.is_error, result
elif kind == "librarian-embedded":
    from toolrig.stores.librarian.embedded import EmbeddedLibrarian
    store = EmbeddedLibrarian(__import__("pathlib").Path(target))
    write = lambda i: store.store("burst", f"d{prefix}{i}.xml", f"<d n='{i}'>entry {i}</d>")
elif kind == "librarian-basex":
    from toolrig.stores.librarian.basex import BaseXLibrarian
    store = BaseXLibrarian(target, "admin", options["password"])
    write = lambda i: store.store("burst", f"d{prefix}{i}.xml", f"<d n='{i}'>entry {i}</d>")
limit = options.get("limit")
print("ready", flush=True)
if options.get("wait"):
    sys.stdin.readline()
i = 0
while limit is None or i < limit:
    write(i)
    print(i, flush=True)
    i += 1
"""


def start_writer(kind: str, target: str, **options: object) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, kind, target, json.dumps(options)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    return process


def kill_mid_burst(kind: str, target: str, acknowledged: int, **options: object) -> list[int]:
    """Start a writer, SIGKILL it once it has acknowledged ``acknowledged`` writes; return every acknowledgement."""
    process = start_writer(kind, target, **options)
    assert process.stdout is not None and process.stdin is not None
    acks: list[int] = []
    for line in process.stdout:
        acks.append(int(line))
        if len(acks) >= acknowledged:
            os.kill(process.pid, signal.SIGKILL)
            break
    acks.extend(int(line) for line in process.stdout)  # acknowledged before the kill, still in the pipe
    process.wait()
    process.stdout.close()
    process.stdin.close()
    assert process.returncode == -signal.SIGKILL
    assert acks == list(range(len(acks)))
    return acks


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def test_kv_sqlite_keeps_every_acknowledged_write_after_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "kv.sqlite"
    acks = kill_mid_burst("kv-sqlite", str(path), 150)
    assert integrity(path) == "ok"
    store = SqliteKeyValueStore(path)
    assert all(store.get("ns", str(i)) == (True, {"i": i}) for i in acks)
    store.close()


def test_kv_redis_keeps_every_acknowledged_write_after_the_writer_is_killed(redis_server: RedisServer) -> None:
    RedisKeyValueStore(redis_server.url).client.flushdb()
    acks = kill_mid_burst("kv-redis", redis_server.url, 300, prefix="burst-")
    store = RedisKeyValueStore(redis_server.url)
    assert all(store.get("ns", f"burst-{i}") == (True, {"i": i}) for i in acks)
    store.close()


def test_memory_write_keeps_every_acknowledged_append_after_sigkill(tmp_path: Path) -> None:
    acks = kill_mid_burst("memory", str(tmp_path), 60)
    lines = (tmp_path / "memory" / "log.md").read_text().split("\n")
    assert lines[: len(acks)] == [f"entry {i}" for i in acks]
    assert all(line.startswith("entry ") for line in lines if line)
    with Rig(tmp_path, config={}) as rig:
        found = rig.call_sync("memory_search", {"query": f"entry {acks[-1]}"})
    assert found.output is not None and found.output["count"] >= 1


def test_embedded_librarian_keeps_every_acknowledged_document_after_sigkill(tmp_path: Path) -> None:
    directory = tmp_path / "librarian"
    acks = kill_mid_burst("librarian-embedded", str(directory), 60)
    assert integrity(directory / "index.sqlite") == "ok"
    librarian = EmbeddedLibrarian(directory)
    try:
        assert all(librarian.get(f"burst/d{i}.xml") == f"<d n='{i}'>entry {i}</d>" for i in acks)
        found = {hit.path for hit in librarian.search("entry", "burst", 100)}
        assert {f"burst/d{i}.xml" for i in acks} <= found
    finally:
        librarian.close()


def test_basex_librarian_keeps_every_acknowledged_document_after_the_writer_is_killed(
    basex_server: BaseXServer,
) -> None:
    cleaner = BaseXLibrarian(basex_server.url, "admin", basex_server.password)
    cleaner.drop_all()
    acks = kill_mid_burst("librarian-basex", basex_server.url, 15, password=basex_server.password)
    try:
        assert all(cleaner.get(f"burst/d{i}.xml") == f'<d n="{i}">entry {i}</d>' for i in acks)
    finally:
        cleaner.close()


@pytest.mark.parametrize("kind", ["kv-sqlite", "memory"])
def test_two_processes_writing_one_sqlite_store_lose_no_update(kind: str, tmp_path: Path) -> None:
    target = str(tmp_path / "kv.sqlite") if kind == "kv-sqlite" else str(tmp_path)
    count = 150 if kind == "kv-sqlite" else 40
    writers = [start_writer(kind, target, prefix=p, limit=count, wait=True) for p in ("a", "b")]
    for writer in writers:  # release both at once so their writes interleave
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        assert writer.stdout is not None and writer.stdin is not None
        assert [int(line) for line in writer.stdout] == list(range(count))
        assert writer.wait() == 0  # a "database is locked" would have crashed the writer
        writer.stdout.close()
        writer.stdin.close()
    if kind == "kv-sqlite":
        store = SqliteKeyValueStore(Path(target))
        assert all(store.get("ns", f"{p}{i}") == (True, {"i": i}) for p in "ab" for i in range(count))
        store.close()
    else:
        lines = set((tmp_path / "memory" / "log.md").read_text().split("\n")) - {""}
        assert lines == {f"entry {p}{i}" for p in "ab" for i in range(count)}
