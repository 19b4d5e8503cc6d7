"""The gateway's ASGI app: the JSON API, the runs' event streams, and the web page, on one port.

Trust model: everything here sits behind ``auth.GatewayGuard`` (Host, Origin, token or the page's cookie). Bodies
are capped and validated by the models in ``models.py``; a malformed request is a 4xx with a reason, never a
traceback. Runs live in this process's task group; a run's failure ends that run, never the server.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib.resources import files
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from toolrig.gateway import models as m
from toolrig.gateway import reads
from toolrig.gateway.auth import USER_KEY
from toolrig.gateway.channel import AnswerRefused
from toolrig.gateway.channels import Channel, run_channel
from toolrig.gateway.owners import OPERATOR, Viewer
from toolrig.gateway.runs import RunManager, RunRefused

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from starlette.types import Receive, Scope, Send

    from toolrig.gateway.board import Posted
    from toolrig.gateway.shared import Shared
    from toolrig.rig import Rig

MAX_BODY = 1_000_000
RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # runs get secrets.token_urlsafe ids
MAX_LIMIT = 1000
HEARTBEAT = 15.0  # seconds of silence before an SSE comment line keeps the stream (and its proxies) awake
RESTORED_WAIT_SECONDS = 10.0  # at start, how long restored runs may take to show their cards again (each is ms)
STATIC = {"app.js": "text/javascript", "app.css": "text/css"}
Model = TypeVar("Model", bound=BaseModel)
Handler = Callable[[Request], Awaitable[Response]]


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _answer(model: type[Model], data: Any, status: int = 200) -> JSONResponse:
    """Every response goes through its model: what the OpenAPI document says is what is sent."""
    return JSONResponse(model.model_validate(data).model_dump(mode="json"), status_code=status)


async def _body(request: Request, model: type[Model]) -> Model:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise Refused(413, f"the body is over {MAX_BODY} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise Refused(413, f"the body is over {MAX_BODY} bytes")
        chunks.append(chunk)
    try:
        return model.model_validate_json(b"".join(chunks))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise Refused(422, f"{where}: {first['msg']} ({exc.error_count()} problem(s))") from None


def _limit(request: Request, default: int = 100) -> int:
    text = request.query_params.get("limit")
    if text is None:
        return default
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise Refused(422, f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def _guarded(handler: Handler) -> Handler:
    """Refusals (ours, the run manager's, an answer's, a missing record) become their status and a reason."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except (Refused, RunRefused, AnswerRefused) as exc:
            return _error(exc.status, exc.message)
        except reads.NotFound:
            return _error(404, "no session has this id")
        except ImportError as exc:
            return _error(503, f"this needs an extra that is not installed ({exc.name})")

    return wrapped


class Gateway:
    """The handlers, over one Rig and the runs this process started."""

    def __init__(
        self,
        rig: Rig,
        *,
        version: str,
        channels: Sequence[Channel] = (),
        shared: bool = False,
        mcp_app: Starlette | None = None,
    ) -> None:
        self.rig = rig
        self.mcp_app = mcp_app
        self.version = version
        self.shared = shared  # several users see and steer each other's runs and sessions
        self.channels = tuple(channels)
        self._runs: RunManager | None = None
        self._shared: Shared | None = None

    @property
    def runs(self) -> RunManager:
        if self._runs is None:
            raise Refused(503, "the server is starting or stopping")
        return self._runs

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if self.mcp_app is not None:  # the MCP app's own session manager runs as long as the server
                await stack.enter_async_context(self.mcp_app.router.lifespan_context(self.mcp_app))
            async with self._serving():
                yield

    @contextlib.asynccontextmanager
    async def _serving(self) -> AsyncIterator[None]:
        """The runs board (shared with the workspace's other servers), then this process's runs."""
        from toolrig.gateway.shared import Shared, open_board

        board = await open_board(self.rig)
        try:
            async with anyio.create_task_group() as tasks:
                busy = await anyio.to_thread.run_sync(board.busy_sessions)
                runs = RunManager(self.rig, tasks)
                self._shared = Shared(board, runs, tasks, shared_users=self.shared)
                runs.on_change, runs.post_now = self._shared.post, self._shared.post_now
                tasks.start_soon(self._shared.serve, name="gateway runs board")
                async with self._running(tasks, runs, busy):
                    yield
                tasks.cancel_scope.cancel()  # the board's loop and posts
        finally:
            self._shared = None
            await anyio.to_thread.run_sync(board.close)

    @contextlib.asynccontextmanager
    async def _running(self, tasks: TaskGroup, runs: RunManager, busy: set[str]) -> AsyncIterator[None]:
        from toolrig.gateway.runs import warm_provider

        tasks.start_soon(anyio.to_thread.run_sync, warm_provider, self.rig.config.llm.provider)
        self._runs = runs
        restored = runs.restore(skip=busy)
        with anyio.move_on_after(RESTORED_WAIT_SECONDS):  # a client's first request sees their cards, not "running"
            for run in restored:
                await run.settled()
        scopes = [anyio.CancelScope() for _ in self.channels]
        for channel, scope in zip(self.channels, scopes, strict=True):
            tasks.start_soon(run_channel, channel, runs, scope, name=f"gateway channel {channel.name}")
        try:
            yield
        finally:
            for scope in scopes:
                scope.cancel()
            for run in runs.running():
                run.scope.cancel()  # a paused run's state stays kept for the next start
            self._runs = None

    async def start(self, request: Request) -> Response:
        body = await _body(request, m.StartRun)
        viewer = self.viewer(request)
        if body.session_id is not None and self._shared is not None and await self._shared.busy(body.session_id):
            raise Refused(409, "a run is going on this session already (on another server): wait for it, or cancel it")
        run = self.runs.start(body.prompt, session_id=body.session_id, agent=body.agent, viewer=viewer)
        return _answer(m.RunInfo, run.summary(), 201)

    async def list_runs(self, request: Request) -> Response:
        viewer = self.viewer(request)
        runs = sorted(self.runs.visible(viewer), key=lambda r: (r.finished, -r.started))
        listed = [r.summary() for r in runs]
        if self._shared is not None:  # the runs of the workspace's other live servers
            listed += await self._shared.others(viewer)
        return _answer(m.RunList, {"runs": listed})

    async def run(self, request: Request) -> Response:
        run_id, viewer = request.path_params["run_id"], self.viewer(request)
        try:
            return _answer(m.RunInfo, self.runs.get(run_id, viewer).summary())
        except RunRefused:
            posted = await self._remote(run_id, viewer)
            return _answer(m.RunInfo, {**posted.summary, "elsewhere": True})

    async def cancel(self, request: Request) -> Response:
        run_id, viewer = request.path_params["run_id"], self.viewer(request)
        if run_id in self.runs.runs:
            return _answer(m.RunInfo, self.runs.cancel(run_id, viewer).summary())
        return await self._forward(run_id, "cancel", viewer, {}, m.RunInfo)

    async def answer(self, request: Request) -> Response:
        body = await _body(request, m.Answer)
        run_id, card_id, viewer = request.path_params["run_id"], request.path_params["pending_id"], self.viewer(request)
        answer = body.model_dump()
        if run_id in self.runs.runs:
            return _answer(m.Answered, self.runs.answer(run_id, card_id, viewer, **answer))
        return await self._forward(run_id, "answer", viewer, {**answer, "card_id": card_id}, m.Answered)

    async def _remote(self, run_id: str, viewer: Viewer) -> Posted:
        """A run another server of the workspace runs (the runs board), else the same 404 as for a made-up id."""
        shaped = RUN_ID.fullmatch(run_id) is not None  # what no run id looks like never reaches the database
        posted = await self._shared.remote(run_id, viewer) if self._shared is not None and shaped else None
        if posted is None:
            raise RunRefused(404, "no run has this id here (finished runs are read from their session)")
        return posted

    async def _forward(
        self, run_id: str, kind: str, viewer: Viewer, body: dict[str, Any], model: type[BaseModel]
    ) -> Response:
        posted = await self._remote(run_id, viewer)
        if self._shared is None:
            raise Refused(503, "the server is starting or stopping")
        status, result = await self._shared.forward(posted, run_id, kind, viewer, body)
        return _answer(model, result) if status == 200 else _error(status, str(result.get("error", "refused")))

    async def events(self, request: Request) -> Response:
        run_id, viewer = request.path_params["run_id"], self.viewer(request)
        if run_id not in self.runs.runs and await self._remote(run_id, viewer):
            raise Refused(
                409, "another server of this workspace runs this run: follow its events there, or read its session"
            )
        run = self.runs.get(run_id, viewer)
        after_text = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not after_text.isdigit():
            raise Refused(422, "Last-Event-ID / after must be an event id (a whole number)")
        after = int(after_text)

        async def stream() -> AsyncIterator[bytes]:
            async for item in run.follow(after, heartbeat=HEARTBEAT):
                if item is None:
                    yield b": keep-alive\n\n"
                    continue
                seq, event = item
                yield f"id: {seq}\ndata: {json.dumps(event, ensure_ascii=False, default=str)}\n\n".encode()
            yield b"event: end\ndata: {}\n\n"

        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    async def sessions(self, request: Request) -> Response:
        found = await reads.sessions(self.rig, _limit(request, 50), self.viewer(request))
        return _answer(m.SessionList, {"sessions": found})

    async def session(self, request: Request) -> Response:
        found = await reads.session(self.rig, request.path_params["session_id"], self.viewer(request))
        return _answer(m.SessionDetail, found)

    async def notes(self, request: Request) -> Response:
        found = await reads.notes(self.rig, request.path_params["session_id"], self.viewer(request))
        return _answer(m.Notes, found)

    async def turns(self, request: Request) -> Response:
        from toolrig.gateway import rewinds

        session_id, viewer = request.path_params["session_id"], self.viewer(request)
        rows = await anyio.to_thread.run_sync(rewinds.list_turns, self.rig, session_id, viewer)
        running = await self._session_running(session_id)
        return _answer(m.Turns, {"session_id": session_id, "running": running, "turns": rows})

    async def rewind(self, request: Request) -> Response:
        """Dry run by default; refused while a run of the session goes (its next write would undo the rewind)."""
        from toolrig.gateway import rewinds

        body = await _body(request, m.Rewind)
        session_id, viewer = request.path_params["session_id"], self.viewer(request)
        await anyio.to_thread.run_sync(reads.require, self.rig, session_id, viewer)  # 404 before anything else
        if not body.dry_run and await self._session_running(session_id):
            raise Refused(409, "a run is going on this session: wait for it to end (or cancel it), then rewind")
        try:
            done = await anyio.to_thread.run_sync(
                lambda: rewinds.rewind(self.rig, session_id, body.turn, viewer, dry_run=body.dry_run, force=body.force)
            )
        except rewinds.RewindRefused as exc:
            if exc.plan is not None:
                return _answer(m.RewindResult, exc.plan, exc.status)
            raise Refused(exc.status, exc.message) from None
        return _answer(m.RewindResult, done)

    async def _session_running(self, session_id: str) -> bool:
        """A run of the session here, on another server (the runs board), or in any process holding its lease."""
        from toolrig.stores.checkpoints.lease import run_is_going

        if self.runs.for_session(session_id) is not None:
            return True
        if self._shared is not None and await self._shared.busy(session_id):
            return True
        return await anyio.to_thread.run_sync(run_is_going, self.rig.workspace.state_dir, session_id)

    def viewer(self, request: Request) -> Viewer:
        """Who sent the request (the guard put it in the scope): the operator, or one of several users."""
        user = request.scope.get("state", {}).get(USER_KEY)
        return OPERATOR if user is None else Viewer(user, sees_all=self.shared)

    def _operator_only(self, request: Request) -> None:
        if not self.viewer(request).sees_all:
            raise Refused(403, "tasks and schedules are the workspace's, shown to the operator only (or --shared)")

    async def tasks(self, request: Request) -> Response:
        self._operator_only(request)
        status = request.query_params.get("status")
        return _answer(m.Rows, {"rows": await reads.tasks(self.rig, status, _limit(request))})

    async def schedules(self, request: Request) -> Response:
        self._operator_only(request)
        return _answer(m.Rows, {"rows": await reads.schedules(self.rig)})

    async def audit(self, request: Request) -> Response:
        query = request.query_params
        since = _since(query.get("since"))
        rows = await reads.audit(
            self.rig,
            since=since,
            tool=query.get("tool"),
            agent=query.get("agent"),
            limit=_limit(request),
            viewer=self.viewer(request),
        )
        return _answer(m.Rows, {"rows": rows})

    async def openapi(self, request: Request) -> Response:
        from toolrig.gateway.openapi import document

        return JSONResponse(document(self.version))

    async def page(self, request: Request) -> Response:
        return Response(_static("index.html"), media_type="text/html; charset=utf-8")

    async def asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return _error(404, "no such file")
        return Response(_static(name), media_type=f"{STATIC[name]}; charset=utf-8")


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    import click

    from toolrig.commands.audit import parse_since

    try:
        return parse_since(text[:100])
    except click.BadParameter as exc:
        raise Refused(422, f"since: {exc.message}") from None


def _static(name: str) -> bytes:
    return files("toolrig.gateway").joinpath("static", name).read_bytes()


class OperatorOnly:
    """The MCP endpoint (``--mcp``): it runs tools directly, outside any user's sessions, so the operator's only."""

    def __init__(self, app: Starlette) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("state", {}).get(USER_KEY) is not None:
            await _error(403, "MCP is served to the operator's token only")(scope, receive, send)
            return
        await self.app(scope, receive, send)


def build_app(
    rig: Rig,
    *,
    version: str = "0",
    channels: Sequence[Channel] = (),
    shared: bool = False,
    mcp_app: Starlette | None = None,
) -> Starlette:
    """The gateway's routes; with ``mcp_app`` (``toolrig serve --mcp``) MCP's streamable HTTP at ``/mcp`` too."""
    gw = Gateway(rig, version=version, channels=channels, shared=shared, mcp_app=mcp_app)
    table: list[tuple[str, str, Handler]] = [
        ("GET", "/", gw.page),
        ("GET", "/static/{name}", gw.asset),
        ("GET", "/api/openapi.json", gw.openapi),
        ("POST", "/api/runs", gw.start),
        ("GET", "/api/runs", gw.list_runs),
        ("GET", "/api/runs/{run_id}", gw.run),
        ("GET", "/api/runs/{run_id}/events", gw.events),
        ("POST", "/api/runs/{run_id}/cancel", gw.cancel),
        ("POST", "/api/runs/{run_id}/pending/{pending_id}", gw.answer),
        ("GET", "/api/sessions", gw.sessions),
        ("GET", "/api/sessions/{session_id}", gw.session),
        ("GET", "/api/sessions/{session_id}/notes", gw.notes),
        ("GET", "/api/sessions/{session_id}/turns", gw.turns),
        ("POST", "/api/sessions/{session_id}/rewind", gw.rewind),
        ("GET", "/api/tasks", gw.tasks),
        ("GET", "/api/schedules", gw.schedules),
        ("GET", "/api/audit", gw.audit),
    ]
    routes = [Route(path, _guarded(handler), methods=[method]) for method, path, handler in table]
    if mcp_app is not None:
        from toolrig.adapters.mcp_http import MCP_PATH

        routes.append(Route(MCP_PATH, OperatorOnly(mcp_app)))
    return Starlette(routes=routes, lifespan=gw.lifespan)
