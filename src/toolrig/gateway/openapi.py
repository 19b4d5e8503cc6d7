"""The OpenAPI document, built from the same pydantic models the handlers validate and answer with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from toolrig.gateway import models as m


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    response: type[BaseModel] | None
    body: type[BaseModel] | None = None
    query: tuple[tuple[str, str, str], ...] = ()  # (name, JSON type, description)
    status: int = 200
    refused: type[BaseModel] | None = None  # the body of a 409 that names what refused it


LIMIT = ("limit", "integer", "At most this many rows (1-1000).")
OPERATIONS = (
    Operation("post", "/api/runs", "Start a run (a new session, or continue one)", m.RunInfo, m.StartRun, status=201),
    Operation("get", "/api/runs", "The runs this server started (running first)", m.RunList),
    Operation("get", "/api/runs/{run_id}", "One run: status, session, pending approvals and questions", m.RunInfo),
    Operation(
        "get",
        "/api/runs/{run_id}/events",
        "The run's events as server-sent events (text/event-stream): one JSON event per `data:` line, as "
        "`toolrig run --json` prints them, plus `pending`, `pending_answered`, `pending_withdrawn` and `run_end`. "
        "Each has an `id:`; reconnect with Last-Event-ID (or ?after=N) to get the rest.",
        None,
        query=(("after", "integer", "Only events after this id."),),
    ),
    Operation("post", "/api/runs/{run_id}/cancel", "Stop the run and everything it started", m.RunInfo),
    Operation(
        "post",
        "/api/runs/{run_id}/pending/{pending_id}",
        "Answer one pending approval or question (the id is single use and bound to its call)",
        m.Answered,
        m.Answer,
    ),
    Operation("get", "/api/sessions", "Recorded sessions, newest first", m.SessionList, query=(LIMIT,)),
    Operation("get", "/api/sessions/{session_id}", "One session: its messages and tool calls", m.SessionDetail),
    Operation("get", "/api/sessions/{session_id}/notes", "A session's todo list and follow-ups", m.Notes),
    Operation(
        "get",
        "/api/sessions/{session_id}/turns",
        "The session's turns that changed files: the files, the agents, what commands changed (not restorable)",
        m.Turns,
    ),
    Operation(
        "post",
        "/api/sessions/{session_id}/rewind",
        "Put the session's files back as before a turn, all or nothing (a dry run unless dry_run is false). "
        "409: a run of the session is going, or files changed since (named; force overwrites them).",
        m.RewindResult,
        m.Rewind,
        refused=m.RewindResult,
    ),
    Operation(
        "get",
        "/api/tasks",
        "Durable tasks (toolrig tasks list)",
        m.Rows,
        query=(("status", "string", "Only tasks with this status."), LIMIT),
    ),
    Operation("get", "/api/schedules", "Scheduled jobs (toolrig cron list)", m.Rows),
    Operation(
        "get",
        "/api/audit",
        "The audit log, newest first (the filters of toolrig audit)",
        m.Rows,
        query=(
            ("since", "string", "A duration ago (30s, 15m, 2h, 7d) or a date/time (2026-05-01T12:00)."),
            ("tool", "string", "Only calls of tools matching this glob."),
            ("agent", "string", "Only calls made by this agent."),
            LIMIT,
        ),
    ),
)


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _operation(op: Operation) -> dict[str, Any]:
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in ("run_id", "pending_id", "session_id")
        if "{" + name + "}" in op.path
    ]
    params += [{"name": n, "in": "query", "schema": {"type": t}, "description": d} for n, t, d in op.query]
    if op.response is None:
        ok: dict[str, Any] = {"description": "An event stream", "content": {"text/event-stream": {}}}
    else:
        ok = {"description": "OK", "content": {"application/json": {"schema": _ref(op.response)}}}
    error = {"content": {"application/json": {"schema": _ref(m.ErrorBody)}}}
    out: dict[str, Any] = {
        "summary": op.summary,
        "parameters": params,
        "responses": {
            str(op.status): ok,
            "401": {"description": "No token or cookie", **error},
            "404": {"description": "No such run, session or pending id", **error},
            "422": {"description": "The request does not fit its model", **error},
        },
        "security": [{"bearer": []}, {"cookie": []}],
    }
    if op.refused is not None:
        out["responses"]["409"] = {
            "description": "Refused (a run of the session is going: an error body; files changed since: the plan)",
            "content": {"application/json": {"schema": {"anyOf": [_ref(op.refused), _ref(m.ErrorBody)]}}},
        }
    if op.body is not None:
        out["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(op.body)}}}
    return out


def document(version: str) -> dict[str, Any]:
    used = {op.response for op in OPERATIONS} | {op.body for op in OPERATIONS} | {m.ErrorBody}
    models = sorted((model for model in used if model is not None), key=lambda model: model.__name__)
    _, schemas = models_json_schema(
        [(model, "serialization") for model in models], ref_template="#/components/schemas/{model}"
    )
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {"title": "toolrig gateway", "version": version},
        "paths": paths,
        "components": {
            "schemas": schemas.get("$defs", {}),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": {"type": "apiKey", "in": "cookie", "name": "toolrig_gateway"},
            },
        },
    }
