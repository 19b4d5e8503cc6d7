"""MCP logging: which of a tool's log lines a client gets, at the level it asked for.

2025-era clients set a level per connection with ``logging/setLevel``; until they do, they get nothing
(a client that never asked is not sent a stream of chatter). 2026-era clients opt in per request with
the reserved ``_meta`` log-level key, which the SDK reads for us. Lines go out as ``notifications/message``
on the call's own stream, with the tool's name as the logger.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, get_args

from toolrig.events import LogLevel

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
_MAX_CONNECTIONS = 1024


def at_or_above(level: LogLevel) -> frozenset[LogLevel]:
    return frozenset(LEVELS[LEVELS.index(level) :])


NO_SESSION = ""


def connection_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """The HTTP session a request belongs to (one connection per process over stdio); "" when it names none.

    "" is the one value no session can have (an empty header names none), so a client that calls its session
    "-" or any other word never shares the sessionless requests' state.
    """
    headers = getattr(ctx.request, "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    return session if isinstance(session, str) and session else NO_SESSION


class LogLevels:
    """The level each connection set; bounded, so sessions that come and go cannot grow it forever."""

    def __init__(self) -> None:
        self._levels: OrderedDict[str, LogLevel] = OrderedDict()

    def set(self, ctx: ServerRequestContext[Any, Any], level: LogLevel) -> None:
        key = connection_key(ctx)
        self._levels[key] = level
        self._levels.move_to_end(key)
        while len(self._levels) > _MAX_CONNECTIONS:
            self._levels.popitem(last=False)

    def allowed(self, ctx: ServerRequestContext[Any, Any]) -> frozenset[LogLevel]:
        """The levels this request's client may be sent (empty: send it no log lines)."""
        from mcp.server.connection import allowed_log_levels
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        version = ctx.session.protocol_version
        if version in MODERN_PROTOCOL_VERSIONS:
            meta = ctx.params.get("_meta") if ctx.params is not None else None
            return frozenset(level for level in allowed_log_levels(version, meta) if level in LEVELS)
        level = self._levels.get(connection_key(ctx))
        return at_or_above(level) if level is not None else frozenset()
