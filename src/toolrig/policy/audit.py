"""The audit log: one row per call, allowed or not, in ``.toolrig/audit.db``.

Trust model: arguments and subjects come from the model and may carry secrets; they are redacted before
they are written. Only toolrig writes the file; ``toolrig audit`` reads it.

A row is committed before the call's result is returned, so a row the caller has seen acknowledged
survives a crash of the process (WAL, ``synchronous=NORMAL``); ``audit.sync: full`` adds an fsync per row
so it survives a crash of the machine too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from toolrig.policy.redact import redact
from toolrig.shaping import escape_surrogates
from toolrig.stores.sqlite import Database

if TYPE_CHECKING:
    from toolrig.gate import ToolCall
    from toolrig.result import ToolResult
    from toolrig.sandbox.background import Job

FILE_NAME = "audit.db"
COLUMNS = (
    "ts", "session", "agent", "parent_agent", "call_id", "origin", "tool", "subjects", "args", "decision",
    "rule", "approval", "duration_ms", "is_error", "error_type", "output_bytes", "called_as",
)  # fmt: skip
MIGRATIONS = [
    """
    CREATE TABLE calls (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL, session TEXT, agent TEXT, parent_agent TEXT, call_id TEXT, origin TEXT,
        tool TEXT NOT NULL, subjects TEXT, args TEXT, decision TEXT, rule TEXT, approval TEXT,
        duration_ms REAL, is_error INTEGER NOT NULL, error_type TEXT, output_bytes INTEGER
    )
    """,  # no secondary index: each would add a page write per call; reads walk back from the newest row
    # The name the model used when it differs from the tool's (a profile's Bash for run_command, an alias).
    "ALTER TABLE calls ADD COLUMN called_as TEXT",
]
PAGE_SIZE = 1024
CHECKPOINT_AFTER = 1000  # commits: about SQLite's own threshold (1,000 pages) at one page per row
_INSERT = f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"  # noqa: S608


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    ts: float
    session: str | None
    agent: str | None
    parent_agent: str | None
    call_id: str
    origin: str
    tool: str
    subjects: list[str]
    args: dict[str, Any]
    decision: str
    rule: str
    approval: str
    duration_ms: float
    is_error: bool
    error_type: str | None
    output_bytes: int
    called_as: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["time"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.ts)) + f".{int(self.ts % 1 * 1000):03d}Z"
        return data


def row_values(call: ToolCall, result: ToolResult) -> tuple[Any, ...]:
    meta = result.meta
    decision = call.verdict or ("error" if result.is_error else "allow")
    return (
        time.time(),
        call.session_id,
        call.agent_id,
        call.parent_agent_id,
        call.call_id,
        call.origin,
        _shown(call),
        _json(redact(call.subjects)) if call.subjects else "[]",
        _json(redact(call.raw_args)),
        decision,
        call.decided_by,
        call.approval,
        round(meta.duration_ms, 3),
        int(result.is_error),
        result.error_type.value if result.error_type else None,
        meta.output_bytes,
        _called_as(call),
    )


def _shown(call: ToolCall) -> str:
    """The tool's name as a person reads it everywhere: an MCP server's tool as ``server/tool``.

    Its provider-safe spelling (``server__tool``) is the name models send; it is not a second name for the
    reader to learn, so it is not shown as "called as" either.
    """
    tool = call.tool
    return (tool.display_name or tool.name) if tool is not None else call.name


def _called_as(call: ToolCall) -> str | None:
    """The name the model used, when it was not the tool's own (a profile's name or an alias)."""
    used = call.called_as or call.name
    tool = call.tool
    own = (tool.name, tool.display_name) if tool is not None else (call.name,)
    return used if used not in own else None


def _json(value: Any) -> str:
    """JSON for a column, for any value: text no UTF-8 can carry (a lone surrogate) is kept as an escape."""
    try:
        return to_json(value, fallback=str).decode()
    except (ValueError, TypeError, UnicodeError):
        pass
    try:
        return to_json(escape_surrogates(value), fallback=repr).decode()  # shown as the model was shown it
    except (ValueError, TypeError, UnicodeError, RecursionError):
        # Nested past what any serialiser walks: the row is still written, with a bounded account of it.
        try:
            shown = repr(value)[:2000]
        except (ValueError, RecursionError):
            shown = f"<{type(value).__name__} that cannot be shown>"
        return to_json({"unserialisable": shown}).decode()


class AuditLog:
    def __init__(self, state_dir: Path, *, sync: str = "normal") -> None:
        self.path = state_dir / FILE_NAME
        # Opened with the first row; a file from a newer toolrig still takes rows (the columns are named).
        # A row is ~200 bytes and every commit writes its whole page to the WAL: 1 KiB pages (for a file made
        # here) write a quarter of 4 KiB's bytes. The WAL's checkpoint (two syncs) runs beside the calls.
        self.db = Database(
            self.path,
            MIGRATIONS,
            synchronous=sync,
            lazy=True,
            accept_newer=True,
            page_size=PAGE_SIZE,
            checkpoint_after=CHECKPOINT_AFTER,
        )

    def record(self, call: ToolCall, result: ToolResult) -> Awaitable[Any] | None:
        """Commit the call's row; None once it is committed, else what to await (the file was locked)."""
        values = row_values(call, result)
        return self.db.write_soon(lambda conn: conn.execute(_INSERT, values), single=True)

    def record_refusal(
        self,
        *,
        tool: str,
        call_id: str,
        session: str | None,
        agent: str | None,
        origin: str,
        rule: str,
        approval: str,
        args: dict[str, Any],
    ) -> None:
        """A row for an answer that was refused (not a call): decision deny, the refusal in ``approval``."""
        values = (time.time(), session, agent, None, call_id, origin, tool, "[]", _json(redact(args)),
                  "deny", rule, approval, 0.0, 1, "denied", 0, None)  # fmt: skip
        self.db.write(lambda conn: conn.execute(_INSERT, values), single=True)

    def record_action(
        self,
        *,
        tool: str,
        session: str | None,
        origin: str,
        rule: str,
        approval: str,
        args: dict[str, Any],
        subjects: Sequence[str] = (),
        allowed: bool = True,
    ) -> None:
        """A person's action that is not a model's call (a rewind from the gateway's page): who, what, on what."""
        values = (time.time(), session, None, None, "", origin, tool, _json(redact(list(subjects))),
                  _json(redact(args)), "allow" if allowed else "deny", rule, approval, 0.0, int(not allowed),
                  None if allowed else "conflict", 0, None)  # fmt: skip
        self.db.write(lambda conn: conn.execute(_INSERT, values), single=True)

    def record_ended(self, job: Job, origin: str) -> None:
        """A background command ended (its start and stop are the calls' own rows): run_command, its call id."""
        result = job.result
        error_type = None if job.status == "exited" else job.status
        how = f"background {job.id} {job.status}" + (f", exit code {result.exit_code}" if result is not None else "")
        if job.stopped_by or job.error:
            how += f" ({job.stopped_by or job.error})"
        values = (time.time(), job.session_id, job.agent_id, None, job.call_id, origin, "run_command", "[]",
                  _json(redact({"command": job.command})), "allow", "background", how,
                  round((time.time() - job.started) * 1000, 3), int(bool(error_type)), error_type, 0, None)  # fmt: skip
        self.db.write(lambda conn: conn.execute(_INSERT, values), single=True)

    def query(
        self,
        *,
        since: float | None = None,
        tool: str | None = None,
        agent: str | None = None,
        limit: int | None = 100,
    ) -> list[AuditRow]:
        """The newest ``limit`` rows that match, oldest first. ``tool`` is a glob on either name of the tool.

        An MCP tool may be named in either spelling (``server/tool`` or ``server__tool``): rows keep the first.
        """
        where: list[str] = []
        params: list[Any] = []
        if since is not None:
            where.append("ts >= ?")
            params.append(since)
        if tool:
            slashed = _slashed(tool)
            where.append("(tool GLOB ? OR called_as GLOB ? OR tool GLOB ? OR called_as GLOB ?)")
            params.extend((tool, tool, slashed, slashed))
        if agent:
            where.append("agent = ?")
            params.append(agent)
        sql = f"SELECT id, {', '.join(COLUMNS)} FROM calls"  # noqa: S608 - fixed column names, values bound
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self.db.read(lambda conn: conn.execute(sql, params).fetchall())
        return [_row(r) for r in reversed(rows)]

    def count(self) -> int:
        return int(self.db.read(lambda conn: conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]))

    def close(self) -> None:
        self.db.close()


def background_ends(audit: AuditLog | None, origin: str) -> Callable[[Job], None] | None:
    """What an owner of background commands calls as each one ends: its audit row (None: audit off)."""
    if audit is None:
        return None
    return lambda job: audit.record_ended(job, origin)


def _slashed(pattern: str) -> str:
    """``server__tool`` (the provider-safe spelling) as the ``server/tool`` rows record; other names unchanged."""
    server, sep, rest = pattern.partition("__")
    return f"{server}/{rest}" if sep and server and "/" not in server else pattern


def _row(values: Sequence[Any]) -> AuditRow:
    data = dict(zip(("id", *COLUMNS), values, strict=True))
    data["subjects"] = json.loads(data["subjects"] or "[]")
    data["args"] = json.loads(data["args"] or "{}")
    data["is_error"] = bool(data["is_error"])
    data["decision"] = data["decision"] or ""
    data["rule"] = data["rule"] or ""
    data["approval"] = data["approval"] or ""
    data["origin"] = data["origin"] or ""
    data["call_id"] = data["call_id"] or ""
    data["output_bytes"] = data["output_bytes"] or 0
    data["duration_ms"] = data["duration_ms"] or 0.0
    return AuditRow(**data)
