"""Which toolrig session an MCP connection is: one per MCP session, never one per process.

Tools keep per-session state under ``ToolContext.session_id`` (run_command's working directory, the todo
list, follow-up suggestions, loaded skills, subagents) and the audit log's ``session`` column names it. Over
stdio the process serves one client, so the server's own id is that client's. Over streamable HTTP every
client that initializes gets its own ``Mcp-Session-Id``, and so its own toolrig session id: one client's
``cd`` or todo list must not become another's. A 2026-07-28 request over HTTP has no session at all (the
protocol is one exchange per request), so each such request is a session of its own: nothing it leaves
behind is seen by a later request.

The id of the request being served travels in a context variable too, for the paths the SDK reaches
without a request context of ours (a resource read or a prompt goes through a tool call).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from toolrig.adapters.mcp_logging import NO_SESSION, connection_key

MAX_SESSIONS = 4096  # bounded: sessions that come and go cannot grow the map forever (the oldest unused go)


def new_session_id() -> str:
    return f"mcp-{os.getpid()}-{os.urandom(4).hex()}"


class SessionIds:
    """MCP session (``Mcp-Session-Id``, or the one stdio connection) -> toolrig session id."""

    def __init__(self, own: str, limit: int = MAX_SESSIONS) -> None:
        self.own = own  # the stdio connection's, and any request that carries no MCP session
        self._ids: OrderedDict[str, str] = OrderedDict()
        self._limit = limit

    def of(self, ctx: Any) -> str:
        key = connection_key(ctx)
        if key == NO_SESSION:
            # Over HTTP without a session (a 2026-07-28 request is one self-contained exchange) nothing may
            # carry over to the next request, least of all to another client's: a session of its own.
            return self.own if getattr(ctx, "request", None) is None else new_session_id()
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = new_session_id()
            while len(self._ids) > self._limit:
                self._ids.popitem(last=False)
        else:
            self._ids.move_to_end(key)
        return found
