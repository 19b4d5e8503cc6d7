"""What the one gate is made of: the record of a call on its way through it, and the members of each point.

``ToolCall`` is what every stage reads and what governance writes its decision on; ``Extensions`` holds the
members of each extension point (admission, policy, rate limit, approval, before/after tool, audit) that the
executor walks. Apart from ``toolrig.executor`` so that the members (policy, hooks, telemetry) import what
they are handed without importing the executor that calls them.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from pydantic import BaseModel

from toolrig.approvals.channel import ApprovalChannel
from toolrig.cancel import CancelToken
from toolrig.event_bus import EventSink
from toolrig.permissions import AgentView
from toolrig.registry import AnyTool
from toolrig.result import ToolResult
from toolrig.scope import DEFAULT, CallScope

__all__ = [
    "Admission",
    "AfterTool",
    "AuditSink",
    "ExtensionPoint",
    "Extensions",
    "Gate",
    "Lookup",
    "Reserved",
    "ToolCall",
]


@dataclass
class ToolCall:
    """One call on its way through the executor; extension points read it and may add notes.

    Not slotted: a field left at its default is read from the class, so ``start`` sets only what differs.
    """

    name: str
    tool: AnyTool | None
    raw_args: dict[str, Any]
    call_id: str
    origin: str
    agent_id: str | None = None
    parent_agent_id: str | None = None
    session_id: str | None = None
    agent: AgentView | None = None  # whose permissions judge the call, when the caller brings them (a subagent)
    channel: ApprovalChannel | None = None  # who answers its approvals: the caller's own (a run's), else the Rig's
    scope: CallScope = DEFAULT  # the rest of who is calling: its model, its run's subagents, its catalog
    input: BaseModel | None = None
    subjects: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdict: str = ""  # what governance concluded: allow, ask (until answered), deny, rate_limited
    verdict_reason: str = ""  # why, in words for a person (approval prompts) or the model (refusals)
    decided_by: str = ""  # the rule or setting that decided, for the audit row and `policy explain`
    approval: str = ""  # how an approval was answered: allow_once, allow_always, deny, timeout, grant, ...
    started: float = 0.0
    events: EventSink | None = None  # where this call's events go (the caller's sink, else the executor's)
    settings: BaseModel | None = None  # the tool's own settings (tool_config), resolved for this agent
    dry_run: bool = False  # decided for `policy explain`: gates judge, but spend, ask and run nothing
    ran: bool = False  # the tool itself was started (after_tool hooks see only these calls)
    called_as: str | None = None  # the name the model used, when a profile's name stood for the tool (Bash)
    # The call's cancellation token, made only for a tool that can see it (below: `_ToolPlan.needs_token`).
    token: CancelToken | None = None

    @classmethod
    def start(
        cls,
        name: str,
        call_id: str,
        origin: str,
        agent_id: str | None,
        parent_agent_id: str | None,
        session_id: str | None,
        started: float,
        events: EventSink | None,
    ) -> ToolCall:
        """A new call as the executor begins it: what ``ToolCall(...)`` builds, at a quarter of its cost.

        The generated ``__init__`` with its 22 defaulted parameters was a twentieth of a trivial call. The
        fields with an immutable default are not set: the class answers them until a stage sets its own.
        """
        call = cls.__new__(cls)
        call.name, call.tool, call.raw_args, call.call_id, call.origin = name, None, {}, call_id, origin
        call.subjects, call.notes, call.started, call.events = [], [], started, events
        if agent_id is not None:
            call.agent_id = agent_id
        if parent_agent_id is not None:
            call.parent_agent_id = parent_agent_id
        if session_id is not None:
            call.session_id = session_id
        return call


class Gate(Protocol):
    """A step before execution (policy, rate limit, approval, before_tool hook): raise ToolError to stop.

    An ``async def`` does; so does a plain function that returns None when it has nothing to wait for and
    an awaitable when it has (a gate with nothing configured then costs a call, not a coroutine).
    """

    def __call__(self, call: ToolCall) -> Awaitable[None] | None: ...


class Admission(Protocol):
    """A check before the arguments are read (is the tool offered to this caller?): raise ToolError to refuse."""

    def __call__(self, call: ToolCall) -> None: ...


class AfterTool(Protocol):
    """A step after execution that may replace the result (after_tool hooks).

    It answers with the result itself, or an awaitable of it: as a gate may, it answers without a coroutine.
    """

    def __call__(self, call: ToolCall, result: ToolResult) -> Awaitable[ToolResult] | ToolResult: ...


class AuditSink(Protocol):
    """Receives every finished call, allowed or not, with its final result (None, or an awaitable)."""

    def __call__(self, call: ToolCall, result: ToolResult) -> Awaitable[None] | None: ...


ExtensionPoint = Literal["admission", "policy", "rate_limit", "approval", "before_tool", "after_tool", "audit"]


@dataclass
class Extensions:
    """The members of each extension point, walked in list order by every call as its point begins.

    A member with nothing configured may wait outside its list (``reserve``) and ``wake`` into its place
    the moment something is: an idle member costs a call on every call, a waiting one nothing. Add members
    through this object (``extensions.audit.append(sink)``): a member that wakes into the middle of a list
    puts a new list in its place, so a list object kept from before would no longer be walked.
    """

    admission: list[Admission] = field(default_factory=list)  # before arguments are read: is the tool offered?
    policy: list[Gate] = field(default_factory=list)
    rate_limit: list[Gate] = field(default_factory=list)
    approval: list[Gate] = field(default_factory=list)
    before_tool: list[Gate] = field(default_factory=list)
    after_tool: list[AfterTool] = field(default_factory=list)
    audit: list[AuditSink] = field(default_factory=list)
    # The members still waiting outside each point, so that a call can wake them itself (``wake_point``).
    _asleep: dict[str, list[Reserved]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def reserve(self, point: ExtensionPoint, member: Any, *, awake: bool) -> Reserved:
        """A place for ``member`` at the end of ``point``'s list: taken now when ``awake``, else on ``wake``."""
        reserved = Reserved(self, point, member, len(getattr(self, point)))
        if awake:
            reserved.wake()
        else:
            self._asleep.setdefault(point, []).append(reserved)
        return reserved

    def wake_point(self, point: ExtensionPoint) -> list[Any]:
        """Wake every member still waiting at ``point``; its list as it is then."""
        for reserved in list(self._asleep.get(point, ())):
            reserved.wake()
        return cast(list[Any], getattr(self, point))


class Reserved:
    """One member's place in an extension point, taken the first time its owner has something for it to do.

    Its owner calls ``wake`` from every way of configuring what the member does, before the point is next
    walked; it never leaves again, so a call walking the list can neither miss it once it is there nor see
    members shift under it. ``policy explain`` walks the same lists (``Executor.decide``), so it sees what a
    call sees.
    """

    __slots__ = ("awake", "extensions", "index", "member", "point")

    def __init__(self, extensions: Extensions, point: ExtensionPoint, member: Any, index: int) -> None:
        self.extensions, self.point, self.member, self.index = extensions, point, member, index
        self.awake = False

    def wake(self) -> None:
        if not self.awake:  # the common case, once awake: no lock
            self._join()

    def _join(self) -> None:
        # Two threads (two event loops, a worker thread configuring) may wake it at once, or wake two members
        # of one point: checked again and placed under one lock, or it would join twice (two audit rows, two
        # tokens) or one list replaced under the other would lose a member for good. Rare: never on a call's path.
        with _waking:
            if self.awake:
                return
            asleep = self.extensions._asleep.get(self.point)
            if asleep is not None and self in asleep:
                asleep.remove(self)
            members: list[Any] = getattr(self.extensions, self.point)
            if self.index >= len(members):
                members.append(self.member)  # nothing joined after its place was reserved: in place, at the end
            else:
                # Members joined after it: a new list with it in the place it was given, so that a call suspended
                # in the middle of the old list (an awaiting hook) goes on through that list without a shift.
                setattr(self.extensions, self.point, [*members[: self.index], self.member, *members[self.index :]])
            self.awake = True  # after it is in place: a thread that reads it awake finds it walked


_waking = threading.Lock()


class Lookup(Protocol):
    """What a caller may call: the names offered to an agent, and why a known tool is hidden from it."""

    def offered_names(self, agent: AgentView | str | None) -> list[str]: ...

    def hidden(self, name: str, agent: AgentView | str | None) -> tuple[str, str] | None:
        """(rule, reason) when ``name`` is a tool this caller is not offered; None when no tool has that name."""
        ...
