"""What the gateway reads for people: sessions, a session's todos and follow-ups, tasks, schedules, the audit log.

Each read is the same one the matching ``toolrig`` command makes (``sessions show --json``, ``tasks list --json``,
``cron list --json``, ``audit --json``), run in a worker thread so a slow database never stalls the event loop.
Nothing is formatted here: the page shows it as text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from toolrig.gateway.owners import OPERATOR, Owners, Viewer

AUDIT_SCAN = 10_000

if TYPE_CHECKING:
    from toolrig.agent.session import SessionInfo, SessionStore
    from toolrig.rig import Rig


class NotFound(Exception):
    pass


def info_json(info: SessionInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "title": info.title,
        "model": info.model,
        "provider": info.provider,
        "status": info.status,
        "created": info.created,
        "updated": info.updated,
        "turns": info.turns,
        "usage": info.usage.to_json(),
    }


def _store(rig: Rig) -> SessionStore:
    from toolrig.agent.session import SessionStore

    return SessionStore.shared(rig.workspace.state_dir)


def _owned(rig: Rig, viewer: Viewer) -> set[str] | None:
    """The sessions ``viewer`` may see; None: every one."""
    if viewer.sees_all or viewer.user is None:
        return None
    return Owners(rig.workspace.state_dir).sessions_of(viewer.user)


def _visible(rig: Rig, session_id: str, viewer: Viewer) -> None:
    owned = _owned(rig, viewer)
    if owned is not None and session_id not in owned:
        raise NotFound(session_id)  # another user's session is as unknown as a made-up id


def require(rig: Rig, session_id: str, viewer: Viewer) -> None:
    """The session exists and ``viewer`` may see it; else ``NotFound`` (another's is the 404 of a made-up id)."""
    _visible(rig, session_id, viewer)
    if _store(rig).info(session_id) is None:
        raise NotFound(session_id)


async def sessions(rig: Rig, limit: int, viewer: Viewer = OPERATOR) -> list[dict[str, Any]]:
    def read() -> list[dict[str, Any]]:
        owned = _owned(rig, viewer)
        if owned is None:
            return [info_json(i) for i in _store(rig).recent(limit)]
        store = _store(rig)
        found = [info for info in (store.info(sid) for sid in owned) if info is not None]
        return [info_json(i) for i in sorted(found, key=lambda i: -i.updated)[:limit]]

    return await anyio.to_thread.run_sync(read)


async def session(rig: Rig, session_id: str, viewer: Viewer = OPERATOR) -> dict[str, Any]:
    def read() -> dict[str, Any]:
        _visible(rig, session_id, viewer)
        store = _store(rig)
        info = store.info(session_id)
        if info is None:
            raise NotFound(session_id)
        data = info_json(info)
        data["messages"] = [m.to_json() for m in store.messages(session_id)]
        data["tool_calls"] = [
            {"call_id": c.call_id, "turn": c.turn, "name": c.name, "args": c.args, "is_error": c.is_error,
             "preview": c.preview, "duration_ms": c.duration_ms}
            for c in store.tool_calls(session_id)
        ]  # fmt: skip
        return data

    return await anyio.to_thread.run_sync(read)


async def notes(rig: Rig, session_id: str, viewer: Viewer = OPERATOR) -> dict[str, Any]:
    def read() -> dict[str, Any]:
        _visible(rig, session_id, viewer)
        if _store(rig).info(session_id) is None:
            raise NotFound(session_id)
        todos = rig.stores.notes.get(session_id, "todos") or []
        followups = rig.stores.notes.get(session_id, "followups") or []
        return {
            "session_id": session_id,
            "todos": [t for t in todos if isinstance(t, dict)],
            "followups": [str(f) for f in followups],
        }

    return await anyio.to_thread.run_sync(read)


async def tasks(rig: Rig, status: str | None, limit: int) -> list[dict[str, Any]]:
    from toolrig.durable.access import DurableAccess
    from toolrig.durable.tasks import view

    def read() -> list[dict[str, Any]]:
        access = DurableAccess(rig.workspace.root, rig.config, rig.workspace.state_dir)
        try:
            return [view(t) for t in access.records.tasks(status=status, limit=limit)]
        finally:
            access.close()

    return await anyio.to_thread.run_sync(read)


async def schedules(rig: Rig) -> list[dict[str, Any]]:
    from toolrig.durable.access import DurableAccess

    def read() -> list[dict[str, Any]]:
        access = DurableAccess(rig.workspace.root, rig.config, rig.workspace.state_dir)
        try:
            return access.list_jobs()
        finally:
            access.close()

    return await anyio.to_thread.run_sync(read)


async def audit(
    rig: Rig, *, since: float | None, tool: str | None, agent: str | None, limit: int, viewer: Viewer = OPERATOR
) -> list[Any]:
    """The audit rows, each with ``user``: the owner of its session (the person whose run made the call).

    A user who sees only their own sessions sees only their sessions' rows (the newest ``limit`` of those among
    the newest ten thousand rows).
    """
    from toolrig.policy.audit import FILE_NAME, AuditLog

    def read() -> list[Any]:
        if not (rig.workspace.state_dir / FILE_NAME).exists():
            return []
        owned = _owned(rig, viewer)
        owners = Owners(rig.workspace.state_dir)
        log = AuditLog(rig.workspace.state_dir)
        try:
            rows = log.query(since=since, tool=tool, agent=agent, limit=limit if owned is None else AUDIT_SCAN)
        finally:
            log.close()
        if owned is not None:
            rows = [row for row in rows if row.session in owned][:limit]
        users = {s: owners.owner(s) for s in {row.session for row in rows if row.session}}
        return [{**row.to_json(), "user": users.get(row.session or "")} for row in rows]

    return await anyio.to_thread.run_sync(read)
