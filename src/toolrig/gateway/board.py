"""The runs board: where the workspace's ``toolrig serve`` processes post their runs and take requests for them.

Why: a run started on one process is then listed, read, answered and cancelled on another.

Where: the durable database (``workers.database_url``: PostgreSQL when a team runs several processes, else the
workspace's ``durable.sqlite``). What is shared: each run's summary (status, session, user, open cards) and
people's requests (cancel, answer), which the process running it applies with the same checks as its own API and
whose result it writes back. What is not: the live event stream (a run streams from the process that runs it;
another process's page reads the session). A process that stops beating for ``STALE`` seconds is gone: its runs
read as ``lost`` (their paused states are restored by the next server of the workspace).

Trust model: the database is the operator's (its URL comes from trusted config only). A forwarded request carries
the asking user; the owning process checks it as if asked directly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

STALE = 20.0  # seconds without a beat before a process counts as gone
KEEP = 200  # runs listed from the board

metadata = sa.MetaData()
runs = sa.Table(
    "toolrig_gateway_runs",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("process", sa.String(64), nullable=False),
    sa.Column("session_id", sa.String(128)),
    sa.Column("user", sa.String(64)),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("updated", sa.Float, nullable=False),
)
processes = sa.Table(
    "toolrig_gateway_processes",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("seen", sa.Float, nullable=False),
)
requests = sa.Table(
    "toolrig_gateway_requests",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("process", sa.String(64), nullable=False, index=True),
    sa.Column("run_id", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("user", sa.String(64)),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("status", sa.Integer),  # set by the owner when done
    sa.Column("result", sa.Text),
)


@dataclass(frozen=True)
class Posted:
    process: str
    summary: dict[str, Any]
    alive: bool


@dataclass(frozen=True)
class Request:
    id: int
    run_id: str
    kind: str
    user: str | None
    body: dict[str, Any]


class Board:
    def __init__(self, url: str, process: str) -> None:
        from toolrig.durable.store import engine_for

        self.url = url
        self.process = process
        self.engine = engine_for(url)
        # Another server starting at the same moment creates the same tables: each failure means it made one
        # more of them, so one try per table (and one to finish) ends it. CI: two servers raced on the second.
        for last in [False] * len(metadata.tables) + [True]:
            try:
                metadata.create_all(self.engine)
                break
            except sa.exc.DatabaseError:
                if last:
                    raise

    def close(self) -> None:
        from toolrig.durable.store import release_engine

        with self._tx() as c:
            c.execute(sa.delete(processes).where(processes.c.id == self.process))
        release_engine(self.url)

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    def beat(self) -> None:
        now = time.time()
        with self._tx() as c:
            if c.execute(sa.update(processes).where(processes.c.id == self.process).values(seen=now)).rowcount == 0:
                c.execute(sa.insert(processes).values(id=self.process, seen=now))

    def put(self, summary: dict[str, Any]) -> None:
        """Post a run's summary; an older one (a smaller event count) never overwrites a newer."""
        values = {
            "process": self.process,
            "session_id": summary.get("session_id"),
            "user": summary.get("user"),
            "status": summary["status"],
            "seq": int(summary["events"]),
            "summary": json.dumps(summary, default=str),
            "updated": time.time(),
        }
        with self._tx() as c:
            mine = sa.and_(runs.c.id == summary["id"], runs.c.seq <= values["seq"])
            updated = c.execute(sa.update(runs).where(mine).values(**values)).rowcount
            if not updated and c.execute(sa.select(runs.c.id).where(runs.c.id == summary["id"])).first() is None:
                c.execute(sa.insert(runs).values(id=summary["id"], **values))

    def _alive(self, c: Connection) -> set[str]:
        rows = c.execute(sa.select(processes.c.id).where(processes.c.seen > time.time() - STALE))
        return {str(r[0]) for r in rows}

    def run(self, run_id: str) -> Posted | None:
        with self._tx() as c:
            row = c.execute(sa.select(runs).where(runs.c.id == run_id)).first()
            return None if row is None else self._posted(row, self._alive(c))

    def others(self) -> list[Posted]:
        """Runs other processes posted, the newest first."""
        with self._tx() as c:
            alive = self._alive(c)
            query = sa.select(runs).where(runs.c.process != self.process).order_by(runs.c.updated.desc()).limit(KEEP)
            return [self._posted(row, alive) for row in c.execute(query)]

    def busy_sessions(self) -> set[str]:
        """Sessions a run of another live process is on (running, or waiting for a person)."""
        with self._tx() as c:
            alive = self._alive(c) - {self.process}
            going = sa.and_(runs.c.status.in_(("running", "waiting")), runs.c.process.in_(alive))
            return {str(r[0]) for r in c.execute(sa.select(runs.c.session_id).where(going)) if r[0]}

    @staticmethod
    def _posted(row: Any, alive: set[str]) -> Posted:
        summary = json.loads(row.summary)
        living = row.process in alive
        if not living and summary.get("status") in ("running", "waiting"):
            summary = {**summary, "status": "lost", "pending": []}
        return Posted(str(row.process), summary, living)

    def ask(self, process: str, run_id: str, kind: str, user: str | None, body: dict[str, Any]) -> int:
        row = {"process": process, "run_id": run_id, "kind": kind, "user": user, "body": json.dumps(body)}
        with self._tx() as c:
            key = c.execute(sa.insert(requests).values(**row, created=time.time())).inserted_primary_key
        if key is None:
            raise RuntimeError("the database gave the request no id")
        return int(key[0])

    def result(self, request_id: int) -> tuple[int, dict[str, Any]] | None:
        with self._tx() as c:
            row = c.execute(sa.select(requests.c.status, requests.c.result).where(requests.c.id == request_id)).first()
            if row is None or row.status is None:
                return None
            c.execute(sa.delete(requests).where(requests.c.id == request_id))
            return int(row.status), json.loads(row.result)

    def todo(self) -> list[Request]:
        with self._tx() as c:
            mine = sa.and_(requests.c.process == self.process, requests.c.status.is_(None))
            rows = c.execute(sa.select(requests).where(mine).order_by(requests.c.id)).all()
        return [Request(int(r.id), str(r.run_id), str(r.kind), r.user, json.loads(r.body)) for r in rows]

    def done(self, request_id: int, status: int, result: dict[str, Any]) -> None:
        with self._tx() as c:
            values = {"status": status, "result": json.dumps(result, default=str)}
            c.execute(sa.update(requests).where(requests.c.id == request_id).values(**values))
