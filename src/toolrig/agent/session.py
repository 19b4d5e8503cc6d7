"""Sessions: every run's history, tool calls and spend, in SQLite under the workspace's ``.toolrig/``.

Messages are stored in the provider-neutral form (``agent/messages.py``), so ``--resume`` can replay a
session to either provider in its own format. Trust model: the database is toolrig's own state, which
tools cannot reach (``Workspace`` refuses ``.toolrig/``); its content is whatever models and tools said.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolrig.agent.errors import RunError
from toolrig.agent.messages import Message
from toolrig.agent.usage import Usage
from toolrig.stores.sqlite import Database

DB_NAME = "sessions.db"

MIGRATIONS = (
    """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, title TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '', provider TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT 'open'
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id), seq INTEGER NOT NULL, turn INTEGER NOT NULL,
    role TEXT NOT NULL, content TEXT NOT NULL, PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL REFERENCES sessions(id), turn INTEGER NOT NULL, model TEXT NOT NULL,
    provider TEXT NOT NULL, input INTEGER NOT NULL, output INTEGER NOT NULL, cache_read INTEGER NOT NULL,
    cache_write INTEGER NOT NULL, cost_usd REAL NOT NULL, stop_reason TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (session_id, turn)
);
CREATE TABLE IF NOT EXISTS tool_calls (
    session_id TEXT NOT NULL REFERENCES sessions(id), call_id TEXT NOT NULL, turn INTEGER NOT NULL,
    name TEXT NOT NULL, args TEXT NOT NULL, is_error INTEGER NOT NULL, preview TEXT NOT NULL,
    duration_ms REAL NOT NULL, PRIMARY KEY (session_id, call_id)
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated);
""",
)
SCHEMA_VERSION = len(MIGRATIONS)

_SHARED_STORES: dict[Path, SessionStore] = {}


def new_session_id() -> str:
    """Sortable by start time, unique without coordination."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    created: float
    updated: float
    title: str
    model: str
    provider: str
    status: str
    turns: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    call_id: str
    turn: int
    name: str
    args: str
    is_error: bool
    preview: str
    duration_ms: float


class SessionStore:
    """One workspace's sessions. Writes are short transactions; WAL lets a second process read meanwhile."""

    def __init__(self, path: Path, *, shared: bool = False) -> None:
        self.db = Database.shared(path, MIGRATIONS) if shared else Database(path, MIGRATIONS)
        self.path = self.db.path

    @classmethod
    def for_state_dir(cls, state_dir: Path) -> SessionStore:
        return cls(state_dir / DB_NAME)

    @classmethod
    def shared(cls, state_dir: Path) -> SessionStore:
        """A store on the process's one open connection to this database (see ``Database.shared``).

        Closing the last connection to a WAL database checkpoints and syncs it (~20 ms here), which a run
        should not pay at its end; the shared connection stays open until the process exits.
        """
        store = _SHARED_STORES.get(state_dir)  # saves building a path and a store per run (~10 µs)
        if store is None or not store.db.is_shared:
            store = _SHARED_STORES[state_dir] = cls(state_dir / DB_NAME, shared=True)
        return store

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------------------ writing

    def create(self, *, model: str, provider: str, title: str = "", session_id: str | None = None) -> str:
        sid = session_id or new_session_id()
        self.db.write(lambda db: self._insert_session(db, sid, model, provider, title), single=True)
        return sid

    @staticmethod
    def _insert_session(db: sqlite3.Connection, sid: str, model: str, provider: str, title: str) -> None:
        now = time.time()
        db.execute(
            "INSERT OR IGNORE INTO sessions (id, created, updated, title, model, provider) VALUES (?, ?, ?, ?, ?, ?)",
            (sid, now, now, title[:200], model, provider),
        )

    def record(
        self,
        session_id: str,
        *,
        turn: int,
        messages: Sequence[Message] = (),
        usage: Usage | None = None,
        model: str = "",
        provider: str = "",
        stop_reason: str = "",
        tool_calls: Iterable[ToolCallRecord] = (),
        status: str | None = None,
        title: str | None = None,
    ) -> None:
        """Append what one turn produced, in one transaction; with ``title`` the session is created first."""
        now = time.time()
        encoded = [(m.role, json.dumps(m.to_json()["content"])) for m in messages]  # before taking the lock
        calls = [
            (session_id, c.call_id, c.turn, c.name, c.args, int(c.is_error), c.preview, c.duration_ms)
            for c in tool_calls
        ]
        sets: list[str] = ["updated = ?"]
        values: list[Any] = [now]
        if model:
            sets += ["model = ?", "provider = ?"]
            values += [model, provider]
        if status is not None:
            sets.append("status = ?")
            values.append(status)
        update = f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?"  # noqa: S608 - fixed column names

        def body(db: sqlite3.Connection) -> None:
            if title is not None:
                self._insert_session(db, session_id, model, provider, title)
            if encoded:
                seq = db.execute(
                    "SELECT COALESCE(MAX(seq), -1) FROM messages WHERE session_id = ?", (session_id,)
                ).fetchone()[0]
                db.executemany(
                    "INSERT INTO messages (session_id, seq, turn, role, content) VALUES (?, ?, ?, ?, ?)",
                    [(session_id, seq + i + 1, turn, role, content) for i, (role, content) in enumerate(encoded)],
                )
            if usage is not None:
                db.execute(
                    "INSERT OR REPLACE INTO turns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session_id, turn, model, provider, usage.input, usage.output, usage.cache_read,
                        usage.cache_write, usage.cost_usd, stop_reason, now,
                    ),
                )  # fmt: skip
            if calls:
                db.executemany("INSERT OR REPLACE INTO tool_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?)", calls)
            db.execute(update, (*values, session_id))

        self.db.write(body)

    def set_status(self, session_id: str, status: str) -> None:
        self.db.write(
            lambda db: db.execute(
                "UPDATE sessions SET status = ?, updated = ? WHERE id = ?", (status, time.time(), session_id)
            ),
            single=True,
        )

    # ------------------------------------------------------------------------------ reading

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        return self.db.read(lambda db: db.execute(sql, params).fetchall())

    def exists(self, session_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM sessions WHERE id = ?", (session_id,)))

    def latest(self) -> str | None:
        rows = self._rows("SELECT id FROM sessions ORDER BY updated DESC, id DESC LIMIT 1", ())
        return str(rows[0][0]) if rows else None

    def messages(self, session_id: str) -> list[Message]:
        """The session's history; a row toolrig did not write that way is a ``RunError``, never a traceback.

        The database is a file in the workspace (a repository can commit one, a crash can cut a row): its
        rows are input. Skipping a bad row would hand the model a history with a hole in it, so none is.
        """
        rows = self._rows("SELECT seq, role, content FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))
        messages = []
        for seq, role, content in rows:
            try:
                messages.append(Message.from_json({"role": role, "content": json.loads(content)}))
            except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
                raise RunError(
                    "state",
                    f"session {session_id!r} in {self.path}: message {seq} is unreadable ({type(exc).__name__}: "
                    f"{str(exc)[:200]}); start a new session, or remove this one",
                ) from None
        return messages

    def next_turn(self, session_id: str) -> int:
        [row] = self._rows(
            "SELECT MAX(t) FROM (SELECT MAX(turn) AS t FROM turns WHERE session_id = ?1 "
            "UNION ALL SELECT MAX(turn) FROM messages WHERE session_id = ?1)",
            (session_id,),
        )
        return 0 if row[0] is None else row[0] + 1

    def usage(self, session_id: str) -> Usage:
        [row] = self._rows(
            "SELECT COALESCE(SUM(input),0), COALESCE(SUM(output),0), COALESCE(SUM(cache_read),0), "
            "COALESCE(SUM(cache_write),0), COALESCE(SUM(cost_usd),0), COUNT(*) FROM turns WHERE session_id = ?",
            (session_id,),
        )
        return Usage(int(row[0]), int(row[1]), int(row[2]), int(row[3]), float(row[4]), int(row[5]))

    def recent(self, limit: int = 50) -> list[SessionInfo]:
        rows = self._rows("SELECT id FROM sessions ORDER BY updated DESC, id DESC LIMIT ?", (limit,))
        return [info for (sid,) in rows if (info := self.info(sid)) is not None]

    def info(self, session_id: str) -> SessionInfo | None:
        rows = self._rows(
            "SELECT id, created, updated, title, model, provider, status FROM sessions WHERE id = ?", (session_id,)
        )
        if not rows:
            return None
        row = rows[0]
        usage = self.usage(session_id)
        sid, created, updated, title, model, provider, status = row
        return SessionInfo(sid, created, updated, title, model, provider, status, usage.calls, usage)

    def tool_calls(self, session_id: str) -> list[ToolCallRecord]:
        rows = self._rows(
            "SELECT call_id, turn, name, args, is_error, preview, duration_ms FROM tool_calls "
            "WHERE session_id = ? ORDER BY turn, rowid",
            (session_id,),
        )
        return [ToolCallRecord(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows]

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        def rows(db: sqlite3.Connection) -> list[dict[str, Any]]:
            cursor = db.execute("SELECT * FROM turns WHERE session_id = ? ORDER BY turn", (session_id,))
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

        return self.db.read(rows)
