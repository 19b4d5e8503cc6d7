"""The durable records toolrig keeps beside the engine: jobs, tasks (and cron firings), the step journal, workers.

One SQLAlchemy Core schema serves SQLite (the default, ``.toolrig/durable.sqlite``) and PostgreSQL (shared
by workers on many machines). Every state change is one conditional UPDATE or a primary-key INSERT, so two
workers racing for the same firing or task agree on one winner without locks held across calls.
Trust model: rows are written by toolrig itself; texts in them (prompts, summaries) are model- or user-given.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.schema import CreateIndex, CreateTable

from toolrig.sandbox.statedir import prepare_database
from toolrig.stores.sqlite import ensure_file, file_id

log = logging.getLogger("toolrig.durable")

metadata = sa.MetaData()

jobs = sa.Table(
    "toolrig_jobs",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("schedule", sa.String(240), nullable=False),
    sa.Column("zone", sa.String(64), nullable=False),
    sa.Column("prompt", sa.Text, nullable=False),
    sa.Column("agent", sa.String(100)),
    sa.Column("source", sa.String(16), nullable=False),  # config | runtime
    sa.Column("created_by", sa.String(16), nullable=False),  # person | model | config
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("one_shot", sa.Boolean, nullable=False),
    sa.Column("retries", sa.Integer, nullable=False),
    sa.Column("next_fire_at", sa.Float),
)

tasks = sa.Table(
    "toolrig_tasks",
    metadata,
    sa.Column("id", sa.String(120), primary_key=True),
    sa.Column("kind", sa.String(16), nullable=False),  # task | cron
    sa.Column("job_id", sa.String(64)),
    sa.Column("parent_id", sa.String(120)),  # the task (or run) that queued it; subagents (issue 14) reuse it
    sa.Column("prompt", sa.Text, nullable=False),
    sa.Column("agent", sa.String(100)),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("not_before", sa.Float, nullable=False),
    sa.Column("wait_for", sa.String(120)),
    sa.Column("fire_time", sa.Float),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("retries_left", sa.Integer, nullable=False),
    sa.Column("workflow_id", sa.String(160)),
    sa.Column("worker", sa.String(120)),
    sa.Column("started_at", sa.Float),
    sa.Column("ended_at", sa.Float),
    sa.Column("result", sa.Text),  # summary, reason, answer or error
    sa.Column("session_id", sa.String(120)),
    sa.Column("state", sa.Text),  # a paused run's RunState JSON
    sa.Column("decisions", sa.Text),  # a person's approvals for the paused run, JSON
    sa.Column("created_by", sa.String(16), nullable=False),
)
sa.Index("toolrig_tasks_status", tasks.c.status, tasks.c.not_before)
sa.Index("toolrig_tasks_job", tasks.c.job_id, tasks.c.created_at)

steps = sa.Table(
    "toolrig_steps",
    metadata,
    sa.Column("run_id", sa.String(160), primary_key=True),
    sa.Column("key", sa.String(200), primary_key=True),
    sa.Column("state", sa.String(8), nullable=False),  # started | done
    sa.Column("payload", sa.Text),
    sa.Column("updated_at", sa.Float, nullable=False),
)

workers = sa.Table(
    "toolrig_workers",
    metadata,
    sa.Column("id", sa.String(120), primary_key=True),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("heartbeat_at", sa.Float, nullable=False),
)


class Cancelled(Exception):
    """The task was cancelled (or deleted) while its attempt ran; the attempt stops at its next step."""


CHANNEL = "toolrig_tasks"  # PostgreSQL NOTIFY channel: a task became queued
OPEN = ("queued", "submitted", "running")  # a task that will still run without a person
ENDED = ("done", "failed", "cancelled", "missed", "skipped")


def sqlite_url(state_dir: Path) -> str:
    return f"sqlite:///{state_dir / 'durable.sqlite'}"


class _FollowPath:
    """Keeps a pooled SQLite connection on the file now at the path (``stores.sqlite`` explains why).

    A pooled connection holds its file's inode: once the state dir is deleted or replaced, a worker's writes
    would go to an unlinked file. Each checkout compares the path's identity with the file the connection
    was opened on; a mismatch discards the connection (the pool opens a new one, which makes the directory,
    the file and the schema anew).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def before_connect(self, dialect: Any, record: Any, cargs: Any, cparams: Any) -> None:
        # SQLite follows a symlink at the path (or on the way to it): a state dir that came with a repository may
        # hold one, so it is refused before every connect, as the other stores refuse it (``stores.sqlite``).
        prepare_database(self.path)
        record.info["before"] = ensure_file(self.path)

    def connect(self, dbapi_connection: Any, record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        for statement in _SCHEMA:  # IF NOT EXISTS: a few lookups on a file that has its tables
            cursor.execute(statement)
        dbapi_connection.commit()
        cursor.close()
        # Replaced while this connection opened it: the next checkout finds the mismatch and opens anew.
        before = record.info.pop("before", None)
        record.info["file"] = before if before is not None and file_id(self.path) == before else None

    def checkout(self, dbapi_connection: Any, record: Any, proxy: Any) -> None:
        if file_id(self.path) != record.info.get("file"):
            raise sa.exc.DisconnectionError(f"{self.path} was replaced since this connection opened it")


_SCHEMA = [
    *(
        str(CreateTable(table, if_not_exists=True).compile(dialect=sqlite_dialect()))
        for table in metadata.sorted_tables
    ),
    *(
        str(CreateIndex(index, if_not_exists=True).compile(dialect=sqlite_dialect()))
        for table in metadata.sorted_tables
        for index in sorted(table.indexes, key=lambda index: str(index.name))
    ),
]


_engines: dict[str, tuple[Engine, int]] = {}  # by URL: the engine and how many Records hold it
_engines_lock = threading.Lock()


def engine_for(url: str) -> Engine:
    """One engine (and schema check) per URL per process, while anything holds it (``release_engine``)."""
    with _engines_lock:
        engine, holders = _engines.get(url, (None, 0))
        if engine is None:
            if url.startswith("sqlite"):
                follow = _FollowPath(Path(url.removeprefix("sqlite:///")))
                engine = sa.create_engine(url, connect_args={"timeout": 30})
                sa.event.listen(engine, "do_connect", follow.before_connect)
                sa.event.listen(engine, "connect", follow.connect)
                sa.event.listen(engine, "checkout", follow.checkout)
            else:
                engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1), pool_size=5)
            metadata.create_all(engine)
        _engines[url] = (engine, holders + 1)
        return engine


def release_engine(url: str) -> None:
    """One holder of ``url``'s engine is done; the last one closes its pooled connections.

    A process that opens many workspaces (a host of rigs) kept every one's connections (three descriptors
    each, for SQLite) for its whole life.
    """
    with _engines_lock:
        engine, holders = _engines.get(url, (None, 0))
        if engine is None:
            return
        if holders > 1:
            _engines[url] = (engine, holders - 1)
            return
        del _engines[url]
    engine.dispose()


class Records:
    """Typed access to the four tables; methods are small and each is one transaction."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = engine_for(url)
        self._closed = False

    def close(self) -> None:
        """Let go of the engine (the last holder closes its connections); no method may be called after this."""
        if not self._closed:
            self._closed = True
            release_engine(self.url)

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        with self.engine.begin() as conn:
            yield conn

    # ------------------------------------------------------------------ jobs

    def jobs(self) -> list[dict[str, Any]]:
        with self.tx() as c:
            return [dict(r._mapping) for r in c.execute(sa.select(jobs).order_by(jobs.c.created_at, jobs.c.id))]

    def job(self, job_id: str) -> dict[str, Any] | None:
        with self.tx() as c:
            row = c.execute(sa.select(jobs).where(jobs.c.id == job_id)).first()
            return dict(row._mapping) if row else None

    def insert_job(self, row: Mapping[str, Any]) -> None:
        with self.tx() as c:
            c.execute(sa.insert(jobs).values(**row))

    def update_job(self, job_id: str, **values: Any) -> bool:
        with self.tx() as c:
            return c.execute(sa.update(jobs).where(jobs.c.id == job_id).values(**values)).rowcount == 1

    def delete_job(self, job_id: str) -> bool:
        with self.tx() as c:
            return c.execute(sa.delete(jobs).where(jobs.c.id == job_id)).rowcount == 1

    def advance_job(self, job_id: str, expected: float, following: float | None) -> bool:
        """Compare-and-set of the next firing: only the worker whose UPDATE matched owns the firing."""
        with self.tx() as c:
            stmt = (
                sa.update(jobs)
                .where(jobs.c.id == job_id, jobs.c.next_fire_at == expected)
                .values(next_fire_at=following)
            )
            return c.execute(stmt).rowcount == 1

    # ------------------------------------------------------------------ tasks

    def insert_task(self, row: Mapping[str, Any]) -> bool:
        """False when a task with this id exists already (a firing another worker recorded first)."""
        try:
            with self.tx() as c:
                c.execute(sa.insert(tasks).values(**row))
                if row.get("status") == "queued":
                    self._announce(c)
        except sa.exc.IntegrityError:
            return False
        return True

    def task(self, task_id: str) -> dict[str, Any] | None:
        with self.tx() as c:
            row = c.execute(sa.select(tasks).where(tasks.c.id == task_id)).first()
            return dict(row._mapping) if row else None

    def tasks(self, *, status: str | None = None, job_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        query = sa.select(tasks).order_by(tasks.c.created_at.desc(), tasks.c.id).limit(limit)
        if status is not None:
            query = query.where(tasks.c.status == status)
        if job_id is not None:
            query = query.where(tasks.c.job_id == job_id)
        with self.tx() as c:
            return [dict(r._mapping) for r in c.execute(query)]

    def count_open_for_job(self, job_id: str) -> int:
        with self.tx() as c:
            query = sa.select(sa.func.count()).where(tasks.c.job_id == job_id, tasks.c.status.in_(OPEN))
            return int(c.execute(query).scalar_one())

    def due_tasks(self, now: float, limit: int = 200) -> list[dict[str, Any]]:
        query = (
            sa.select(tasks)
            .where(tasks.c.status == "queued", tasks.c.not_before <= now)
            .order_by(tasks.c.not_before, tasks.c.id)
            .limit(limit)
        )
        with self.tx() as c:
            return [dict(r._mapping) for r in c.execute(query)]

    def waiting_tasks(self) -> list[dict[str, Any]]:
        with self.tx() as c:
            return [dict(r._mapping) for r in c.execute(sa.select(tasks).where(tasks.c.status == "waiting"))]

    def set_task(self, task_id: str, *, where_status: tuple[str, ...] | None = None, **values: Any) -> bool:
        stmt = sa.update(tasks).where(tasks.c.id == task_id)
        if where_status is not None:
            stmt = stmt.where(tasks.c.status.in_(where_status))
        with self.tx() as c:
            changed = c.execute(stmt.values(**values)).rowcount == 1
            if changed and values.get("status") == "queued":
                self._announce(c)
            return changed

    def _announce(self, c: Connection) -> None:
        """On PostgreSQL, wake the listening workers when this transaction commits (``listen_for_tasks``)."""
        if self.engine.dialect.name == "postgresql":
            c.execute(sa.text(f"NOTIFY {CHANNEL}"))

    def start_attempt(self, task_id: str, workflow_id: str, worker: str, now: float) -> bool:
        """The workflow claims its task: only while the task is still meant to run this attempt."""
        with self.tx() as c:
            return c.execute(_claim(task_id, workflow_id, worker, now)).rowcount == 1

    def open_attempt(
        self, task_id: str, workflow_id: str, worker: str, now: float
    ) -> tuple[bool, dict[str, Any] | None, dict[str, tuple[str, Any]]]:
        """One transaction for an attempt's start: the claim, the task as it now is, and its journal so far.

        The journal is read once here; the attempt's steps are then written one transaction each (``step_*``).
        """
        with self.tx() as c:
            claimed = c.execute(_claim(task_id, workflow_id, worker, now)).rowcount == 1
            row = c.execute(sa.select(tasks).where(tasks.c.id == task_id)).first()
            recorded = _steps_of(c, workflow_id)
        return claimed, (dict(row._mapping) if row else None), recorded

    # ------------------------------------------------------------------ steps (the journal)

    def step(self, run_id: str, key: str) -> tuple[str, Any] | None:
        with self.tx() as c:
            row = c.execute(
                sa.select(steps.c.state, steps.c.payload).where(steps.c.run_id == run_id, steps.c.key == key)
            ).first()
        if row is None:
            return None
        return row.state, (json.loads(row.payload) if row.payload is not None else None)

    def steps_of(self, run_id: str) -> dict[str, tuple[str, Any]]:
        with self.tx() as c:
            return _steps_of(c, run_id)

    def task_live(self, task_id: str) -> None:
        """Raise ``Cancelled`` if the task was cancelled or deleted."""
        with self.tx() as c:
            _check_live(c, task_id)

    def step_started(self, run_id: str, key: str, *, task_id: str | None = None) -> bool:
        """Record that an effect is about to happen; False if it was recorded before (a replay).

        With ``task_id``, in the same transaction: ``Cancelled`` (and nothing recorded) if the task was cancelled.
        """
        try:
            with self.tx() as c:
                if task_id is not None:
                    _check_live(c, task_id)
                c.execute(sa.insert(steps).values(run_id=run_id, key=key, state="started", updated_at=time.time()))
        except sa.exc.IntegrityError:
            return False
        return True

    def step_done(self, run_id: str, key: str, payload: Any, *, task_id: str | None = None, new: bool = False) -> None:
        """Record a step's outcome; ``new`` when no row was recorded for it (a model turn writes only its end).

        With ``task_id``, in the same transaction: ``Cancelled`` after recording, if the task was cancelled.
        """
        values = {"state": "done", "payload": json.dumps(payload, ensure_ascii=False), "updated_at": time.time()}
        update = sa.update(steps).where(steps.c.run_id == run_id, steps.c.key == key).values(**values)
        try:
            with self.tx() as c:
                c.execute(sa.insert(steps).values(run_id=run_id, key=key, **values) if new else update)
                if task_id is not None:
                    _check_live(c, task_id)
        except sa.exc.IntegrityError:  # another replay of this run recorded it first: ours is as good
            with self.tx() as c:
                c.execute(update)
                if task_id is not None:
                    _check_live(c, task_id)

    # ------------------------------------------------------------------ workers

    def heartbeat(self, worker_id: str, now: float) -> None:
        with self.tx() as c:
            if c.execute(sa.update(workers).where(workers.c.id == worker_id).values(heartbeat_at=now)).rowcount == 0:
                c.execute(sa.insert(workers).values(id=worker_id, started_at=now, heartbeat_at=now))

    def claim_dead_workers(self, older_than: float, me: str) -> list[str]:
        """Ids of workers silent since ``older_than`` that this worker removed (so recovers) itself."""
        with self.tx() as c:
            ids = [r.id for r in c.execute(sa.select(workers.c.id).where(workers.c.heartbeat_at < older_than))]
        claimed = []
        for worker_id in ids:
            if worker_id == me:
                continue
            with self.tx() as c:
                stmt = sa.delete(workers).where(workers.c.id == worker_id, workers.c.heartbeat_at < older_than)
                if c.execute(stmt).rowcount == 1:
                    claimed.append(worker_id)
        return claimed

    def remove_worker(self, worker_id: str) -> None:
        with self.tx() as c:
            c.execute(sa.delete(workers).where(workers.c.id == worker_id))


def _claim(task_id: str, workflow_id: str, worker: str, now: float) -> sa.Update:
    return (
        sa.update(tasks)
        .where(tasks.c.id == task_id, tasks.c.workflow_id == workflow_id, tasks.c.status.in_(OPEN))
        .values(status="running", worker=worker, started_at=now)
    )


def _steps_of(c: Connection, run_id: str) -> dict[str, tuple[str, Any]]:
    rows = c.execute(sa.select(steps.c.key, steps.c.state, steps.c.payload).where(steps.c.run_id == run_id))
    return {r.key: (r.state, json.loads(r.payload) if r.payload is not None else None) for r in rows}


def _check_live(c: Connection, task_id: str) -> None:
    row = c.execute(sa.select(tasks.c.status).where(tasks.c.id == task_id)).first()
    if row is None or row.status == "cancelled":
        raise Cancelled(task_id)


def listen_for_tasks(url: str, wake: threading.Event, stop: threading.Event) -> threading.Event | None:
    """On PostgreSQL, set ``wake`` whenever a task becomes queued, in a daemon thread, until ``stop``.

    Workers then look for due tasks when told instead of every 50 ms. Answers an event set while listening;
    None for SQLite, or when the listening connection cannot open: the worker keeps polling. A connection lost
    later clears that event and sets ``wake``, and the worker polls again.
    """
    if not url.startswith("postgresql"):
        return None
    import psycopg

    try:
        conn = psycopg.connect(url, autocommit=True)
        conn.execute(f"LISTEN {CHANNEL}")
    except psycopg.Error as exc:
        log.warning("cannot listen for new tasks (%s): polling for them instead", exc)
        return None

    def listen() -> None:
        try:
            while not stop.is_set():
                for _ in conn.notifies(timeout=0.5, stop_after=1):
                    wake.set()
        except psycopg.Error as exc:
            log.warning("stopped listening for new tasks (%s): polling for them instead", exc)
        finally:
            listening.clear()
            wake.set()
            conn.close()

    listening = threading.Event()
    listening.set()
    threading.Thread(target=listen, name="toolrig-task-listener", daemon=True).start()
    return listening
