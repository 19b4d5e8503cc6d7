"""Rig: a workspace, the tools it offers and the config that governs them, bound together.

``Rig`` is what a program holds: ``await rig.call(name, args)`` runs a tool through the one executor,
``rig.schemas("anthropic")`` gives the tool list for a provider request.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ValidationError

from toolrig.approvals import ApprovalChannel
from toolrig.config import Config, LoadedConfig, config_from, load_config
from toolrig.context import HttpAccess
from toolrig.errors import ConfigError, UsageError
from toolrig.events import EventBus, EventSink
from toolrig.executor import Executor, Extensions, ToolCall
from toolrig.hooks import HookChain, HookEvent, Hooks
from toolrig.registry import AnyTool, Registry
from toolrig.result import ToolResult
from toolrig.sandbox.paths import Workspace
from toolrig.stores import Stores

SchemaFormat = Literal["anthropic", "openai", "json"]


class Rig:
    def __init__(
        self,
        root: str | os.PathLike[str] = ".",
        config: Config | dict[str, Any] | str | os.PathLike[str] | None = None,
        *,
        agent: str | None = None,
        tools: Iterable[AnyTool] = (),
        hooks: Iterable[Hooks] = (),
        registry: Registry | None = None,
        extensions: Extensions | None = None,
        approval_channel: ApprovalChannel | None = None,
        http: HttpAccess | None = None,
    ) -> None:
        """Bind a workspace to a catalog and a config.

        ``config`` defaults to the user's and the workspace's files; ``tools`` are added to the catalog
        (``registry``, the built-in catalog and installed plugins by default) before allow/deny apply.
        ``approval_channel`` answers approval requests (a terminal, an MCP client, a program's callback).
        ``http`` replaces the guarded HTTP access tools get (tests inject one with a fake resolver).
        """
        self.loaded: LoadedConfig = load_config(root) if config is None else config_from(config)
        self.config = self.loaded.config
        settings = self.config.workspace
        self.workspace = Workspace(root, extra_roots=settings.extra_paths, read_only=settings.read_only)
        self.agent = agent
        self.events = EventBus()
        self.stores = Stores(self.workspace.state_dir, self.config.stores)
        self._base_registry = registry if registry is not None else Registry.default()
        for item in tools:
            self._base_registry.add(item)
        self._registry: Registry | None = None
        self._tool_configs: dict[str, BaseModel | None] = {}
        self.approval_channel = approval_channel
        self.hooks = HookChain()
        for hook in hooks:
            self.hooks.add(hook)
        self.extensions = extensions or Extensions()
        self.extensions.before_tool.append(self._before_tool_hooks)
        self.extensions.after_tool.append(self._after_tool_hooks)
        self.executor = Executor(
            self._base_registry,
            self.workspace,
            extensions=self.extensions,
            stores=self.stores,
            events=self.events,
            http=http,
            tool_config=self._config_for,
            timeout_seconds=self.config.limits.timeout_seconds,
            output_cap=self.config.output.max_chars,
        )

    def close(self) -> None:
        """Close the stores this rig opened (database connections, the XQuery worker); they reopen on next use."""
        self.stores.close()

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def registry(self) -> Registry:
        """The tools this rig offers: the catalog narrowed by ``tools.allow`` / ``tools.deny``."""
        if self._registry is None:
            selected = self._base_registry.select(self.config.tools.allow, self.config.tools.deny)
            self._validate_tool_config(selected)
            self._registry = selected
            self.executor.registry = selected
        return self._registry

    def tools(self, group: str | None = None) -> list[AnyTool]:
        return self.registry.list(group)

    async def call(
        self, name: str, args: dict[str, Any] | str | None = None, *, events: EventSink | None = None, **options: Any
    ) -> ToolResult:
        """Run one tool call; never raises for anything the tool or its arguments did."""
        if self._registry is None:
            self.registry  # noqa: B018 - narrows the executor's registry before the first call
        if self.agent is not None:
            options.setdefault("agent_id", self.agent)
        return await self.executor.invoke(name, args, events=events, **options)

    def call_sync(self, name: str, args: dict[str, Any] | str | None = None, **options: Any) -> ToolResult:
        """``call`` for code without an event loop (scripts, plain tests)."""
        try:
            anyio.get_current_task()
        except RuntimeError:
            return anyio.run(lambda: self.call(name, args, **options))
        raise UsageError("call_sync() was called inside an event loop; use `await rig.call(...)` there")

    def schemas(self, format: SchemaFormat = "json", *, strict: bool | None = None) -> list[dict[str, Any]]:
        tools = self.registry.list()
        if format == "anthropic":
            from toolrig.adapters.anthropic import tool_params

            return tool_params(tools)
        if format == "openai":
            from toolrig.adapters.openai import function_tools

            return function_tools(tools, strict=strict)
        if format == "json":
            from toolrig.adapters.plain import json_tools

            return json_tools(tools)
        raise UsageError(f"unknown schema format {format!r}: use 'anthropic', 'openai' or 'json'")

    # ------------------------------------------------------------------------------ hooks

    async def _before_tool_hooks(self, call: ToolCall) -> None:
        if len(self.hooks):
            event = HookEvent("before_tool", call.session_id, call.agent_id, tool=call.name, tool_args=call.raw_args)
            await self.hooks.run(event)

    async def _after_tool_hooks(self, call: ToolCall, result: ToolResult) -> ToolResult:
        if len(self.hooks):
            event = HookEvent(
                "after_tool",
                call.session_id,
                call.agent_id,
                tool=call.name,
                tool_args=call.raw_args,
                tool_result=result,
            )
            await self.hooks.run(event)
        return result

    # ------------------------------------------------------------------------------ per-tool config

    def _config_for(self, tool: AnyTool, agent: str | None) -> BaseModel | None:
        if tool.name not in self._tool_configs:
            self._tool_configs[tool.name] = self._build_tool_config(tool)
        return self._tool_configs[tool.name]

    def _build_tool_config(self, tool: AnyTool) -> BaseModel | None:
        raw = self.config.tool_config.get(tool.name)
        if tool.config_model is None:
            if raw:
                file, line = self.loaded.where("tool_config", tool.name)
                raise ConfigError("this tool takes no settings", file=file, key=f"tool_config.{tool.name}", line=line)
            return None
        try:
            return tool.config_model.model_validate(raw or {})
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            keys = ("tool_config", tool.name, *(str(p) for p in first["loc"]))
            file, line = self.loaded.where(*keys)
            message = "unknown setting" if first["type"] == "extra_forbidden" else first["msg"]
            raise ConfigError(message, file=file, key=".".join(keys), line=line) from None

    def _validate_tool_config(self, registry: Registry) -> None:
        """Check every configured tool's settings at start-up, so a typo fails now rather than mid-run."""
        for name in self.config.tool_config:
            tool = self._base_registry.find(name)
            if tool is None:
                file, line = self.loaded.where("tool_config", name)
                raise ConfigError("no tool has this name", file=file, key=f"tool_config.{name}", line=line)
            self._config_for(tool, self.agent)
