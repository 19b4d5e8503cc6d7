"""Key-value set+get throughput: ours vs raw ``sqlite3`` (same schema and pragmas) and vs raw ``redis-py``.

Ours adds validation (namespace, key, JSON size), the retrying transaction wrapper and TTL handling.
Targets: SQLite >= 0.7x the raw throughput, Redis >= 0.8x. Starts its own redis-server on loopback.

    python benchmarks/kv.py [--rounds N] [--per-round N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from _harness import alternate_sync, fmt_seconds, print_table, result_line
from toolrig.stores.kv import MIGRATIONS, RedisKeyValueStore, SqliteKeyValueStore

VALUE = {"step": 3, "done": ["fetch", "parse"], "note": "x" * 100}


def start_redis(directory: str) -> tuple[subprocess.Popen[str], int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    binary = shutil.which("redis-server")
    assert binary, "apt-get install -y redis-server"
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "Ready to accept connections" in line:
            break
    return process, port


def main(rounds: int, per_round: int) -> None:
    import redis

    tmp = tempfile.mkdtemp()
    ours_sqlite = SqliteKeyValueStore(Path(tmp) / "ours.sqlite")
    raw = sqlite3.connect(Path(tmp) / "raw.sqlite", isolation_level=None)
    for pragma in ("busy_timeout = 2000", "journal_mode = WAL", "synchronous = FULL"):
        raw.execute(f"PRAGMA {pragma}")
    raw.executescript(MIGRATIONS[0])
    counter = itertools.count()

    def raw_sqlite() -> None:
        key = f"k{next(counter) % 1000}"
        with raw:  # the same one-transaction-per-set the store uses
            raw.execute(
                "INSERT OR REPLACE INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)",
                ("ns", key, json.dumps(VALUE), None),
            )
        row = raw.execute(
            "SELECT value FROM kv WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)",
            ("ns", key, time.time()),
        ).fetchone()
        json.loads(row[0])

    def ours_sqlite_op() -> None:
        key = f"k{next(counter) % 1000}"
        ours_sqlite.set("ns", key, VALUE)
        ours_sqlite.get("ns", key)

    server, port = start_redis(tmp)
    url = f"redis://127.0.0.1:{port}/0"
    ours_redis = RedisKeyValueStore(url)
    client = redis.Redis.from_url(url)

    def raw_redis() -> None:
        key = f"toolrig:kv:ns:k{next(counter) % 1000}"
        client.set(key, json.dumps(VALUE))
        json.loads(client.get(key))  # type: ignore[arg-type]

    def ours_redis_op() -> None:
        key = f"k{next(counter) % 1000}"
        ours_redis.set("ns", key, VALUE)
        ours_redis.get("ns", key)

    try:
        for fn in (raw_sqlite, ours_sqlite_op, raw_redis, ours_redis_op):  # warm up
            for _ in range(50):
                fn()
        sqlite_series = alternate_sync({"raw": raw_sqlite, "ours": ours_sqlite_op}, rounds=rounds, per_round=per_round)
        redis_series = alternate_sync({"raw": raw_redis, "ours": ours_redis_op}, rounds=rounds, per_round=per_round * 4)
    finally:
        ours_redis.close()
        client.close()
        server.terminate()
        server.wait()
        ours_sqlite.close()
        raw.close()
        shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    for backend, series in (("sqlite (WAL, synchronous=FULL)", sqlite_series), ("redis (loopback)", redis_series)):
        for name in ("raw", "ours"):
            per_op = series[name].median
            rows.append((backend, name, fmt_seconds(per_op), f"{1 / per_op:,.0f}"))
        rows.append((backend, "throughput ours/raw", f"{series['raw'].median / series['ours'].median:.3f}", ""))
    print_table("key-value set+get", rows, ("backend", "contender", "per set+get", "set+get per second"))
    # Throughput in operations per second, so ratio = ours/peer reads directly against the >= 0.7 / >= 0.8 targets.
    for name, series in (("kv_sqlite", sqlite_series), ("kv_redis", redis_series)):
        print(result_line(name, 1 / series["ours"].median, 1 / series["raw"].median, unit="ops/s"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=200)
    arguments = parser.parse_args()
    main(arguments.rounds, arguments.per_round)
