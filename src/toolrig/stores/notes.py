"""What a session keeps beside its messages: the model's todo list and its suggested follow-ups.

Kept in the state directory by session id, so a resumed or paused-and-resumed run (in any process) finds
them again. Values are JSON written by tools that have already validated them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from toolrig.stores.sqlite import Database

MIGRATIONS = (
    """
    CREATE TABLE notes (
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        value TEXT NOT NULL,
        updated REAL NOT NULL,
        PRIMARY KEY (session_id, kind)
    ) WITHOUT ROWID;
    """,
)
NO_SESSION = ""  # calls made outside any session (a CLI call, a plain Python call) share this one


class SessionNotes:
    def __init__(self, path: Path) -> None:
        self.db = Database(path, MIGRATIONS, lazy=True)

    def put(self, session_id: str | None, kind: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        sql = "INSERT OR REPLACE INTO notes (session_id, kind, value, updated) VALUES (?, ?, ?, ?)"
        self.db.write(lambda c: c.execute(sql, (session_id or NO_SESSION, kind, text, time.time())), single=True)

    def get(self, session_id: str | None, kind: str) -> Any | None:
        sql = "SELECT value FROM notes WHERE session_id = ? AND kind = ?"
        row = self.db.read(lambda c: c.execute(sql, (session_id or NO_SESSION, kind)).fetchone())
        return json.loads(row[0]) if row else None

    def close(self) -> None:
        self.db.close()
