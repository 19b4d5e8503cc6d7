"""Tools of other MCP servers, used as toolrig tools: ``server/tool``, sent to providers as ``server__tool``.

Trust model: servers come only from trusted config (the user's, or a workspace the user trusted); what
they say is untrusted data: schemas are cut to a budget, definitions are fingerprinted and a changed one
is blocked until ``toolrig mcp trust NAME``, and results reach the model as tool output, nothing more.

Every call goes through the executor like any other tool, so policy, approvals, rate limits, audit and
output caps apply. A server starts on the first call (``async with rig:`` keeps it running for the run;
without it each call starts and stops its own), restarts once after a crash, and stops with the rig.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from toolrig.adapters.mcp_transport import Connection, McpStartError, connect
from toolrig.adapters.mcp_trust import TrustStore
from toolrig.config import McpServerConfig
from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.schema import budget_schema

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus
    from mcp.types import CallToolResult

    from toolrig.registry import AnyTool, Registry

log = logging.getLogger("toolrig.mcp")

MAX_DESCRIPTION = 4000
MAX_NAME = 256
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_KEPT = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def provider_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """``server__tool`` in the characters every provider accepts, at most 64 long and unique among ``taken``."""
    taken = set(taken)
    name = f"{server}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= 64 and name not in taken and name == f"{server}__{tool}":
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    candidate, extra = f"{name[:55]}_{digest}", 0
    while candidate in taken:  # only a server naming its tools after our mangled names gets here
        extra += 1
        candidate = f"{name[:50]}_{digest}{extra}"
    return candidate


def definition_of(tool: Any) -> dict[str, Any] | None:
    """What the model will read of an MCP ``Tool`` (what the trust store keeps and fingerprints), as JSON.

    Cut to budget here, once: a description past ``MAX_DESCRIPTION`` or schema nodes past the budget are
    never shown, so they are not kept either. A tool with an absurd name is left out (None).
    """
    data: dict[str, Any] = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    name = data.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        log.warning("an MCP tool with an unusable name was left out: %r", str(name)[:80])
        return None
    kept = {key: data[key] for key in _KEPT if key in data}
    for key in ("title", "description"):
        if isinstance(kept.get(key), str):
            kept[key] = kept[key][:MAX_DESCRIPTION]
    kept["inputSchema"] = budget_schema(kept.get("inputSchema"))
    if "outputSchema" in kept:
        kept["outputSchema"] = budget_schema(kept["outputSchema"])
    return kept


# ---------------------------------------------------------------------------------------------- the tool


class McpArguments(BaseModel):
    """Whatever object the remote schema describes; checked against that schema by a subclass per tool."""

    model_config = ConfigDict(extra="allow")
    checker: ClassVar[Callable[[dict[str, Any]], list[str]] | None] = None

    @model_validator(mode="before")
    @classmethod
    def _check_against_remote_schema(cls, data: Any) -> Any:
        if cls.checker is not None and isinstance(data, dict):
            problems = cls.checker(data)
            if problems:
                # ToolError passes through pydantic untouched: the executor reports it before any gate runs.
                plural = "s" if len(problems) != 1 else ""
                raise ToolError(
                    ErrorType.INVALID_INPUT,
                    f"{len(problems)} invalid argument{plural}:\n" + "\n".join(problems),
                    "Fix the arguments above to match the tool's schema and call again.",
                )
        return data


class McpToolOutput(ToolOutput):
    text: str = Field(default="", description="The text the server returned.")
    structured: dict[str, Any] | None = Field(default=None, description="The server's structured result, if any.")
    attachments: list[dict[str, Any]] = Field(
        default_factory=list, description="Non-text content (images, audio, resource links), described, not inlined."
    )


def _schema_checker(schema: dict[str, Any]) -> Callable[[dict[str, Any]], list[str]] | None:
    """A JSON Schema check naming every bad field; None when the schema itself cannot be used."""
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    def skip(*_: Any) -> None:
        return None

    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        base.check_schema(schema)
    except SchemaError:
        return None
    # A hostile regex must not stall the process; the server checks its own patterns and formats.
    lenient = validators.extend(base, {"pattern": skip, "patternProperties": skip, "format": skip})  # type: ignore[no-untyped-call]
    checker = lenient(schema)

    def check(args: dict[str, Any]) -> list[str]:
        try:
            errors = sorted(checker.iter_errors(args), key=lambda e: [str(p) for p in e.absolute_path])
        except Exception:  # an unresolvable $ref and the like: leave the check to the server
            return []
        out = []
        for error in errors[:20]:
            where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
            out.append(f"- '{where}': {error.message[:300]}")
        return out

    return check


class McpTool(Tool[McpArguments, McpToolOutput]):
    """One tool of an MCP server, as the registry and every adapter see it."""

    group = "mcp"
    input_model = McpArguments
    output_model = McpToolOutput
    is_async = True

    def __init__(self, server: McpServer, definition: dict[str, Any], name: str) -> None:
        self.server = server
        self.remote_name: str = definition["name"]
        self.name = name
        self.display_name = f"{server.name}/{self.remote_name}"
        text = definition.get("description") or definition.get("title") or self.remote_name
        self.description = str(text)[:MAX_DESCRIPTION]
        self._schema = budget_schema(definition.get("inputSchema"))
        hints = definition.get("annotations") or {}
        self.open_world = True
        if server.config.trust_annotations:
            self.read_only = hints.get("readOnlyHint") is True
            self.destructive = not self.read_only and hints.get("destructiveHint") is not False
            self.open_world = hints.get("openWorldHint") is not False
        else:
            self.read_only, self.destructive = False, True
        self.timeout_seconds = server.config.timeout_seconds
        model_name = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", name) if part) + "Arguments"
        model = create_model(model_name, __base__=McpArguments)
        model.checker = _schema_checker(self._schema)
        self.input_model = model

    def input_schema(self) -> dict[str, Any]:
        copied: dict[str, Any] = json.loads(json.dumps(self._schema))  # a copy callers may change
        return copied

    def subjects(self, input: McpArguments) -> list[str]:
        """The string arguments (paths, URLs, queries): what approvals and the audit log show."""
        values = [v for v in (input.model_extra or {}).values() if isinstance(v, str)]
        return [f"{self.server.name}/{self.remote_name}", *(v[:200] for v in values[:10])]

    async def execute(self, input: McpArguments, ctx: ToolContext) -> McpToolOutput:
        return await self.server.call(self.remote_name, dict(input.model_extra or {}), ctx)


# ---------------------------------------------------------------------------------------------- a server


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
        self, name: str, config: McpServerConfig, *, store: TrustStore | None = None, log_dir: Path | None = None
    ) -> None:
        self.name = name
        self.config = config
        self.store = store or TrustStore()
        self.log_path = (log_dir or Path(".toolrig") / "logs") / f"mcp-{name}.log"
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
            async with connect(self.name, self.config, self.log_path) as conn:
                live = _Live(conn, self._blocked(conn.definitions))
                task_status.started(live)
                async with anyio.create_task_group() as watch:

                    async def stop_when(event: anyio.Event) -> None:
                        await event.wait()
                        watch.cancel_scope.cancel()

                    watch.start_soon(stop_when, live.stop)
                    watch.start_soon(stop_when, conn.closed)
        except Exception:
            if live is None:
                raise
            # After the start, nothing may escape: the rig's task group would cancel the user's code.
            log.warning("MCP server %r: closing its connection failed", self.name, exc_info=True)

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
            async with connect(self.name, self.config, self.log_path) as conn:
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

        try:
            result = await live.conn.client.call_tool(remote, args, progress_callback=on_progress)
        except MCPError as exc:
            raise self._protocol_error(exc, live) from None
        except (RuntimeError, ValidationError) as exc:
            # The SDK checks results against the protocol and the tool's own output schema.
            raise ToolError(
                ErrorType.INTERNAL,
                f"The MCP server '{self.name}' answered '{remote}' with a malformed result: {str(exc)[:500]}",
            ) from None
        self._crashes = 0
        return tool_output(self.name, remote, result)

    def _protocol_error(self, exc: Exception, live: _Live) -> ToolError:
        from mcp.types import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT

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
        return ToolError(ErrorType.INTERNAL, f"The MCP server '{self.name}' failed the call: {message}")


def _unavailable(exc: McpStartError) -> ToolError:
    text = str(exc)
    return ToolError(
        ErrorType.UNAVAILABLE,
        f"{text[:1].upper()}{text[1:]}.",
        "Use other tools; the user can check the server's configuration and log.",
    )


def tool_output(server: str, remote: str, result: CallToolResult) -> McpToolOutput:
    """A CallToolResult as a tool output; an ``isError`` result becomes a ToolError the model can act on."""
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            size = len(block.data) * 3 // 4
            attachments.append({"type": block.type, "mime_type": block.mime_type, "bytes": size})
        elif isinstance(block, ResourceLink):
            attachments.append({"type": block.type, "uri": str(block.uri), "name": block.name})
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                texts.append(text)
            attachments.append({"type": block.type, "uri": str(resource.uri), "mime_type": resource.mime_type})
    text = "\n".join(texts)
    if result.is_error:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The MCP server '{server}' reported an error from '{remote}': {text[:4000] or 'no details'}",
            "Read the server's message: fix the arguments, or use another approach.",
        )
    structured = result.structured_content
    if structured is not None and not isinstance(structured, dict):
        structured = {"value": structured}
    return McpToolOutput(text=text, structured=structured, attachments=attachments)


# ---------------------------------------------------------------------------------------------- all servers


def _load(server: McpServer) -> list[AnyTool]:
    return list(server.load_tools())


class McpServers:
    """The configured servers of one rig: registered as lazy tool groups, started and stopped with the rig."""

    def __init__(
        self, configs: dict[str, McpServerConfig], *, state_dir: Path, store: TrustStore | None = None
    ) -> None:
        store = store or TrustStore()
        self.servers = {
            name: McpServer(name, config, store=store, log_dir=state_dir / "logs") for name, config in configs.items()
        }
        self._stack: AsyncExitStack | None = None

    def register(self, registry: Registry) -> None:
        for name, server in self.servers.items():
            registry.add_lazy_group(f"mcp:{name}", partial(_load, server))

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
