"""The common ``tools/call`` over toolrig's own stdio transport, answered without the SDK's request pipeline.

A speed layer (``McpToolServer.serve_stdio``): a plain call, from a client whose protocol era is decided,
goes straight to ``McpToolServer.call_plainly``; anything else (a progress token, a log level, a call that
may ask the client) takes the SDK's path.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from toolrig.adapters.mcp_content import content_json, result_texts

if TYPE_CHECKING:
    from toolrig.adapters.mcp_server import McpToolServer

log = logging.getLogger("toolrig.mcp")


class FastToolCalls:
    """The common ``tools/call`` answered without the SDK's request pipeline (our stdio transport only).

    Profiling one call showed most of the server's time in the SDK's per-request work (validating the
    JSON-RPC message into models, the inbound classification ladder, middleware, the result's re-dump and
    sieve), around an executor call that is a fraction of it. A request this class accepts is exactly one
    the SDK would hand to ``_call_tool`` and that would take its plain branch: a 2026-era connection and
    envelope, no progress token, a client without elicitation (so no parked call), only ``name`` and
    ``arguments``. Everything else, the opening request included, goes the SDK's way. The call itself
    still goes through the rig's executor (policy, approvals, limits, hooks, audit) like any other.
    """

    def __init__(self, server: McpToolServer) -> None:
        from toolrig.adapters.mcp_opening import MODERN_VERSIONS

        self._server = server
        self._modern: bool | None = None  # decided by the first request, as the SDK decides the era
        self._versions = frozenset(MODERN_VERSIONS)
        self._stamp: dict[str, Any] | None = None  # the SDK's serverInfo, once it is loaded

    @property
    def decided(self) -> bool:
        return self._modern is not None

    def opening(self, message: dict[str, Any]) -> None:
        """See every message until the first request; it decides the connection's era."""
        if self._modern is None and "id" in message and isinstance(message.get("method"), str):
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            self._modern = message["method"] != "initialize" and isinstance(meta, dict) and _VERSION_KEY in meta

    def accept(self, message: dict[str, Any]) -> Callable[[], Awaitable[bytes]] | None:
        """The call's answer-maker when the fast path may take this request, else None."""
        params = message.get("params")
        request_id: int | str = message.get("id")  # type: ignore[assignment] # checked just below
        if not (
            self._modern
            and message.get("jsonrpc") == "2.0"
            and message.get("method") == "tools/call"
            and type(request_id) in (int, str)
            and isinstance(params, dict)
            and params.keys() <= {"name", "arguments", "_meta"}
            and isinstance(params.get("name"), str)
            and isinstance(params.get("arguments", {}), dict)
        ):
            return None
        meta = params.get("_meta")
        capabilities = meta.get(_CAPABILITIES_KEY) if isinstance(meta, dict) else None
        if not (
            isinstance(meta, dict)
            and meta.get(_VERSION_KEY) in self._versions
            and isinstance(meta.get(_CLIENT_KEY), dict)
            and isinstance(capabilities, dict)
            and "elicitation" not in capabilities
            and "sampling" not in capabilities  # its calls may sample through the SDK's session
            and "progressToken" not in meta
            and "traceparent" not in meta  # telemetry: a traced call takes the SDK's path, which continues it
            and _LOG_LEVEL_KEY not in meta  # a client that wants this call's log lines
        ):
            return None
        name, args = params["name"], params.get("arguments") or {}
        return partial(self._answer, request_id, name, args)

    async def _answer(self, request_id: int | str, name: str, args: dict[str, Any]) -> bytes:
        server = self._server
        try:
            result = await server.call_plainly(name, args)
        except Exception:  # the executor answers every failure itself; this is the SDK's last resort, kept
            log.exception("tools/call %s failed outside the executor", name)
            error = {"code": -32603, "message": "Internal error"}
            return to_json({"jsonrpc": "2.0", "id": request_id, "error": error}) + b"\n"
        content = [*({"type": "text", "text": t} for t in result_texts(result)), *content_json(result.content)]
        body: dict[str, Any] = {"content": content, "isError": result.is_error}
        if not result.is_error and server.structured(name):
            body["structuredContent"] = result.output
        body["resultType"] = "complete"
        if self._stamp is None:  # the SDK deep-copies it per response (no aliasing); ours is dumped at once
            self._stamp = {_SERVER_INFO_KEY: server.server.server_info_stamp}
        body["_meta"] = self._stamp
        return to_json({"jsonrpc": "2.0", "id": request_id, "result": body}) + b"\n"


_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CLIENT_KEY = "io.modelcontextprotocol/clientInfo"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
_LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
