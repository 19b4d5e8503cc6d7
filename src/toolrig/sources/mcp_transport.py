"""Connecting to one configured MCP server (stdio or streamable HTTP) with the official ``mcp`` client.

Trust model: only servers from trusted config are started; a stdio server gets a minimal environment
(PATH, HOME... plus its configured ``env``) and its stderr goes to a log file, never to our protocol pipe.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.config import McpServerConfig
from toolrig.sources import MAX_MESSAGE_BYTES
from toolrig.version import __version__

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client._transport import TransportStreams

    from toolrig.sources.mcp_auth import Interactive
    from toolrig.sources.mcp_relay import Relay
    from toolrig.sources.mcp_tokens import McpTokenStore

log = logging.getLogger("toolrig.mcp")

MAX_PAGES = 100


class McpStartError(Exception):
    """The server could not be started, reached or listed; the message says why."""


@dataclass
class Connection:
    """A started server: the client, what it listed, and an event set when its output ends (it exited)."""

    client: Client
    definitions: list[dict[str, Any]]
    closed: anyio.Event


class _EofWatch:
    """Passes a transport's read stream through, setting ``closed`` when it ends: the server has gone."""

    def __init__(self, inner: Any, closed: anyio.Event) -> None:
        self._inner = inner
        self._closed = closed

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed.set()
            raise

    async def aclose(self) -> None:
        self._closed.set()
        await self._inner.aclose()

    def __aiter__(self) -> _EofWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _EofWatch:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@dataclass
class _Refusal:
    """The last HTTP error a remote server answered: the SDK turns it into "Server returned an error response"."""

    status: int | None = None
    reason: str = ""
    challenge: str = ""

    async def __call__(self, response: Any) -> None:
        if response.status_code >= 400:
            self.status, self.reason = response.status_code, response.reason_phrase
            self.challenge = response.headers.get("www-authenticate", "")

    def __str__(self) -> str:
        text = f"the server answered HTTP {self.status} {self.reason}".rstrip()
        if self.status == 401:
            text += " (it wants authorization" + (f": {self.challenge[:200]}" if self.challenge else "") + ")"
        return text


@asynccontextmanager
async def _streams(
    name: str,
    config: McpServerConfig,
    log_path: Path,
    closed: anyio.Event,
    refusal: _Refusal,
    *,
    interactive: Interactive | None = None,
    store: McpTokenStore | None = None,
) -> AsyncIterator[TransportStreams]:
    if config.url is not None:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

        from toolrig.sources.mcp_auth import auth_for
        from toolrig.sources.mcp_bounded import BoundedReplies

        auth = auth_for(name, config, interactive=interactive, store=store)
        async with httpx2.AsyncClient(  # create_mcp_http_client's settings, with replies bounded
            headers=dict(config.headers),
            auth=auth,
            timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            transport=BoundedReplies(httpx2.AsyncHTTPTransport(), MAX_MESSAGE_BYTES),
        ) as http:
            http.event_hooks["response"].append(refusal)
            async with streamable_http_client(config.url, http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES) as (
                read,
                write,
            ):
                yield _EofWatch(read, closed), write
        return
    import sys

    from mcp.client.stdio import StdioServerParameters

    if sys.platform == "win32":  # pragma: no cover - the SDK's: its lines are not bounded
        from mcp.client.stdio import stdio_client
    else:
        from toolrig.sources.mcp_stdio_client import stdio_client

    params = StdioServerParameters(
        command=config.command or "", args=config.args, env=config.env or None, cwd=config.cwd
    )
    # The log lives in the state dir a cloned repository may have seeded: reached without following links.
    import os

    from toolrig.sandbox.statedir import StatePath

    log_fd = StatePath.of(log_path.parent).open_append(log_path.name)
    with os.fdopen(log_fd, "a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            yield _EofWatch(read, closed), write


async def list_tools(client: Client) -> list[dict[str, Any]]:
    from toolrig.sources.mcp_tool import definition_of

    definitions: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        definitions.extend(d for d in map(definition_of, page.tools) if d is not None)
        cursor = page.next_cursor
        if cursor is None:
            break
    return definitions


@asynccontextmanager
async def connect(
    name: str,
    config: McpServerConfig,
    log_path: Path,
    *,
    interactive: Interactive | None = None,
    store: McpTokenStore | None = None,
    relay: Relay | None = None,
) -> AsyncIterator[Connection]:
    """Start (or reach) the server, list its tools, and keep the connection for the body of the block.

    Anything that goes wrong before the body runs is an ``McpStartError`` naming the server; the start-up,
    handshake and listing share ``startup_timeout_seconds``. Leaving the block stops a stdio server.
    """
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp.types import Implementation

    from toolrig.sources.mcp_tokens import McpAuthError

    closed = anyio.Event()
    refusal = _Refusal()
    started = False
    timeout = config.startup_timeout_seconds
    where = f" (its stderr is in {log_path})" if config.command is not None else ""
    try:
        # The deadline covers only the start: it is lifted before the body runs. The scope must enclose the
        # whole client context (anyio scopes nest strictly), hence the deadline rather than fail_after.
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
            client_info = Implementation(name="toolrig", version=__version__)
            streams = _streams(name, config, log_path, closed, refusal, interactive=interactive, store=store)
            callbacks: dict[str, Any] = {}
            if relay is not None:  # the server's own requests: questions, the model, roots, list changes
                callbacks = {"elicitation_callback": relay.elicit, "message_handler": relay.on_message}
                if config.roots is not None:
                    # Only folders the user named: a server told of the workspace (a filesystem server
                    # switches to its roots) reads it under its own rules, never toolrig's deny_globs.
                    callbacks["list_roots_callback"] = relay.roots
                if config.sampling is not None:
                    callbacks["sampling_callback"] = relay.sample
            async with Client(streams, cache=None, client_info=client_info, **callbacks) as client:
                definitions = await list_tools(client)
                scope.deadline = math.inf
                started = True
                yield Connection(client, definitions, closed)
    except (OSError, MCPError, ValueError, McpAuthError) as exc:
        if started:
            raise
        why: object = _auth_problem([exc]) or (refusal if refusal.status is not None else exc)
        raise McpStartError(f"the MCP server '{name}' could not be started: {why}{where}") from None
    except ExceptionGroup as group:
        if started:
            raise
        why = _auth_problem(_leaves(group)) or (refusal if refusal.status is not None else _cause(group))
        raise McpStartError(f"the MCP server '{name}' could not be started: {why}{where}") from None
    if not started:
        raise McpStartError(f"the MCP server '{name}' did not start within {timeout:g} seconds{where}")


def _leaves(error: BaseException) -> list[BaseException]:
    leaves: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop(0)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            leaves.append(current)
    return leaves


def _cause(error: BaseException) -> str:
    """The innermost errors of nested task groups, in words: "unhandled errors in a TaskGroup" says nothing."""
    return "; ".join(dict.fromkeys(_describe(leaf) for leaf in _leaves(error))) or str(error)


def _auth_problem(errors: list[BaseException]) -> str | None:
    """What went wrong signing in, when that is why the start failed: the most useful thing to tell the user."""
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    from toolrig.sources.mcp_tokens import McpAuthError

    for error in errors:
        seen: BaseException | None = error
        while seen is not None:  # the SDK may wrap the auth error in its own
            if isinstance(seen, McpAuthError):
                return str(seen)
            if isinstance(seen, OAuthFlowError | OAuthRegistrationError | OAuthTokenError):
                return f"signing in failed: {seen}"
            seen = seen.__cause__ or seen.__context__
    return None


def _describe(error: BaseException) -> str:
    text = str(error)
    return text if text else type(error).__name__
