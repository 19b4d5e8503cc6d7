"""Who is calling, passed with the call: one frozen scope per agent run, per MCP request, per CLI call.

The Rig and its executor are built once and shared by every caller; what differs between callers (whose
permissions judge the call, who answers its approvals, which model its tools may ask, which run's subagents
it may reach, where its events go) travels with each call in a ``CallScope``. Nothing of a caller is set on
the Rig and looked up again by an id: a saved state or a client's request can name any id it likes, and an
id found in one would otherwise choose another caller's behaviour.

This is pydantic-ai's ``RunContext``, FastMCP's frozen ``MiddlewareContext`` and openai-agents'
``Runner.run(context=...)`` applied to the one gate.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from toolrig.approvals.channel import ApprovalChannel
from toolrig.context import SubagentAccess, ToolCatalog
from toolrig.event_bus import EventSink
from toolrig.permissions import AgentView
from toolrig.profiles import Profile
from toolrig.sampling import ModelSource
from toolrig.sandbox.session import SessionSandbox

if TYPE_CHECKING:
    from toolrig.sandbox.background import BackgroundJobs
    from toolrig.stores.checkpoints import Mark

if TYPE_CHECKING:
    from toolrig.durable.api import Durable


class HookRunner(Protocol):
    """A run's own hooks (``toolrig.hooks.HookChain``), as the one hook gate runs them."""

    def __len__(self) -> int: ...

    async def run(self, event: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class CallScope:
    """One caller's part in a call; every field None (or unset) means the Rig's own default for it.

    ``agent``: whose permissions judge the call (a configured agent's view, or a subagent's narrowed one);
    ``agent_id``: the label the audit, memory and tasks use; ``offered``: the run's own tool list, narrower
    than the agent's; ``channel``: who answers its approvals and questions; ``models``: the model its tools'
    ``ctx.sample`` asks; ``subagents``: its run's hub (delegation); ``catalog``: the tool catalog as its model
    sees it; ``profile``: the names its model speaks; ``hooks``: its run's own hooks (after the Rig's);
    ``events``: its sink; ``sandbox``: what its session's commands share (their network namespace,
    ``toolrig.sandbox.session``), owned and closed by whoever owns the session (None: the Rig's own);
    ``checkpoint``: where its file changes are recorded (the session and turn a rewind turns back; set by the
    agent loop per turn, None: not recorded); ``background``: the owner of the background commands its calls
    start (its run's; None: the caller cannot own one, so ``background: true`` is refused);
    ``durable``: the schedules and tasks its tools reach, bound to the task a durable run
    serves (the terminal task tools end that task).
    """

    agent: AgentView | None = None
    agent_id: str | None = None
    parent_agent_id: str | None = None
    session_id: str | None = None
    offered: Collection[str] | None = None
    events: EventSink | None = None
    channel: ApprovalChannel | None = None
    models: ModelSource | None = None
    subagents: SubagentAccess | None = None
    catalog: ToolCatalog | None = None
    profile: Profile | None = None
    hooks: HookRunner | None = None
    sandbox: SessionSandbox | None = None
    durable: Durable | None = None
    origin: str = "python"
    checkpoint: Mark | None = None
    background: BackgroundJobs | None = None

    def child(self, **changes: Any) -> CallScope:
        """The scope of a caller under this one (a subagent): the same, with ``changes``; a new object."""
        return replace(self, **changes)


DEFAULT = CallScope()
