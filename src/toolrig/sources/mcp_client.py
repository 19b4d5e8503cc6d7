"""Tools of other MCP servers, used as toolrig tools: ``server/tool``, sent to providers as ``server__tool``.

Trust model: servers come only from trusted config (the user's, or a workspace the user trusted); what
they say is untrusted data: schemas are cut to a budget, definitions are fingerprinted and a changed one
is blocked until ``toolrig mcp trust NAME``, and results reach the model as tool output, nothing more.

Every call goes through the executor like any other tool, so policy, approvals, rate limits, audit and
output caps apply. A server starts on the first call (``async with rig:`` keeps it running for the run;
without it each call starts and stops its own), restarts once after a crash, and stops with the rig.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from toolrig.config import McpServerConfig
from toolrig.context import ToolContext
from toolrig.definition import Tool
from toolrig.errors import ErrorType, ToolError
from toolrig.sources.mcp_relay import Relay
from toolrig.sources.mcp_tool import McpTool, McpToolOutput, provider_name, tool_output
from toolrig.sources.mcp_transport import Connection, McpStartError, connect, list_tools
from toolrig.sources.mcp_trust import TrustStore
from toolrig.trace_context import trace_meta

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus

log = logging.getLogger("toolrig.mcp")


@dataclass
class _Live:
    """A started server and which of its tools are blocked because their definitions changed."""

    conn: Connection
    blocked: dict[str, str] = field(default_factory=dict)
    stop: anyio.Event = field(default_factory=anyio.Event)
    counted: bool = False  # its crash was counted already


def _run_blocking(fn: Callable[[], Any]) -> Any:
    """Run an async function to completion from sync code, even from inside a running event loop.

    Only the registry's first listing of a server never seen before needs this; inside a loop it runs on a
    helper thread with its own loop (and the calling loop waits): ``async with rig:`` avoids that case.
    """
    try:
        anyio.get_current_task()
    except RuntimeError:
        return anyio.run(fn)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = anyio.run(fn)
        except BaseException as exc:  # handed to the waiting thread, which re-raises it
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="toolrig-mcp-listing", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class McpServer:
    """One configured server: its tools for the registry, its connection, its crash budget."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        *,
        store: TrustStore | None = None,
        log_dir: Path | None = None,
        root: Path | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.store = store or TrustStore()
        self.log_path = (log_dir or Path(".toolrig") / "logs") / f"mcp-{name}.log"
        self.relay = Relay(name, config, root or self.log_path.parent.parent.parent)
        self._group: TaskGroup | None = None
        self._live: _Live | None = None
        self._lock: anyio.Lock | None = None
        self._crashes = 0  # since the last call that succeeded; a second one keeps the server down
        self.start_error: str | None = None  # why the last start failed, if it did

    # ------------------------------------------------------------------------------------ listing

    async def list_once(self) -> list[dict[str, Any]]:
        """Start the server on its own connection, list its tools, stop it (never touches the run's connection)."""
        async with connect(self.name, self.config, self.log_path) as conn:
            return conn.definitions

    def load_tools(self) -> list[McpTool]:
        """The tools to register: the trusted definitions, listed once and trusted on first use if never seen.

        A server that cannot be listed contributes no tools (logged): one broken server must not take the
        catalog down with it.
        """
        trusted = self.store.trusted(self.name, self.config)
        if trusted is None:
            if self.start_error is not None:  # already tried in this run (``McpServers.open``)
                return []
            try:
                listing = _run_blocking(self.list_once)
            except McpStartError as exc:
                self.start_error = str(exc)
                log.error("%s; its tools are not offered", exc)
                return []
            self.store.accept(self.name, self.config, listing)
            trusted = self.store.trusted(self.name, self.config) or {}
        return self.make_tools([entry["definition"] for entry in trusted.values()])

    def make_tools(self, definitions: Iterable[dict[str, Any]]) -> list[McpTool]:
        taken: set[str] = set()
        tools = []
        for definition in sorted(definitions, key=lambda d: str(d["name"])):
            name = provider_name(self.name, definition["name"], taken)
            taken.add(name)
            tools.append(McpTool(self, definition, name))
        return tools

    def _blocked(self, definitions: list[dict[str, Any]]) -> dict[str, str]:
        """Compare a live listing with the trusted one: changed definitions are blocked, never re-trusted here."""
        if self.store.trusted(self.name, self.config) is None:
            self.store.accept(self.name, self.config, definitions)
            return {}
        diff = self.store.diff(self.name, self.config, definitions)
        if diff:
            log.warning(
                "MCP server %r changed its tools since they were trusted (changed: %s; new: %s; gone: %s); "
                "run `toolrig mcp trust %s` to review and accept them",
                self.name,
                ", ".join(diff.changed) or "none",
                ", ".join(diff.added) or "none",
                ", ".join(diff.removed) or "none",
                self.name,
            )
        return {
            name: (
                f"The MCP server '{self.name}' changed the definition of '{name}' (its description or schema) "
                "since the user trusted it, so calls to it are blocked."
            )
            for name in diff.changed
        }

    # ------------------------------------------------------------------------------------ the run's connection

    def attach(self, group: TaskGroup | None) -> None:
        """Keep connections running in ``group`` (the rig's), or start one per call when None."""
        self._group = group
        if group is None:
            self._live = None
            self._lock = None

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop.set()

    async def _own(self, *, task_status: TaskStatus[_Live]) -> None:
        live: _Live | None = None
        try:
            async with connect(self.name, self.config, self.log_path, relay=self.relay) as conn:
                live = _Live(conn, self._blocked(conn.definitions))
                task_status.started(live)
                async with anyio.create_task_group() as watch:

                    async def stop_when(event: anyio.Event) -> None:
                        await event.wait()
                        watch.cancel_scope.cancel()

                    watch.start_soon(stop_when, live.stop)
                    watch.start_soon(stop_when, conn.closed)
                    watch.start_soon(self._listen, conn)
        except Exception:
            if live is None:
                raise
            # After the start, nothing may escape: the rig's task group would cancel the user's code.
            log.warning("MCP server %r: closing its connection failed", self.name, exc_info=True)

    async def _listen(self, conn: Connection) -> None:
        """From 2026-07-28 a server tells only listeners that its tools changed; older ones notify everyone."""
        from mcp.client.subscriptions import ListenNotSupportedError
        from mcp.shared.exceptions import MCPError

        try:
            async with conn.client.listen(tools_list_changed=True) as changes:
                async for _ in changes:
                    self.relay.mark_changed()
        except ListenNotSupportedError:
            return  # an older server: its notifications/tools/list_changed reach the relay's message handler
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream) as exc:
            log.debug("MCP server %r: no change notices (%s)", self.name, exc)
        except Exception as exc:  # SubscriptionLost and kin: the server went away or stopped listening
            log.debug("MCP server %r: its change notices ended (%s)", self.name, exc)

    async def _connection(self) -> _Live:
        live = self._live
        if live is not None and not live.conn.closed.is_set():
            return live
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            live = self._live
            if live is not None and not live.conn.closed.is_set():
                return live
            if live is not None:
                self._count_crash(live)
                live.stop.set()
                self._live = None
            if self._crashes > 1:
                raise ToolError(
                    ErrorType.UNAVAILABLE,
                    f"The MCP server '{self.name}' stopped again right after a restart, so it stays stopped for "
                    "this run.",
                    f"Use other tools; the user can check the server (log: {self.log_path}).",
                    retryable=False,
                )
            if self._group is None:
                raise ToolError(ErrorType.UNAVAILABLE, f"The MCP server '{self.name}' was stopped with its rig.")
            try:
                self._live = await self._group.start(self._own)
            except McpStartError as exc:
                self._crashes += 1
                self.start_error = str(exc)
                raise _unavailable(exc) from None
            self.start_error = None
            return self._live

    def _count_crash(self, live: _Live) -> None:
        if not live.counted:
            live.counted = True
            self._crashes += 1

    # ------------------------------------------------------------------------------------ calls

    async def call(self, remote: str, args: dict[str, Any], ctx: ToolContext) -> McpToolOutput:
        if self._group is not None:
            return await self._call_on(await self._connection(), remote, args, ctx)
        # No run to keep the server in: this call starts and stops its own.
        outcome: McpToolOutput | ToolError
        try:
            async with connect(self.name, self.config, self.log_path, relay=self.relay) as conn:
                try:
                    outcome = await self._call_on(_Live(conn, self._blocked(conn.definitions)), remote, args, ctx)
                except ToolError as err:
                    outcome = err  # raised below, outside the client's task groups
        except McpStartError as exc:
            raise _unavailable(exc) from None
        if isinstance(outcome, ToolError):
            raise outcome
        return outcome

    async def _call_on(self, live: _Live, remote: str, args: dict[str, Any], ctx: ToolContext) -> McpToolOutput:
        from mcp.shared.exceptions import MCPError
        from pydantic import ValidationError

        if self.relay.stale:
            await self._refresh(live)
        if remote in live.blocked:
            raise ToolError(
                ErrorType.DENIED,
                live.blocked[remote],
                f"Do not retry; the user must review and accept the change with `toolrig mcp trust {self.name}`.",
            )
        if all(d["name"] != remote for d in live.conn.definitions):
            raise ToolError(
                ErrorType.NOT_FOUND,
                f"The MCP server '{self.name}' no longer offers the tool '{remote}'.",
                "Use another tool.",
            )

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            ctx.progress(progress, total, message)

        self.relay.calls.append(ctx)  # the server may ask this call's user a question, or sample
        try:
            # telemetry: the current trace context travels in _meta (None when off)
            result = await live.conn.client.call_tool(remote, args, progress_callback=on_progress, meta=trace_meta())
        except MCPError as exc:
            raise self._protocol_error(exc, live) from None
        except (RuntimeError, ValidationError) as exc:
            # The SDK checks results against the protocol and the tool's own output schema.
            raise ToolError(
                ErrorType.INTERNAL,
                f"The MCP server '{self.name}' answered '{remote}' with a malformed result: {str(exc)[:500]}",
            ) from None
        finally:
            self.relay.calls.remove(ctx)
        self._crashes = 0
        return tool_output(self.name, remote, result)

    async def _refresh(self, live: _Live) -> None:
        """Re-read a listing the server said changed: removed tools go, changed ones are blocked until trusted."""
        from mcp.shared.exceptions import MCPError

        self.relay.stale = False
        try:
            definitions = await list_tools(live.conn.client)
        except MCPError as exc:
            log.warning("MCP server %r: re-reading its changed tool list failed: %s", self.name, exc)
            return
        live.conn.definitions = definitions
        live.blocked = self._blocked(definitions)

    def _protocol_error(self, exc: Exception, live: _Live) -> ToolError:
        from mcp.types import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT

        from toolrig.sources.mcp_bounded import TOO_LARGE

        code = getattr(getattr(exc, "error", None), "code", None)
        message = str(getattr(getattr(exc, "error", None), "message", exc))[:1000]
        if code == CONNECTION_CLOSED:
            self._count_crash(live)
            return ToolError(
                ErrorType.UNAVAILABLE,
                f"The MCP server '{self.name}' stopped during the call; whether the call took effect is unknown.",
                "Check the current state before retrying; the server is restarted (once) by the next call.",
                retryable=True,
            )
        if code == REQUEST_TIMEOUT:
            return ToolError(ErrorType.TIMEOUT, f"The MCP server '{self.name}' did not answer in time: {message}")
        if code == INVALID_PARAMS:
            return ToolError(ErrorType.INVALID_INPUT, f"The MCP server '{self.name}' refused the arguments: {message}")
        if code == METHOD_NOT_FOUND:
            return ToolError(ErrorType.UNAVAILABLE, f"The MCP server '{self.name}' does not serve tools: {message}")
        if TOO_LARGE in message:  # its reply, stopped by our transport (mcp_bounded) as it came
            return ToolError(ErrorType.TOO_LARGE, f"The MCP server '{self.name}' answered with too much: {message}")
        return ToolError(ErrorType.INTERNAL, f"The MCP server '{self.name}' failed the call: {message}")


def _unavailable(exc: McpStartError) -> ToolError:
    text = str(exc)
    return ToolError(
        ErrorType.UNAVAILABLE,
        f"{text[:1].upper()}{text[1:]}.",
        "Use other tools; the user can check the server's configuration and log.",
    )


# ---------------------------------------------------------------------------------------------- all servers


def _load(server: McpServer) -> list[Tool[Any, Any]]:
    return list(server.load_tools())


class LazyGroups(Protocol):
    """Where the servers' tools are registered (``toolrig.registry.Registry``, above sources): loaded on need."""

    def add_lazy_group(self, key: str, loader: Callable[[], list[Tool[Any, Any]]], *, remote: bool = False) -> None: ...


class McpServers:
    """The configured servers of one rig: registered as lazy tool groups, started and stopped with the rig."""

    def __init__(
        self,
        configs: dict[str, McpServerConfig],
        *,
        state_dir: Path,
        store: TrustStore | None = None,
        root: Path | None = None,
    ) -> None:
        store = store or TrustStore()
        root = root or state_dir.parent  # the workspace: the one root servers are told about
        self.servers = {
            name: McpServer(name, config, store=store, log_dir=state_dir / "logs", root=root)
            for name, config in configs.items()
        }
        self._stack: AsyncExitStack | None = None

    def register(self, registry: LazyGroups) -> None:
        for name, server in self.servers.items():
            registry.add_lazy_group(f"mcp:{name}", partial(_load, server), remote=True)

    async def open(self) -> None:
        """Keep servers running until ``close``; list (and trust on first use) the ones never seen before."""
        if self._stack is not None:
            return
        stack = AsyncExitStack()
        group = await stack.enter_async_context(anyio.create_task_group())
        self._stack = stack
        for server in self.servers.values():
            server.attach(group)
        for server in self.servers.values():
            if server.store.trusted(server.name, server.config) is None:
                try:
                    await server._connection()
                except ToolError as err:
                    log.error("%s", err.message)

    async def close(self) -> None:
        stack, self._stack = self._stack, None
        if stack is None:
            return
        for server in self.servers.values():
            server.stop()
        # The SDK's own shutdown of each server is shielded and bounded; the group waits for it.
        await stack.aclose()
        for server in self.servers.values():
            server.attach(None)
