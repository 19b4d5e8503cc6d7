"""Who owns which session, when several users share one gateway: the rule every read and answer checks.

Why a table of its own: the session store (and ``toolrig run``) knows no users. A session is claimed by the user
whose run created it, the first time its ``init`` event names it; nobody else's request finds it afterwards (the
operator's token and ``--shared`` aside). Kept in ``.toolrig/gateway.sqlite`` beside the sessions, so every
``toolrig serve`` of the workspace agrees (WAL: one writer, readers never wait).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from toolrig.stores.sqlite import Database

DB_NAME = "gateway.sqlite"
MIGRATIONS = ["CREATE TABLE owners (session TEXT PRIMARY KEY, user TEXT NOT NULL, created REAL NOT NULL)"]


@dataclass(frozen=True)
class Viewer:
    """Who asks: ``user`` None is the operator (the main token); ``sees_all`` for the operator and ``--shared``."""

    user: str | None = None
    sees_all: bool = True

    def may_see(self, owner: str | None) -> bool:
        return self.sees_all or (owner is not None and owner == self.user)


OPERATOR = Viewer()


class Owners:
    def __init__(self, state_dir: Path) -> None:
        self.db = Database.shared(state_dir / DB_NAME, MIGRATIONS)

    def claim(self, session_id: str, user: str) -> None:
        """The first claim holds: a later run on the session (the operator's, say) does not change its owner."""
        self.db.write(
            lambda db: db.execute(
                "INSERT OR IGNORE INTO owners (session, user, created) VALUES (?, ?, ?)",
                (session_id, user, time.time()),
            ),
            single=True,
        )

    def owner(self, session_id: str) -> str | None:
        row = self.db.read(lambda db: db.execute("SELECT user FROM owners WHERE session = ?", (session_id,)).fetchone())
        return None if row is None else str(row[0])

    def sessions_of(self, user: str) -> set[str]:
        rows = self.db.read(lambda db: db.execute("SELECT session FROM owners WHERE user = ?", (user,)).fetchall())
        return {str(r[0]) for r in rows}
