"""ToolContext: the only capability surface a tool gets.

A tool that needs the world asks its context: files through ``workspace``, state through ``stores``, the
network through ``http``, the user through ``approvals``, a model through ``models`` (``sample``). Nothing
else is handed in, so what a tool can reach is exactly what its context carries, and a test can hand it a
context of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from toolrig.cancel import CancelToken
from toolrig.errors import ErrorType, ToolError
from toolrig.event_bus import EventSink, NullSink
from toolrig.sandbox.paths import Workspace
from toolrig.stores import Stores

if TYPE_CHECKING:
    import httpx2

    from toolrig.durable.api import Durable
    from toolrig.events import LogLevel
    from toolrig.sandbox.background import BackgroundJobs
    from toolrig.sandbox.network import NetworkPolicy
    from toolrig.sandbox.session import SessionSandbox
    from toolrig.skills.discovery import SkillSet
    from toolrig.skills.skill import Skill
    from toolrig.stores.checkpoints import Recorder


SettingsT = TypeVar("SettingsT", bound=BaseModel)


class HttpAccess(Protocol):
    """How a tool gets an HTTP client; implementations pin every connection to a checked address.

    ``policy`` is the tool's own reach (domain lists, loopback); a client serves one call (``async with``).
    """

    def client(
        self, policy: NetworkPolicy | None = None, *, timeout: float = 30.0, max_redirects: int = 5
    ) -> httpx2.AsyncClient: ...


class GuardedOnFirstUse:
    """The default ``HttpAccess``: a ``GuardedHttp``, built when a tool first asks for a client.

    ``toolrig.sandbox.http`` (and the network guard under it) is a fair share of a command's start-up, and
    most calls never reach the network. ``GuardedHttp`` holds no state, so two first uses racing is harmless.
    """

    def __init__(self) -> None:
        self._http: HttpAccess | None = None

    def client(
        self, policy: NetworkPolicy | None = None, *, timeout: float = 30.0, max_redirects: int = 5
    ) -> httpx2.AsyncClient:
        if self._http is None:
            from toolrig.sandbox.http import GuardedHttp

            self._http = GuardedHttp()
        return self._http.client(policy, timeout=timeout, max_redirects=max_redirects)


class Approvals(Protocol):
    """Lets a tool ask the user mid-call (the executor asks before calls on its own)."""

    async def ask(self, tool: str, subject: str, reason: str, *, call_id: str = "") -> bool:
        """Yes or no from the person; ``call_id`` (the asking call's) lets a front end that asks per call find it."""
        ...

    async def ask_user(
        self,
        questions: Sequence[Mapping[str, Any]],
        *,
        call_id: str = "",
        session_id: str | None = None,
        agent_id: str | None = None,
        events: EventSink | None = None,
    ) -> list[dict[str, Any]] | None:
        """Put questions to the person; their answers, one per question, or None when nobody answered."""
        ...


@dataclass(frozen=True, slots=True)
class Sample:
    """A model's answer to a tool's request: its text, which model wrote it, and why it stopped."""

    text: str
    model: str
    stop_reason: str = "endTurn"  # endTurn | maxTokens | stopSequence, as MCP spells them


class Models(Protocol):
    """Lets a tool ask a model for a completion (MCP sampling), whichever front end it runs under.

    Under ``toolrig mcp serve`` the connected client's model answers; in toolrig's agent runtime the run's
    own model does, its tokens counted in the run's budget. Either way the request is approved first and
    capped; a refusal or failure is raised as ``ToolError``.
    """

    async def sample(
        self,
        turns: Sequence[tuple[str, str]],
        *,
        max_tokens: int,
        system: str | None,
        tool: str,
        call_id: str,
        session_id: str | None,
        agent_id: str | None,
    ) -> Sample: ...

    def for_servers(self) -> ServerModel | None:
        """The model a remote MCP server's sampling request made during this call asks, or None.

        The calling run's own model, on its budget; None when the call has no run (an MCP client's model is
        never lent to another server). The relay approves and caps the request before asking.
        """
        ...


# (turns, max_tokens, system) -> the answer, without tools; raises for a refusal or a failure.
ServerModel = Callable[[list[tuple[str, str]], int, str | None], Awaitable[Sample]]


class ToolCatalog(Protocol):
    """The tools an agent is offered, for tools that describe tools (tool_search, tool_info, capabilities)."""

    def offered(self, agent: str | None) -> list[Any]: ...

    async def refresh_capabilities(self, agent: str | None) -> tuple[str, str]:
        """Rewrite the capabilities summary from the policy in force: (its text, how it was grouped)."""
        ...


class McpAccess(Protocol):
    """The MCP servers this workspace uses (config ``mcp_servers``), for a tool that calls their tools itself.

    Botholomew's ``mcpxClient``. Every call goes through the executor as the calling agent: its policy,
    approvals, rate limits, offered tools and audit row, exactly as if the agent had called the tool, so the
    handle reaches nothing the agent could not. Only MCP servers' tools are callable through it.
    """

    def servers(self) -> list[str]:
        """The configured servers' names (whether or not they are running yet)."""
        ...

    def tools(self, server: str | None = None) -> list[dict[str, Any]]:
        """The MCP tools the calling agent may call: ``{name, server, tool, description}`` (starts servers)."""
        ...

    async def call(self, server: str, tool: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call ``tool`` of ``server``; the result (a ``ToolResult``: an error is a result, never raised)."""
        ...


class SkillAccess(Protocol):
    """The workspace's Agent Skills, and what loading one grants for the rest of a run."""

    def skills(self) -> SkillSet: ...

    def activate(
        self, skill: Skill, run: str, agent: str | None, session: str | None = None
    ) -> tuple[bool, list[str], list[str]]:
        """Mark ``skill`` loaded in ``run``: (first time?, pre-approvals its ``allowed-tools`` gave, notes).

        The pre-approvals hold for ``session`` as ``agent`` only; with no session, none are given.
        """
        ...


class SubagentAccess(Protocol):
    """The agent runtime's delegation, for the agent tools (spawn_agents, wait_task, set_output ...).

    Every method takes the calling run's ``session_id``: the runtime finds the run (and so its depth, its
    permissions and its children) from it. Refusals are raised as ``ToolError``.
    """

    def agent_types(self) -> list[dict[str, Any]]: ...

    async def spawn(
        self, session_id: str | None, requests: list[dict[str, Any]], *, background: bool, call_id: str = ""
    ) -> list[dict[str, Any]]: ...

    def children(self, session_id: str | None, status: str | None = None) -> list[dict[str, Any]]: ...

    def owns(self, session_id: str | None, task_id: str) -> bool: ...

    async def wait(
        self, session_id: str | None, task_ids: list[str], *, within: float, mode: str
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """Wait for children: (result records of those ended, ids still running)."""
        ...

    def cancel(self, session_id: str | None, task_id: str) -> dict[str, Any]: ...

    def set_output(self, session_id: str | None, value: Any) -> None: ...

    def memory_owner(self, agent_id: str | None) -> str | None:
        """Whose memory and kv namespace ``agent_id`` uses: its own, or its parent's (``shared_memory: true``)."""
        ...


class AllowAll:
    """Approvals switched off: every question is answered yes."""

    async def ask(self, tool: str, subject: str, reason: str, *, call_id: str = "") -> bool:
        return True

    async def ask_user(
        self,
        questions: Sequence[Mapping[str, Any]],
        *,
        call_id: str = "",
        session_id: str | None = None,
        agent_id: str | None = None,
        events: EventSink | None = None,
    ) -> list[dict[str, Any]] | None:
        return None  # nobody to ask: the question is skipped


@dataclass(slots=True)
class ToolContext:
    """What one call may reach. Built fresh per call by the executor; tools read it and never replace fields."""

    workspace: Workspace
    stores: Stores
    config: BaseModel | None = None
    http: HttpAccess | None = None
    events: EventSink = field(default_factory=NullSink)
    approvals: Approvals = field(default_factory=AllowAll)
    cancel: CancelToken = field(default_factory=CancelToken)
    agent_id: str | None = None
    session_id: str | None = None
    call_id: str = ""
    tool_name: str = ""
    output_cap: int = 100_000
    durable: Durable | None = None  # schedules and tasks (cron, tasks, complete/fail/wait_task)
    catalog: ToolCatalog | None = None
    skills: SkillAccess | None = None
    subagents: SubagentAccess | None = None  # set by the agent runtime: delegation (toolrig.agent.subagents)
    models: Models | None = None  # a model to ask (``sample``): the MCP client's, or the agent run's
    mcp: McpAccess | None = None  # the workspace's MCP servers' tools, called as this call's agent
    # The resolved configuration (defaults, then ~/.toolrig, then a trusted workspace's): ``toolrig.config.Config``.
    # Read it; never change it (it is the Rig's, shared by every call). None outside a Rig.
    global_config: BaseModel | None = None
    checkpoint: Recorder | None = None  # told of every file change before it is written (the run's checkpoints)
    background: BackgroundJobs | None = None  # the caller's background commands (run_command background: true)
    sandbox: SessionSandbox | None = None  # what the session's commands share (run_command's network namespace)

    @classmethod
    def for_tests(cls, root: str = ".", **overrides: Any) -> ToolContext:
        """A context on a directory with defaults everywhere, for calling ``tool.execute`` in a plain test."""
        workspace = Workspace(root)
        overrides.setdefault("stores", Stores(workspace.state_dir))
        return cls(workspace=workspace, **overrides)

    def memory_owner(self) -> str | None:
        """The agent whose memory (``agents/<id>/``) and kv namespace this call uses; None: the workspace's."""
        if self.subagents is None:
            return self.agent_id
        return self.subagents.memory_owner(self.agent_id)

    def settings(self, model: type[SettingsT]) -> SettingsT:
        """This tool's settings (``tool_config.NAME``, resolved and validated once by the config layer).

        A tool that is called outside a Rig (a plain test) gets the model's defaults.
        """
        config = self.config
        return config if isinstance(config, model) else model()

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report how far a long call got; safe from a worker thread."""
        from toolrig.events import ToolProgressEvent  # the event kinds load with the first event made

        self.events.emit(ToolProgressEvent(self.call_id, self.tool_name, progress, total, message))

    def log(self, level: LogLevel, message: str) -> None:
        """A log line or warning for whoever watches this call (an MCP client at that level); thread-safe."""
        from toolrig.events import ToolLogEvent

        self.events.emit(ToolLogEvent(self.call_id, self.tool_name, level, message))

    async def sample(
        self, messages: str | Sequence[tuple[str, str]], *, max_tokens: int = 1000, system: str | None = None
    ) -> Sample:
        """Ask a model for a completion: ``messages`` is a prompt, or (role, text) turns with role user/assistant.

        The model answers without tools. Raises ``ToolError`` when no model can be asked here, the request
        is refused (approval, caps, budget), or the model call fails: the calling tool's error result says so.
        """
        turns = [("user", messages)] if isinstance(messages, str) else [(str(r), str(t)) for r, t in messages]
        if not turns or any(role not in ("user", "assistant") or not text for role, text in turns):
            raise ToolError(ErrorType.INVALID_INPUT, "A sampling request needs non-empty user/assistant turns.")
        if self.models is None:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "No model can be asked from this tool here (no MCP client with sampling, no agent run).",
                "Do without the model's help, or run the tool from `toolrig run` or an MCP client that samples.",
            )
        return await self.models.sample(
            turns,
            max_tokens=max_tokens,
            system=system,
            tool=self.tool_name,
            call_id=self.call_id,
            session_id=self.session_id,
            agent_id=self.agent_id,
        )
