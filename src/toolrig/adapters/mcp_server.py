"""Every tool of a rig, served to any MCP client (Claude Desktop, Cursor, an IDE, an agent SDK).

Trust model: the client is whoever holds our stdio pipes (the program that started us) or can reach the
HTTP endpoint (loopback by default; see ``mcp_http``). Every call goes through the rig's executor with
``origin="mcp"``, so policy, approvals, rate limits, hooks, audit and output caps apply as for any agent.

Tools are listed with their input and output schemas and MCP's hints; a result carries
``structuredContent`` plus the same JSON as text, and a tool's failure is an ``isError`` result (never a
protocol error), so the model sees it and can correct itself. Progress a tool reports becomes progress
notifications when the client asked for them; a client's cancellation cancels the tool.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from toolrig.adapters.mcp_content import content_json as content_json  # re-exported (tests, callers)
from toolrig.adapters.mcp_content import mcp_content, result_texts
from toolrig.adapters.mcp_logging import LogLevels
from toolrig.adapters.mcp_resources import ServedResources
from toolrig.adapters.mcp_sessions import SessionIds, new_session_id
from toolrig.adapters.served import ServedRig
from toolrig.approvals import fingerprint
from toolrig.approvals.mcp import (
    Asker,
    ElicitingAsker,
    Fallback,
    McpApprovalChannel,
    ParkedCall,
    elicit_request,
)
from toolrig.errors import ErrorType, ToolError
from toolrig.event_bus import EventSink
from toolrig.events import Event, LogLevel, ToolLogEvent, ToolProgressEvent
from toolrig.executor import new_call_id
from toolrig.policy.hints import hints
from toolrig.result import ToolResult
from toolrig.sampling import ClientSampler, ModelSource
from toolrig.scope import CallScope
from toolrig.trace_context import continues_client_trace

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.shared.message import CloseSSEStreamCallback
    from mcp.types import (
        CallToolRequestParams,
        CallToolResult,
        ContentBlock,
        EmptyResult,
        InputRequiredResult,
        ListToolsResult,
        SetLevelRequestParams,
        Tool,
    )

    from toolrig.adapters.mcp_opening import OpeningAnswers
    from toolrig.context import Sample
    from toolrig.registry import AnyTool
    from toolrig.sandbox.background import BackgroundJobs

log = logging.getLogger("toolrig.mcp")

Report = Callable[[float, float | None, str | None], Awaitable[None]]
SendLog = Callable[[ToolLogEvent], Awaitable[None]]


def mcp_tool(tool: AnyTool) -> Tool:
    """A toolrig tool as MCP lists it: schemas plus readOnly/destructive/openWorld hints."""
    from mcp.types import Tool, ToolAnnotations

    output = tool.output_schema()
    declared = hints(tool)  # from the tool's flags and its Subject marks, never a table of tools
    annotations = ToolAnnotations(
        title=tool.display_name,
        read_only_hint=declared.read_only,
        destructive_hint=declared.destructive,
        open_world_hint=declared.open_world,
    )
    return Tool(
        name=tool.name,
        title=tool.display_name,
        description=tool.description,
        input_schema=tool.input_schema(),
        # 2025-era clients take only object output schemas; others get the text alone.
        output_schema=output if _object_schema(output) else None,
        annotations=annotations,
    )


def call_tool_result(result: ToolResult, *, structured: bool) -> CallToolResult:
    """The output as JSON text (or the error), then notes and the parts; structured content; ``isError`` on failure."""
    from mcp.types import CallToolResult, TextContent

    text: list[ContentBlock] = [*(TextContent(text=t) for t in result_texts(result)), *mcp_content(result.content)]
    if result.is_error:
        return CallToolResult(content=text, is_error=True)
    return CallToolResult(content=text, structured_content=result.output if structured else None)


class CallRelay:
    """An event sink for one call: passes events on, and forwards progress and log lines to the client.

    Tools report from the event loop or from worker threads; the relay keeps only the newest progress
    report (progress is a level, not a log), so a chatty tool never queues up progress notifications. Log
    lines are a log: each one the client's level lets through is sent, in order, up to a bound.
    """

    MAX_PENDING_LOGS = 1000

    def __init__(
        self,
        downstream: EventSink,
        report: Report | None,
        send_log: SendLog | None = None,
        levels: frozenset[LogLevel] = frozenset(),
    ) -> None:
        self._downstream = downstream
        self.report = report
        self._send_log = send_log
        self._levels = levels if send_log is not None else frozenset()
        self._latest: ToolProgressEvent | None = None
        self._logs: deque[ToolLogEvent] = deque(maxlen=self.MAX_PENDING_LOGS)
        self._lock = threading.Lock()
        self._send, self._receive = anyio.create_memory_object_stream[None](1)
        self._loop_thread = threading.get_ident()
        self._token = anyio.lowlevel.current_token()

    def emit(self, event: Event) -> None:
        self._downstream.emit(event)
        if isinstance(event, ToolProgressEvent) and self.report is not None:
            with self._lock:
                self._latest = event
        elif isinstance(event, ToolLogEvent) and event.level in self._levels:
            with self._lock:
                self._logs.append(event)
        else:
            return
        if threading.get_ident() == self._loop_thread:
            self._wake()
            return
        with suppress(RuntimeError):  # the loop is gone: nobody is listening any more
            anyio.from_thread.run_sync(self._wake, token=self._token)

    def _wake(self) -> None:
        # A wake-up already pending, or the call over, both mean there is nothing to do.
        with suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._send.send_nowait(None)

    async def forward(self) -> None:
        with self._receive:
            async for _ in self._receive:
                await self.flush()
        await self.flush()  # what came in after the last wake-up, before the call ended

    async def flush(self) -> None:
        with self._lock:
            event, self._latest = self._latest, None
            logs = list(self._logs)
            self._logs.clear()
        if self._send_log is not None:
            for line in logs:
                await self._send_log(line)
        if event is not None and self.report is not None:
            await self.report(event.progress, event.total, event.message)

    def close(self) -> None:
        self._send.close()


class McpToolServer:
    """The rig's tools behind one MCP ``Server``; serve it with ``serve_stdio`` or ``mcp_http.serve_http``.

    A rig without an approval channel gets the MCP one (the calling client asks its user); its fallback and
    the time a parked call waits for its client default to the config's ``approvals.fallback`` and
    ``approvals.timeout_seconds``.
    """

    def __init__(
        self, rig: ServedRig, *, approval_fallback: Fallback | None = None, approval_timeout: float | None = None
    ) -> None:
        self.rig = rig
        settings = rig.config.approvals
        fallback: Fallback = approval_fallback or ("allow" if settings.fallback == "allow" else "deny")
        # A program's own channel stays in charge; without one, each call brings a channel asking its client.
        self.fallback = fallback
        self.owns_approvals = rig.approval_channel is None
        self.approval_timeout = approval_timeout or settings.timeout_seconds
        self.session_id = new_session_id()  # stdio's one client; HTTP clients get one each (``sessions``)
        self.sessions = SessionIds(self.session_id)
        self.instructions = f"toolrig's tools, working in {rig.workspace.root}. Errors come back as JSON with a hint."
        self._tools: ListToolsResult | None = None
        self._structured: dict[str, bool] | None = None
        self._parked: dict[str, ParkedCall] = {}
        self._group: TaskGroup | None = None
        self._jobs: BackgroundJobs | None = None  # over stdio (one client): its background commands, while served
        self.log_levels = LogLevels()
        self.resources = ServedResources(rig, self._read_call)
        # Seconds a call's SSE stream stays open before the client is told to poll (reconnect with
        # Last-Event-ID); None keeps it open. Only streamable HTTP with an event store can do this.
        self.sse_poll_after: float | None = None

    def _handlers(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        """The SDK server's handlers; ``mcp_opening`` derives the advertised capabilities from their names."""
        return {
            "on_list_tools": self._list_tools,
            "on_call_tool": self._call_tool,
            "on_set_logging_level": self._set_logging_level,
            "on_list_resources": self.resources.list_resources,
            "on_list_resource_templates": self.resources.list_templates,
            "on_read_resource": self.resources.read,
            "on_subscribe_resource": self.resources.subscribe,
            "on_unsubscribe_resource": self.resources.unsubscribe,
            "on_list_prompts": self.resources.list_prompts,
            "on_get_prompt": self.resources.get_prompt,
            "on_completion": self.resources.complete,
        }

    @cached_property
    def server(self) -> Server[Any]:
        """The SDK's low-level server, built (and ``mcp`` imported) when first needed: see ``serve_stdio``."""
        from mcp.server.lowlevel import Server
        from mcp.shared.exceptions import MCPDeprecationWarning

        from toolrig.version import __version__

        with warnings.catch_warnings():
            # 2026-07-28 deprecates logging; 2025-era clients, most of those in use, still ask for it.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            handlers: Any = self._handlers()  # the overloads type each handler; these are ours, checked by tests
            server: Server[Any] = Server("toolrig", version=__version__, instructions=self.instructions, **handlers)
        return server

    def opening(self) -> OpeningAnswers:
        """The ``initialize`` and ``tools/list`` answers the stdio transport writes before the SDK loads."""
        from toolrig.adapters.mcp_opening import OpeningAnswers
        from toolrig.version import __version__

        return OpeningAnswers(
            name="toolrig",
            version=__version__,
            instructions=self.instructions,
            handlers=self._handlers().keys(),
            tools=self.rig.tools,
        )

    def structured(self, name: str) -> bool:
        """Whether a tool's result carries ``structuredContent``: it lists an object output schema."""
        if self._structured is None:
            self._structured = {tool.name: _object_schema(tool.output_schema()) for tool in self.rig.tools()}
        return self._structured.get(name, False)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[McpToolServer]:
        """Open the rig (its MCP servers) and the group that parked calls run in, for as long as we serve."""
        async with self.rig, anyio.create_task_group() as group:
            self._group = group
            try:
                yield self
            finally:
                group.cancel_scope.cancel()
                self._group = None

    # ------------------------------------------------------------------------------------ handlers

    def listing(self) -> ListToolsResult:
        if self._tools is None:
            from mcp.types import ListToolsResult

            self._tools = ListToolsResult(tools=[mcp_tool(tool) for tool in self.rig.tools()])
        return self._tools

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any], params: Any) -> ListToolsResult:
        if getattr(params, "cursor", None) is not None:
            # Every tool comes in the first page, so no cursor was ever handed out: the spec says -32602.
            from mcp.shared.exceptions import MCPError
            from mcp.types import INVALID_PARAMS

            raise MCPError(INVALID_PARAMS, "Unknown cursor: toolrig lists every tool in one page, with no cursor.")
        return self.listing()

    async def _read_call(self, ctx: Any, name: str, args: dict[str, Any]) -> ToolResult:
        """A resource or prompt read: the tool that reads it, through the same gate as a client's call.

        It runs in the session of the request that asked (``ctx``), passed with the call.
        """
        with self._asking(new_call_id(), None) as options:
            return await self.rig.call(name, args, origin="mcp", session_id=self.sessions.of(ctx), **options)

    async def _set_logging_level(
        self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams
    ) -> EmptyResult:
        from mcp.types import EmptyResult

        self.log_levels.set(ctx, params.level)
        return EmptyResult()

    @continues_client_trace  # telemetry: a request's traceparent (in _meta or HTTP headers) is the call's parent
    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        close, after = ctx.close_sse_stream, self.sse_poll_after
        try:
            if close is None or after is None:
                return await self._call_tool_now(ctx, params)
            if after <= 0:
                await close()
                return await self._call_tool_now(ctx, params)
            async with anyio.create_task_group() as group:
                group.start_soon(_close_stream_after, after, close)
                result = await self._call_tool_now(ctx, params)
                group.cancel_scope.cancel()
            return result
        finally:
            if self.resources.subscriptions.by_uri:
                with anyio.CancelScope(shield=True):
                    await self.resources.notify_changes()

    async def _call_tool_now(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        args = params.arguments or {}
        if _can_elicit(ctx) and not ctx.session.can_send_request and self._group is not None:
            return await self._call_parked(ctx, params)
        call_id = new_call_id()
        asker = ElicitingAsker(ctx) if _can_elicit(ctx) else None
        with self._asking(call_id, asker, _client_sampler(ctx)) as options:
            result = await self._invoke(ctx, params.name, args, ctx.session.report_progress, options)
        return call_tool_result(result, structured=self.structured(params.name))

    @contextmanager
    def _asking(
        self, call_id: str, asker: Asker | None, sampler: ClientSampler | None = None
    ) -> Iterator[dict[str, Any]]:
        """The call's options: its scope, whose approvals and questions go to ``asker``, its sampling to ``sampler``.

        Made per request and passed with the call: nothing of the client is registered on the Rig.
        """
        channel = McpApprovalChannel(self.fallback, asker) if self.owns_approvals else None
        scope = CallScope(
            channel=channel, models=ModelSource(client=sampler, from_client=True), origin="mcp", background=self._jobs
        )
        yield {"call_id": call_id, "scope": scope}

    async def _invoke(
        self,
        ctx: ServerRequestContext[Any, Any],
        name: str,
        args: dict[str, Any],
        report: Report,
        options: dict[str, Any],
        *,
        logs: bool = True,
    ) -> ToolResult:
        from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

        session_id = self.sessions.of(ctx)
        call = partial(self.rig.call, name, args, origin="mcp", session_id=session_id, **options)
        progress = progress_token_from_params(ctx.params) is not None
        levels = self.log_levels.allowed(ctx) if logs else frozenset()
        if not progress and not levels:
            return await call()
        relay = CallRelay(self.rig.events, report if progress else None, partial(_send_log, ctx), levels)
        async with anyio.create_task_group() as group:
            group.start_soon(relay.forward)
            try:
                result: ToolResult = await call(events=relay)
            finally:
                relay.close()
        return result

    async def _call_parked(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        """A 2026-era call that may have to ask: run it aside, and answer each round with questions or the result."""
        from mcp.types import InputRequiredResult

        args = params.arguments or {}
        bound = fingerprint(params.name, args)
        parked = self._parked.pop(params.request_state, None) if params.request_state else None
        if parked is not None and parked.fingerprint == bound and parked.questions:
            parked.answer(dict(params.input_responses or {}))
        else:
            if parked is not None:
                parked.cancel()  # the state came back with another call: the old one is abandoned
            parked = ParkedCall(bound, self.approval_timeout)
            if self._group is None:
                raise RuntimeError("serve inside `async with server.running()`")
            # Its questions are parked for the client's next round.
            channel = McpApprovalChannel(self.fallback, parked) if self.owns_approvals else None
            scope = CallScope(channel=channel, models=ModelSource(from_client=True), origin="mcp")
            options: dict[str, Any] = {"call_id": new_call_id(), "scope": scope}
            # Log lines are not relayed: the round that started the call may be over before they come.
            call = partial(self._invoke, ctx, params.name, args, _report_to(parked), options, logs=False)
            self._group.start_soon(self._run_parked, parked, call)
        parked.report = ctx.session.report_progress
        try:
            outcome = await parked.next()
        finally:
            parked.report = None
        if outcome == "questions":
            self._parked[parked.key] = parked
            requests = {key: elicit_request(request) for key, request in parked.questions.items()}
            return InputRequiredResult(input_requests=dict(requests), request_state=parked.key)
        if parked.result is None:
            return call_tool_result(ToolResult.error(ErrorType.CANCELLED, "The call was cancelled."), structured=False)
        return call_tool_result(parked.result, structured=self.structured(params.name))

    async def _run_parked(self, parked: ParkedCall, call: Callable[[], Awaitable[ToolResult]]) -> None:
        try:
            await parked.run(call)
        finally:
            # Still parked when it ends: no round is waiting for it (its client went away). Forget it.
            if self._parked.get(parked.key) is parked:
                del self._parked[parked.key]
                parked.abandon()

    # ------------------------------------------------------------------------------------ transports

    async def serve_stdio(self, *, opening: bool = True, max_message_bytes: int | None = None) -> None:
        """Serve one client over this process's stdin and stdout until it disconnects.

        ``opening`` answers ``initialize`` and ``tools/list`` before the SDK is imported (``mcp_opening``);
        False leaves every message to the SDK from the start, as a reference. A message longer than
        ``max_message_bytes`` (default ``toolrig.sources.MAX_MESSAGE_BYTES``, 4 MiB) is refused with an error.
        """
        from toolrig.adapters.mcp_fast import FastToolCalls
        from toolrig.adapters.mcp_stdio import serve
        from toolrig.sources import MAX_MESSAGE_BYTES

        async def run(read: Any, write: Any) -> None:
            await self.server.run(read, write, self.server.create_initialization_options())

        from toolrig.policy.audit import background_ends
        from toolrig.sandbox.background import BackgroundJobs

        ends = background_ends(self.rig.governance.audit, "mcp")
        async with self.running(), BackgroundJobs.open(on_end=ends) as self._jobs:  # they end with the client's
            await serve(
                run,
                self._load_sdk,
                FastToolCalls(self),
                self.opening() if opening else None,
                max_message_bytes=max_message_bytes or MAX_MESSAGE_BYTES,
            )

    def _load_sdk(self) -> None:
        """Import the SDK and build its server (in a thread of the stdio transport, while it answers)."""
        from mcp.shared.message import SessionMessage  # noqa: F401 # what the transport's first hand-over needs
        from mcp.types import jsonrpc_message_adapter  # noqa: F401

        self.server.create_initialization_options()

    async def call_plainly(self, name: str, args: dict[str, Any]) -> ToolResult:
        """A call with no progress token from a client that cannot elicit: ``_call_tool`` minus the SDK."""
        call_id = new_call_id()
        try:
            with self._asking(call_id, None) as options:
                return await self.rig.call(name, args, origin="mcp", session_id=self.session_id, **options)
        finally:
            if self.resources.subscriptions.by_uri:
                with anyio.CancelScope(shield=True):
                    await self.resources.notify_changes()


def _object_schema(schema: dict[str, Any] | None) -> bool:
    """2025-era clients take only object output schemas; a tool with another kind lists none (text alone)."""
    return schema is not None and schema.get("type") == "object"


async def _close_stream_after(seconds: float, close: CloseSSEStreamCallback) -> None:
    """Tell the client to poll: its stream ends, the call goes on, and the result waits in the event store."""
    await anyio.sleep(seconds)
    await close()


def _report_to(parked: ParkedCall) -> Report:
    """Progress of a parked call goes to whichever round is waiting for it (none: dropped)."""

    async def report(progress: float, total: float | None, message: str | None) -> None:
        if parked.report is not None:
            await parked.report(progress, total, message)

    return report


async def _send_log(ctx: ServerRequestContext[Any, Any], line: ToolLogEvent) -> None:
    """One log line on the call's own stream (``send_notification``: the SDK's log helper is deprecated)."""
    from mcp.types import LoggingMessageNotification, LoggingMessageNotificationParams

    params = LoggingMessageNotificationParams(level=line.level, data=line.message, logger=line.name)
    await ctx.session.send_notification(LoggingMessageNotification(params=params), related_request_id=ctx.request_id)


def _client_sampler(ctx: ServerRequestContext[Any, Any]) -> ClientSampler | None:
    """The calling client's model for this call's ``ctx.sample``, when it declared sampling and can be asked now.

    A refusal by the client (its user said no, it has no model) is the tool's error result, as the client said it.
    """
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.sampling is None or not ctx.session.can_send_request:
        return None

    async def sample(turns: list[tuple[str, str]], max_tokens: int, system: str | None) -> Sample:
        from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
        from mcp.types import SamplingMessage, TextContent

        from toolrig.context import Sample

        messages = [
            SamplingMessage(
                role="assistant" if role == "assistant" else "user", content=TextContent(type="text", text=text)
            )
            for role, text in turns
        ]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # 2026-07-28 deprecates it; 2025 clients sample
                result = await ctx.session.create_message(
                    messages, max_tokens=max_tokens, system_prompt=system, related_request_id=ctx.request_id
                )
        except (MCPError, NoBackChannelError) as exc:
            raise ToolError(ErrorType.UNAVAILABLE, f"The MCP client did not sample: {str(exc)[:300]}") from None
        text = result.content.text if isinstance(result.content, TextContent) else ""
        return Sample(text, str(result.model)[:200], str(result.stop_reason or "endTurn"))

    return sample


def _can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client can show a form (an empty elicitation capability means form mode, per the spec)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)
