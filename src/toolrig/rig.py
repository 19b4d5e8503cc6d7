"""Rig: a workspace, the tools it offers and the config that governs them, bound together.

``Rig`` is what a program holds: ``await rig.call(name, args)`` runs a tool through the one executor,
``rig.schemas("anthropic")`` gives the tool list for a provider request.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
from collections.abc import Coroutine, Iterable
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import BaseModel, ValidationError

from toolrig import telemetry as _telemetry
from toolrig.approvals import ApprovalChannel
from toolrig.config import (
    ALLOW_NOTHING,
    CONFIG_FILE,
    Config,
    LoadedConfig,
    config_from,
    is_trusted,
    load_config,
    narrow_settings,
)
from toolrig.config.loading import deep_merge
from toolrig.context import HttpAccess
from toolrig.errors import ConfigError, UsageError
from toolrig.event_bus import EventBus, EventSink
from toolrig.executor import Executor
from toolrig.gate import Extensions, ToolCall
from toolrig.hooks import HookChain, HookGate, Hooks, ScriptHooks
from toolrig.permissions import AgentView
from toolrig.policy.governance import Governance, ToolApprovals
from toolrig.policy.names import unmatched_names
from toolrig.policy.rules import hidden_globs
from toolrig.profiles import Profile, get_profile, tools_named
from toolrig.registry import AnyTool, Registry, matches_any
from toolrig.result import ToolResult
from toolrig.sandbox.paths import STATE_DIR_NAME, Workspace, toolrig_home
from toolrig.sandbox.session import SessionSandbox
from toolrig.scope import DEFAULT
from toolrig.stores import Stores

if TYPE_CHECKING:
    from toolrig.durable.access import TaskRunner
    from toolrig.sources.mcp_client import McpServers

log = logging.getLogger("toolrig.config")

SchemaFormat = Literal["anthropic", "openai", "json"]
# Keywords of Executor.invoke: with keyword-style arguments, these are options unless the tool has such a field.
_EXECUTOR_OPTIONS = frozenset({
    "call_id", "origin", "agent_id", "parent_agent_id", "session_id", "timeout_seconds", "events", "offered", "channel",
})  # fmt: skip


class Rig:
    def __init__(
        self,
        root: str | os.PathLike[str] = ".",
        config: LoadedConfig | Config | dict[str, Any] | str | os.PathLike[str] | None = None,
        *,
        agent: str | None = None,
        tools: Iterable[AnyTool] = (),
        hooks: Iterable[Hooks] = (),
        registry: Registry | None = None,
        extensions: Extensions | None = None,
        approval_channel: ApprovalChannel | None = None,
        http: HttpAccess | None = None,
        strict: bool | None = None,
        profile: str | None = None,
        durable_runner: TaskRunner | None = None,
    ) -> None:
        """Bind a workspace to a catalog and a config.

        ``config`` defaults to the user's and the workspace's files; ``tools`` are added to the catalog
        (``registry``, the built-in catalog and installed plugins by default) before allow/deny apply.
        ``agent`` names the agent profile (``agents:`` in config) whose permissions this rig's calls and
        schemas follow. ``approval_channel`` answers approval requests (a terminal, an MCP client, a
        program's callback); without one, calls that must ask get ``approvals.fallback``.
        ``http`` replaces the guarded HTTP access tools get (tests inject one with a fake resolver).
        ``strict`` (default: the ``TOOLRIG_STRICT`` environment variable) turns config warnings, such as a
        tool name that matches no tool, into errors. ``profile`` names the tool profile (``claude``,
        ``codebuff``...) whose names and shapes ``call``, ``tools`` and ``schemas`` speak by default.
        ``durable_runner`` runs a job now (``cron run``, an agent run: ``toolrig.workers.run_inline``); else refused.

        The catalog is narrowed here, once: the executor never sees a tool ``tools.deny`` removed. Governance
        reads the config here too: a ``Config`` changed after this does not reconfigure the calls' gate (the
        setters do: ``hooks``, ``governance.policy``/``limiter``). A subagent's narrowed
        permissions are never added here: they come with its calls (``AgentView``).
        """
        self.loaded: LoadedConfig = load_config(root) if config is None else config_from(config)
        self.config = self.loaded.config
        self.workspace = self._workspace(root)
        if agent is not None and agent not in self.config.agents:
            known = ", ".join(sorted(self.config.agents)) or "none"
            raise UsageError(f"no agent named {agent!r} is configured (agents: {known}); see `agents:` in config")
        self.agent = agent
        own = getattr(self.config.agents[agent], "profile", None) if agent is not None else None
        self.profile: Profile = get_profile(profile or own)
        self.events = EventBus()
        self.stores = Stores(self.workspace.state_dir, self.config.stores)
        self._base_registry = registry if registry is not None else Registry.default()
        for item in tools:
            self._base_registry.add(item)
        self.mcp_servers: McpServers | None = None
        if self.config.mcp_servers:
            from toolrig.sources.mcp_client import McpServers

            self.mcp_servers = McpServers(self.config.mcp_servers, state_dir=self.workspace.state_dir)
            self.mcp_servers.register(self._base_registry)
        self._views: dict[str | None, Registry] = {}
        self._tool_configs: dict[tuple[str, str | None], BaseModel | None] = {}
        self.governance = Governance(
            self.loaded,
            self.workspace,
            events=self.events,
            channel=approval_channel,
            allowlist_file=self._allowlist_file(config),
        )
        self._forward_approvals()
        self.extensions = extensions or Extensions()
        self._install_gate(hooks)
        self._available = self._base_registry.select(self.config.tools.allow, self.config.tools.deny)
        self._validate_tool_config(self._available)
        self._validate_agents()
        self.warnings = unmatched_names(self.config, self.loaded, self._base_registry)
        self._report_warnings(strict)
        from toolrig.durable.access import DurableAccess  # light: opens nothing until a tool touches it

        self._durable = DurableAccess(self.workspace.root, self.config, self.workspace.state_dir, runner=durable_runner)
        self.executor = self._build_executor(http)

    def _workspace(self, root: str | os.PathLike[str]) -> Workspace:
        """The workspace as the config shapes it: extra roots, read-only parts, and every path a rule hides."""
        settings = self.config.workspace
        return Workspace(
            root,
            extra_roots=settings.extra_paths,
            read_only=settings.read_only,
            # Path deny rules for every tool also hide their paths from recursive reads (hostile review D9).
            deny_globs=[*settings.deny_globs, *hidden_globs(self.config)],
            read_only_globs=settings.read_only_globs,
        )

    def _install_gate(self, hooks: Iterable[Hooks]) -> None:
        """The gate's members, once: governance (policy, limits, approvals, audit), the hook gate, telemetry."""
        self._hooks = HookChain()
        self._hooks.enabled = self.config.hooks.enabled
        for hook in hooks:
            self.hooks.add(hook)
        self._add_script_hooks()
        self.hook_gate = HookGate(self.hooks)
        self.governance.install(self.extensions)
        self.hook_gate.install(self.extensions)
        # telemetry (toolrig.telemetry): None when off; when on, its members trace every call (after the audit)
        self.telemetry = _telemetry.install(self.config.telemetry, self.extensions)

    def _build_executor(self, http: HttpAccess | None) -> Executor:
        """The one executor, with every capability its tools reach; built once, never changed after."""
        from toolrig.catalog.binding import RigCatalog, RigSkills

        return Executor(
            self._available,
            self.workspace,
            extensions=self.extensions,
            stores=self.stores,
            events=self.events,
            http=http,
            approvals=ToolApprovals(self.governance),
            tool_config=self._config_for,
            lookup=self,
            timeout_seconds=self.config.limits.timeout_seconds,
            output_cap=self.config.output.max_chars,
            durable=self._durable,
            catalog=RigCatalog(self),  # the offered-tool catalog, for the tools that list tools
            skills=RigSkills(self),  # the workspace's skills, for the skill tools
            global_config=self.config,
            mcp_servers=None if self.mcp_servers is None else partial(sorted, self.mcp_servers.servers),
            # What commands of calls that bring no session's own share (a network namespace); closed with the Rig.
            sandbox=SessionSandbox(),
        )

    # ------------------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close the audit, rate-limit and tasks databases and the stores (connections, the XQuery worker).

        The stores and the tasks' database reopen on next use; the governance databases also close when the rig is
        garbage-collected. The workspace's mtime caches (an inotify instance each, a per-user resource) are closed
        too, and so are the network namespaces its commands shared (the next command starts a new one).
        """
        self.governance.close()
        self.stores.close()
        self._durable.close()
        if self.executor.sandbox is not None:  # its network namespace; the next command starts a new one
            self.executor.sandbox.close()
        mtimes = sys.modules.get("toolrig.sandbox.mtimes")  # not loaded: no glob ran, no cache to close
        if mtimes is not None:
            mtimes.release(self.workspace)

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Rig:
        """Keep what the rig starts (MCP servers) running until the block ends; see ``aclose``."""
        if self.mcp_servers is not None:
            await self.mcp_servers.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the MCP servers the rig started, then ``close``; outside ``async with`` they live one call each."""
        if self.mcp_servers is not None:
            await self.mcp_servers.close()
        self.close()

    @property
    def hooks(self) -> HookChain:
        """The rig's own hooks: ``rig.hooks.add(MyHooks())`` runs them from the next call on."""
        return self._hooks

    @hooks.setter
    def hooks(self, chain: HookChain) -> None:
        """A chain put in the rig's place is the one its hook gate runs from the next call on."""
        self._hooks = chain
        self.hook_gate.chain = chain

    @property
    def approval_channel(self) -> ApprovalChannel | None:
        """The Rig's own channel (given when it was built); a caller passes its own with its calls."""
        return self.governance.channel

    @property
    def catalog(self) -> Registry:
        """Every tool known to this rig, before config and agents narrow it."""
        return self._base_registry

    @property
    def registry(self) -> Registry:
        """The tools this rig's agent is offered: the catalog narrowed by config and the agent's permissions."""
        return self.registry_for(self.agent)

    def agent_view(self, agent: AgentView | str | None = None) -> AgentView:
        """Whose permissions a call as ``agent`` is judged by (default: the rig's agent); see ``AgentView``."""
        return self.governance.policy.view(self.agent if agent is None else agent)

    def registry_for(self, agent: AgentView | str | None) -> Registry:
        """The tools ``agent`` sees in its schemas: offered by config, in its list, not denied outright."""
        chosen = self.governance.policy.view(agent)
        cache = self._views if chosen.configured else chosen.memo.setdefault("registry", {})
        key = chosen.name if chosen.configured else None
        registry = cache.get(key)
        if registry is None:
            available = self._available
            from toolrig.catalog.binding import for_schemas

            policy = self.governance.policy
            registry = Registry(for_schemas(self, [t for t in available.list() if policy.offered(t, chosen)]))
            cache[key] = registry
        return registry

    # The executor's Lookup: what a caller is offered, and why a known tool is hidden from it.

    def offered_names(self, agent: AgentView | str | None) -> list[str]:
        return self.registry_for(agent).names()

    def hidden(self, name: str, agent: AgentView | str | None) -> tuple[str, str] | None:
        tool = self._base_registry.find(name)
        if tool is None:
            return None
        if matches_any(tool, self.config.tools.deny):
            return "tools.deny", f"tools.deny removes the tool '{tool.name}' from this configuration"
        return "tools.allow", f"the tool '{tool.name}' is not in tools.allow"

    def _report_warnings(self, strict: bool | None) -> None:
        if strict is None:
            strict = os.environ.get("TOOLRIG_STRICT", "").strip().lower() in ("1", "true", "yes", "on")
        for warning in self.warnings:
            if strict and warning.file != self.loaded.untrusted_file:  # a cloned repository's typo stops nothing
                raise ConfigError(
                    f"{warning.message} (strict mode)", file=warning.file, key=warning.key, line=warning.line
                )
            log.warning("%s", warning)

    def tools(
        self, group: str | None = None, *, agent: str | None = None, profile: str | Profile | None = None
    ) -> list[AnyTool]:
        """The tools ``agent`` is offered, under ``profile``'s names and schemas (default: the rig's profile)."""
        tools = self.registry_for(agent or self.agent).list(group)
        from toolrig.adapters.faces import faced

        return faced(tools, self._profile(profile))  # each capability once, under the profile's names

    def _profile(self, profile: str | Profile | None) -> Profile:
        if isinstance(profile, Profile):
            return profile
        return self.profile if profile is None else get_profile(profile)

    def call(
        self,
        name: str,
        args: dict[str, Any] | str | None = None,
        /,
        *,
        events: EventSink | None = None,
        profile: str | Profile | None = None,
        **options: Any,
    ) -> Coroutine[Any, Any, ToolResult]:
        """Run one tool call (``await rig.call(...)``); never raises for anything the tool or its arguments did.

        Arguments come as one dict (or JSON text), or as keywords: ``call("calculate", expression="2+2")``.
        A keyword is a tool argument when the tool has a field of that name, else an executor option
        (``call_id``, ``origin``, ``timeout_seconds``...). ``name`` may be a profile's name (``Bash``) when
        ``profile`` (default: the rig's) has one: the call and its result are translated.

        Not an ``async def``, though it is awaited like one: the common call is the executor's own coroutine,
        with no frame of this method's around it (a tenth of a trivial call's cost in the executor). Python
        3.12+ reports it as a coroutine function all the same (``inspect.markcoroutinefunction``); on 3.11 a
        framework that checks ``inspect.iscoroutinefunction`` needs an ``async def`` around it.
        """
        if not options and profile is None and self.agent is None and not self.profile.faces:
            # The common call (no keywords, no agent, the identity profile): nothing to translate or split.
            return self.executor.invoke(name, args, events=events)
        return self._call(name, args, events, profile, options)

    async def _call(
        self,
        name: str,
        args: dict[str, Any] | str | None,
        events: EventSink | None,
        profile: str | Profile | None,
        options: dict[str, Any],
    ) -> ToolResult:
        chosen = self._profile(profile)
        face = chosen.face(name)
        if args is None and options:
            args, options = self._split_keywords(face.tool if face is not None else name, options)
        # After the split (a tool's own ``agent_id`` field takes that keyword); None or "" is unsaid: the call runs
        # as the rig's agent, never as no agent.
        if self.agent is not None and not options.get("agent_id"):
            options["agent_id"] = self.agent
        if chosen.is_identity:
            return await self.executor.invoke(name, args, events=events, **options)
        from toolrig.adapters.faces import call_speaking
        from toolrig.catalog.binding import RigCatalog

        # The caller speaks ``chosen``: its scope says so, and its tools' catalog names tools as it does.
        scope = options.pop("scope", None) or DEFAULT
        catalog = scope.catalog or self.executor.catalog
        if isinstance(catalog, RigCatalog):
            catalog = catalog.for_caller(profile=chosen)
        scope = scope.child(profile=chosen, catalog=catalog)
        return await call_speaking(self.executor, chosen, name, args, events=events, scope=scope, **options)

    async def decide(
        self, name: str, args: dict[str, Any] | str | None = None, /, *, profile: str | Profile | None = None
    ) -> tuple[ToolCall, ToolResult | None]:
        """Stages 1 and 2 of ``call`` (``policy explain``): the same face translation, nothing run or asked.

        ``name`` may be ``profile``'s name for a tool (``Bash``), translated exactly as ``call`` would.
        """
        chosen = self._profile(profile)
        face = None if chosen.is_identity else chosen.face(name)
        if face is None:
            return await self.executor.decide(name, args, agent_id=self.agent)
        from toolrig.adapters.faces import translate

        translated = translate(chosen, name, args, self.executor.registry.find(face.tool))
        return await self.executor.decide(translated.name, translated.args, agent_id=self.agent, called_as=name)

    def _split_keywords(self, name: str, options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Keywords as (tool arguments, executor options): a field of the tool wins over an option's name."""
        tool = self.executor.registry.find(name)
        fields = set(tool.input_schema().get("properties", {})) if tool is not None else set()
        args = {k: v for k, v in options.items() if k in fields or k not in _EXECUTOR_OPTIONS}
        return args, {k: v for k, v in options.items() if k not in args}

    def call_sync(self, name: str, args: dict[str, Any] | str | None = None, /, **options: Any) -> ToolResult:
        """``call`` for code without an event loop (scripts, plain tests); keywords as in ``call``."""
        try:
            anyio.get_current_task()
        except RuntimeError:
            pass
        else:
            raise UsageError("call_sync() was called inside an event loop; use `await rig.call(...)` there")
        # The main task returns nothing on purpose: on the way out, Python 3.11's asyncio.Runner builds the
        # repr of the main task, result included (signal.getsignal -> ValueError message), which for a
        # multi-megabyte result cost longer than the call itself.
        box: list[ToolResult] = []

        async def main() -> None:
            box.append(await self.call(name, args, **options))

        anyio.run(main)
        return box[0]

    def schemas(
        self,
        format: SchemaFormat = "json",
        *,
        strict: bool | None = None,
        agent: str | None = None,
        profile: str | Profile | None = None,
    ) -> list[dict[str, Any]]:
        """The tool list for a provider request, as ``agent`` (default: the rig's own) is allowed to see it."""
        tools = self.tools(agent=agent, profile=profile)
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

    def _add_script_hooks(self) -> None:
        if not self.config.hooks.enabled:
            return
        directories = [toolrig_home() / "hooks"]
        if is_trusted(self.workspace.root):
            directories.append(self.workspace.state_dir / "hooks")  # the workspace's own: only once trusted
        scripts = ScriptHooks.discover(directories, cwd=self.workspace.root, timeout=self.config.hooks.timeout_seconds)
        if len(scripts):
            self.hooks.add(scripts)

    # ------------------------------------------------------------------------------ approvals.forward

    def _forward_approvals(self) -> None:
        """Race the configured remote channels (Telegram, webhook) against the Rig's own; refusals are audited."""
        settings = self.config.approvals.forward
        if settings.telegram is None and settings.webhook is None:
            return
        from toolrig.remote import remote_channels

        self.governance.broker.forward = remote_channels(settings, self.governance.refused_answer)

    # ------------------------------------------------------------------------------ per-tool config

    def tool_settings(self, tool: AnyTool, agent: AgentView | str | None = None) -> BaseModel | None:
        """The tool's effective settings as ``agent`` sees them (None: it takes none); what a subagent narrows."""
        return self._config_for(tool, agent)

    def _config_for(self, tool: AnyTool, agent: AgentView | str | None) -> BaseModel | None:
        """The tool's settings as ``agent`` sees them: ``agents.NAME.tool_config`` over ``tool_config``."""
        if isinstance(agent, AgentView):
            if not agent.configured:
                return self._child_settings(tool, agent)
            agent = agent.name
        if agent is not None and agent not in self.config.agents:
            agent = None  # an agent without a profile (a subagent's id, say) gets the global settings
        key = (tool.name, agent)
        try:
            return self._tool_configs[key]  # asked on every call: one lookup when it was built before
        except KeyError:
            settings = self._tool_configs[key] = self._build_tool_config(tool, agent)
            return settings

    def _child_settings(self, tool: AnyTool, agent: AgentView) -> BaseModel | None:
        """A subagent's settings: its profile's (its parent's effective ones, narrowed), kept on its view."""
        cache: dict[str, BaseModel | None] = agent.memo.setdefault("settings", {})
        if tool.name in cache:
            return cache[tool.name]
        own = agent.profile.tool_config.get(tool.name) if agent.profile is not None else None
        if tool.config_model is None or not own:
            settings = self._config_for(tool, None)
        else:
            merged = deep_merge(self.config.tool_config.get(tool.name) or {}, own)
            settings = self._narrowed_by_workspace(tool, None, tool.config_model.model_validate(merged))
        cache[tool.name] = settings
        return settings

    def _build_tool_config(self, tool: AnyTool, agent: str | None = None) -> BaseModel | None:
        base = self.config.tool_config.get(tool.name)
        own = self.config.agents[agent].tool_config.get(tool.name) if agent is not None else None
        prefix: tuple[str, ...] = ("agents", agent, "tool_config") if own is not None and agent else ("tool_config",)
        if tool.config_model is None:
            if any(self.loaded.pending_tool_config.get((owner, tool.name)) for owner in (None, agent)):
                self.loaded.warn(f"'tool_config.{tool.name}' is ignored: this tool takes no settings")
            if base or own:
                file, line = self.loaded.where(*prefix, tool.name)
                key = ".".join((*prefix, tool.name))
                raise ConfigError("this tool takes no settings", file=file, key=key, line=line)
            return None
        merged = deep_merge(base or {}, own or {})
        try:
            settings = tool.config_model.model_validate(merged)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            loc = tuple(str(p) for p in first["loc"])
            # Name the file that set the bad value: the agent's section if it set this key, else the global one.
            source = prefix if own is not None and _has_path(own, loc) else ("tool_config",)
            keys = (*source, tool.name, *loc)
            file, line = self.loaded.where(*keys)
            message = "unknown setting" if first["type"] == "extra_forbidden" else first["msg"]
            raise ConfigError(message, file=file, key=".".join(keys), line=line) from None
        return self._narrowed_by_workspace(tool, agent, settings)

    def _narrowed_by_workspace(self, tool: AnyTool, agent: str | None, settings: BaseModel) -> BaseModel:
        """An untrusted workspace's tool settings: the narrowing values apply, the widening ones are warned about."""
        pending = self.loaded.pending_tool_config
        if not pending:
            return settings
        for owner in (None, agent) if agent is not None else (None,):
            proposed = pending.get((owner, tool.name))
            if not proposed:
                continue
            key = f"agents.{owner}.tool_config.{tool.name}" if owner else f"tool_config.{tool.name}"
            warnings: list[str] = []
            settings = narrow_settings(settings, proposed, key, warnings)
            for warning in warnings:
                self.loaded.warn(warning)
        return settings

    def _validate_tool_config(self, registry: Registry) -> None:
        """Check every configured tool's settings at start-up, so a typo fails now rather than mid-run."""
        sections: list[tuple[tuple[str, ...], dict[str, Any], str | None]] = [
            (("tool_config",), self.config.tool_config, None)
        ]
        sections += [(("agents", n, "tool_config"), a.tool_config, n) for n, a in self.config.agents.items()]
        pending: dict[tuple[str, ...], tuple[dict[str, Any], str | None]] = {}
        for (owner, tool_name), values in self.loaded.pending_tool_config.items():
            if owner is None or owner in self.config.agents:
                where = ("agents", owner, "tool_config") if owner else ("tool_config",)
                pending.setdefault(where, ({}, owner))[0][tool_name] = values
        sections += [(prefix, values, owner) for prefix, (values, owner) in pending.items()]
        for prefix, settings, agent in sections:
            for name in settings:
                tool = self._base_registry.find(name)
                if tool is None:
                    self.loaded.reject("no tool has this name", (*prefix, name), ".".join((*prefix, name)))
                    continue
                self._config_for(tool, agent)

    def _validate_agents(self) -> None:
        """A plain tool name in an agent's list that names no tool is a typo: say so at start-up."""
        for name, profile in self.config.agents.items():
            for index, pattern in enumerate(profile.tools or []):
                if any(c in pattern for c in "*?[") or pattern.startswith("group:") or pattern == ALLOW_NOTHING:
                    continue
                # seeds (issue 38): a profile's name (read_file, Bash) names its tool here as in tools.allow.
                if self._base_registry.find(pattern) is None and not any(
                    self._base_registry.find(tool) for tool in tools_named(pattern)
                ):
                    keys = ("agents", name, "tools", str(index))
                    self.loaded.reject(f"no tool is named {pattern!r}", keys, f"agents.{name}.tools[{index}]")

    # ------------------------------------------------------------------------------ approvals

    def grant(self, name: str, args: dict[str, Any]) -> str:
        """Approve in advance one call of ``name`` with exactly these arguments (after validation)."""
        tool = self._available.get(name)
        validated = tool.input_model.model_validate(args).model_dump(mode="json")
        return self.governance.grant(name, validated)

    def _allowlist_file(self, config: object) -> Path | None:
        """Where "allow always" is saved: the config file given, else the trusted workspace's, else the user's."""
        if config is None:
            if is_trusted(self.workspace.root):
                return self.workspace.root / STATE_DIR_NAME / CONFIG_FILE
            return toolrig_home() / CONFIG_FILE
        if isinstance(config, str | os.PathLike):
            return Path(config)
        return None  # a config given as data stays in memory


# Frameworks pick how to run a handler by ``inspect.iscoroutinefunction``; 3.12+ lets ``call`` say it is one.
if (_mark := getattr(inspect, "markcoroutinefunction", None)) is not None:
    _mark(Rig.call)


def _has_path(data: dict[str, Any], loc: tuple[str, ...]) -> bool:
    """Whether the agent's own section set the setting an error is about (its first key is enough)."""
    return not loc or loc[0] in data
