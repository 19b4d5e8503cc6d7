"""The executor: the one path every tool call takes, whoever makes it (agent loop, MCP, CLI, a test).

Four stages, in this order, for every call::

    1 prepare  lookup (offered to this caller?) -> parse -> repair -> validate -> settings -> subjects
    2 decide   [admission] -> [policy] -> [rate_limit] -> [approval] -> [before_tool]   (the one gate)
    3 run      async, or sync in a worker thread; timeout; cancellation
    4 record   validate output -> fit to the output cap -> [after_tool] (calls that ran) -> [audit] (one row)

The bracketed steps are extension points filled by governance (policy, approvals, hooks, audit); each
is a list of small async callables, so one concern never needs to know another. ``decide`` runs the
first two stages alone, without side effects (no token spent, nobody asked, no hook run): that is what
``policy explain`` prints, so it cannot disagree with a real call. Whatever happens, the caller gets a
ToolResult; the only thing that propagates is the caller's own cancellation.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, runtime_checkable

import anyio
import anyio.lowlevel
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from toolrig.approvals.channel import ApprovalChannel
from toolrig.arguments import explain_validation_error, parse_arguments, repair_arguments, repair_plan
from toolrig.cancel import CancelToken, bind_token, unbind_token
from toolrig.context import (
    AllowAll,
    Approvals,
    HttpAccess,
    SkillAccess,
    ToolCatalog,
    ToolContext,
)
from toolrig.definition import FunctionTool, ToolOutput
from toolrig.errors import ErrorType, ToolError, UsageError
from toolrig.event_bus import EventSink, NullSink
from toolrig.permissions import AgentView
from toolrig.registry import AnyTool, Registry
from toolrig.result import ResultMeta, ToolResult, ok_checked
from toolrig.sampling import CallModels
from toolrig.sandbox.paths import Workspace
from toolrig.scope import DEFAULT, CallScope
from toolrig.shaping import escape_surrogates, fit
from toolrig.stores import Stores
from toolrig.worker_threads import run_sync

if TYPE_CHECKING:
    import httpx2

    from toolrig.durable.api import Durable
    from toolrig.sandbox.network import NetworkPolicy

log = logging.getLogger("toolrig.executor")

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_OUTPUT_CAP = 100_000


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


@dataclass(slots=True)
class _ToolPlan:
    """What calling one tool takes, worked out on its first call rather than on every call.

    Only facts about the tool itself live here (its models, whether its arguments can need repair, whether
    it can see a cancellation token): the gates are not planned, they run on every call, so a gate, hook or
    audit sink configured at any time is never skipped.
    """

    tool: AnyTool
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    validate: Callable[[Any], BaseModel]  # the input model's validator (``model_validate`` without its wrapper)
    dump: Callable[..., Any]  # the output model's serializer, to JSON-able Python
    repairs: bool  # some field could be repaired (a JSON string for an object, a lone item for a list, a null)
    # A token is made and bound only for a tool that could observe it: one that reads its context
    # (``ctx.cancel``), or one that runs across more than one step, where a timeout or the caller's
    # cancellation can arrive while it runs (``check_cancelled()`` in a worker thread or after an await).
    needs_token: bool
    has_subjects: bool  # the tool reads subjects from its input (a ``Subject`` mark, or its own ``subjects``)
    attaches: bool  # the output model can carry content parts (a ``ToolOutput``)
    # A ``@tool`` function the executor calls itself, on the validated input's fields, without ``execute``'s
    # wrapper (``FunctionTool.calls_fn_directly``); its value is wrapped by ``FunctionTool.wrap``.
    direct: FunctionTool | None
    # Its declared result type when a value of exactly that type is its own validated JSON form
    # (``FunctionTool.plain_result``): the output is then ``{"result": value}``, no output model built.
    plain: type | None

    @classmethod
    def of(cls, tool: AnyTool) -> _ToolPlan:
        repair = repair_plan(tool.input_model)
        one_step = tool.never_suspends or not (tool.is_async or tool.blocking)
        direct = tool if isinstance(tool, FunctionTool) and tool.calls_fn_directly else None
        return cls(
            tool=tool,
            input_model=tool.input_model,
            output_model=tool.output_model,
            validate=tool.input_model.__pydantic_validator__.validate_python,
            dump=tool.output_model.__pydantic_serializer__.to_python,
            repairs=repair.needed,
            needs_token=tool.reads_context or not one_step,
            has_subjects=tool.has_subjects,
            attaches=issubclass(tool.output_model, ToolOutput),
            direct=direct,
            plain=direct.plain_result if direct is not None else None,
        )


class Lookup(Protocol):
    """What a caller may call: the names offered to an agent, and why a known tool is hidden from it."""

    def offered_names(self, agent: AgentView | str | None) -> list[str]: ...

    def hidden(self, name: str, agent: AgentView | str | None) -> tuple[str, str] | None:
        """(rule, reason) when ``name`` is a tool this caller is not offered; None when no tool has that name."""
        ...


_counter = itertools.count(1)
_prefix = os.urandom(3).hex()


_call_prefix = f"call_{_prefix}"


def new_call_id() -> str:
    return f"{_call_prefix}{next(_counter):06d}"


class Executor:
    """The one call path, built once per Rig with every capability its tools reach (constructor arguments).

    A caller's part of a call (its agent view, approval channel, model, run) comes with the call in its
    ``CallScope``; nothing of a caller is set here, so concurrent runs and MCP clients share one executor.
    """

    def __init__(
        self,
        registry: Registry,
        workspace: Workspace,
        *,
        extensions: Extensions | None = None,
        stores: Stores | None = None,
        http: HttpAccess | None = None,
        events: EventSink | None = None,
        approvals: Approvals | None = None,
        tool_config: Callable[[AnyTool, AgentView | str | None], BaseModel | None] | None = None,
        lookup: Lookup | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        durable: Durable | None = None,
        catalog: ToolCatalog | None = None,
        skills: SkillAccess | None = None,
    ) -> None:
        self.registry = registry
        self.workspace = workspace
        self.extensions = extensions or Extensions()
        self.stores = stores or Stores(workspace.state_dir)
        self.http: HttpAccess = http if http is not None else GuardedOnFirstUse()
        self.events: EventSink = events or NullSink()
        self.approvals: Approvals = approvals or AllowAll()
        self.tool_config = tool_config or (lambda tool, agent: None)
        self.lookup = lookup
        self.timeout_seconds = timeout_seconds
        self.output_cap = output_cap
        self.durable = durable  # schedules and tasks (a durable run's rig binds its task)
        self.catalog = catalog  # the offered tools, for tool_search (a caller's scope may bring its own view)
        self.skills = skills  # the workspace's Agent Skills
        # Handed to tools that provably never read their context (Tool.reads_context), instead of a fresh one.
        self._unread_context = ToolContext(workspace=workspace, stores=self.stores)
        self._plans: dict[str, _ToolPlan] = {}  # by tool name; checked against the registry's tool on each call

    async def invoke(
        self,
        name: str,
        args: str | bytes | dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        origin: str = "python",
        agent_id: str | None = None,
        parent_agent_id: str | None = None,
        session_id: str | None = None,
        timeout_seconds: float | None = None,
        events: EventSink | None = None,
        offered: Collection[str] | None = None,
        called_as: str | None = None,
        agent: AgentView | None = None,
        channel: ApprovalChannel | None = None,
        scope: CallScope | None = None,
    ) -> ToolResult:
        """Run one tool call to a ToolResult. Only the caller's own cancellation propagates.

        ``scope`` says who is calling (``toolrig.scope``); a keyword given as well wins over its field.

        ``offered`` narrows what this caller may call further (an agent run's own tool list): a call of
        any other tool is refused before its arguments are read, and still recorded. ``called_as`` is the
        name the model used when a profile translated the call (the audit keeps both).
        """
        if timeout_seconds is not None and not timeout_seconds > 0:  # NaN too
            raise UsageError(f"timeout_seconds must be a positive number of seconds, not {timeout_seconds!r}")
        if scope is not None:
            agent_id = agent_id if agent_id is not None else scope.agent_id
            parent_agent_id = parent_agent_id if parent_agent_id is not None else scope.parent_agent_id
            session_id = session_id if session_id is not None else scope.session_id
            events = events or scope.events
            offered = offered if offered is not None else scope.offered
            agent = agent or scope.agent
            channel = channel or scope.channel
            origin = scope.origin if origin == "python" else origin
        call = ToolCall.start(
            name,
            call_id or f"{_call_prefix}{next(_counter):06d}",  # new_call_id(), without its frame
            origin,
            agent_id,
            parent_agent_id,
            session_id,
            time.perf_counter(),
            events or self.events,
        )
        if called_as is not None:  # else the class's default, None
            call.called_as = called_as
        if agent is not None:  # else the class's default: the gate reads ``agent_id``'s configured view
            call.agent = agent
        if channel is not None:
            call.channel = channel
        if scope is not None:
            call.scope = scope
        # Stages 1-3 in this frame (a coroutine per stage was a tenth of a trivial call); only the caller's
        # cancellation leaves the inner ``try``, to be recorded by the outer one.
        try:
            try:
                plan, validated = self._prepare(call, args, offered)  # stage 1
                if (pending := self._gate(call)) is not None:  # stage 2, the one gate
                    await pending
                # stage 3
                call.ran = True
                tool = plan.tool
                if plan.needs_token:
                    token = call.token = CancelToken()
                    ctx = self._context(call, tool.name, token) if tool.reads_context else self._unread_context
                    bound = bind_token(token)
                else:
                    # One step, no context: nothing could cancel the token while the tool runs, nor read it.
                    ctx, bound = self._unread_context, None
                limit = 0.0  # a one-step tool has no deadline
                direct = plan.direct  # a @tool function: called on the input's fields, its value wrapped below
                try:
                    if tool.never_suspends:
                        # No await in its code: it runs to its end in one step, which no deadline could
                        # interrupt, so it gets no timeout scope (a scope is most of a trivial call's cost).
                        running = direct.fn(**validated.__dict__) if direct else tool.execute(validated, ctx)
                        output, timed_out = await running, False
                    elif not (tool.is_async or tool.blocking):
                        # A sync tool declared never to block: on the loop, no thread hop and, for the same
                        # reason, no timeout scope.
                        output = direct.fn(**validated.__dict__) if direct else tool.execute(validated, ctx)
                        timed_out = False
                    elif tool.is_async:
                        limit = timeout_seconds or tool.timeout_seconds or self.timeout_seconds
                        with anyio.move_on_after(limit) as deadline:
                            if direct is not None:
                                output = await direct.fn(**validated.__dict__)
                            else:
                                output = await tool.execute(validated, ctx)
                        timed_out = deadline.cancelled_caught
                    else:
                        # A worker thread; it inherits the bound token through the copied context.
                        limit = timeout_seconds or tool.timeout_seconds or self.timeout_seconds
                        job = (
                            partial(direct.fn, **validated.__dict__)
                            if direct is not None
                            else partial(tool.execute, validated, ctx)
                        )
                        output, timed_out = await run_sync(job, limit)
                finally:
                    if bound is not None:
                        unbind_token(bound)
                if timed_out:
                    if call.token is not None:
                        call.token.cancel(f"timed out after {limit:g}s")
                    raise ToolError(
                        ErrorType.TIMEOUT,
                        f"'{tool.name}' did not finish within {limit:g} seconds and was stopped.",
                        "Retry with a smaller request, or a longer timeout if the tool takes one.",
                        retryable=True,
                    )
                if direct is None:
                    result = self._shape(plan, output, None, call.notes)
                elif type(output) is plan.plain:  # already its own validated JSON form
                    result = self._shape(plan, None, {"result": output}, call.notes)
                else:
                    result = self._shape(plan, direct.wrap(output), None, call.notes)
            except ToolError as err:
                result = ToolResult.from_error(err, notes=call.notes)
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:
                # The one place an unexpected exception is caught: the tool is broken, the loop must not be.
                log.exception("tool %r raised an unexpected exception (call %s)", call.name, call.call_id)
                result = ToolResult.error(
                    ErrorType.INTERNAL,
                    f"The tool '{call.name}' failed unexpectedly: {type(exc).__name__}: {exc}",
                    notes=call.notes,
                )
        except anyio.get_cancelled_exc_class():
            if call.token is not None:
                call.token.cancel("the caller cancelled the call")
            recorded = self._record(call, ToolResult.error(ErrorType.CANCELLED, "The call was cancelled."))
            if type(recorded) is not ToolResult:
                with anyio.CancelScope(shield=True):
                    await cast(Awaitable[ToolResult], recorded)
            raise
        recorded = self._record(call, result)  # stage 4
        return recorded if type(recorded) is ToolResult else await cast(Awaitable[ToolResult], recorded)

    async def decide(
        self,
        name: str,
        args: str | bytes | dict[str, Any] | None = None,
        *,
        agent_id: str | None = None,
        origin: str = "explain",
        called_as: str | None = None,
        agent: AgentView | None = None,
    ) -> tuple[ToolCall, ToolResult | None]:
        """Stages 1 and 2 without side effects: the call as the gate judged it, and the refusal if any.

        A call that would ask comes back with ``verdict == "ask"`` and no result (nobody is asked).
        """
        call = ToolCall.start(name, new_call_id(), origin, agent_id, None, None, time.perf_counter(), self.events)
        call.called_as = called_as
        call.agent = agent
        call.dry_run = True
        try:
            self._prepare(call, args, None)
            if (pending := self._gate(call)) is not None:  # the very gate a call goes through
                await pending
        except ToolError as err:
            return call, ToolResult.from_error(err, notes=call.notes)
        return call, None

    def _prepare(
        self, call: ToolCall, args: str | bytes | dict[str, Any] | None, offered: Collection[str] | None
    ) -> tuple[_ToolPlan, BaseModel]:
        """Stage 1: find the tool (refusing one this caller is not offered), read and check the arguments."""
        tool = self.registry.find(call.name)
        if tool is None:
            raise self._not_found(call, offered)
        call.tool = tool
        # Is the tool offered to this agent, and this run, at all? Asked before the arguments are read,
        # so a hidden tool's schema never shows through its validation errors.
        for admit in self.extensions.admission:
            admit(call)
        if offered is not None and tool.name not in offered:
            call.verdict, call.decided_by = "deny", "run.tools"
            raise ToolError(
                ErrorType.DENIED,
                f"Refused by policy: the tool '{call.name}' is not offered in this run.",
                self._choices(call.agent or call.agent_id, offered),
            )
        plan = self._plans.get(tool.name)
        if (
            plan is None
            or plan.tool is not tool
            or plan.input_model is not tool.input_model
            or plan.output_model is not tool.output_model
        ):  # first call, or another tool under this name, or its models swapped
            plan = self._plans[tool.name] = _ToolPlan.of(tool)
        if type(args) is dict:
            # The common case, a dict: ``parse_arguments``'s own check of it (in C: valid text, reasonable depth)
            # without its frame and its tuple; anything that check refuses goes to ``parse_arguments`` to say why.
            try:
                to_json(args)
            except Exception:
                self._parse(call, args)
            call.raw_args = args
        else:
            self._parse(call, args)
        repaired = call.raw_args
        if plan.repairs:
            repaired, repair_notes = repair_arguments(plan.input_model, repaired)
            call.notes.extend(repair_notes)
        try:
            validated = plan.validate(repaired)
        except ValidationError as exc:
            raise explain_validation_error(plan.input_model, exc) from None
        call.settings = self.tool_config(tool, call.agent or call.agent_id)
        call.input = validated
        if plan.has_subjects:
            call.subjects = tool.subjects(validated)
        return plan, validated

    def _context(self, call: ToolCall, tool_name: str, token: CancelToken) -> ToolContext:
        scope = call.scope
        approvals = self.approvals if call.channel is None else _through(self.approvals, call.channel)
        return ToolContext(
            workspace=self.workspace,
            stores=self.stores,
            config=call.settings,
            http=self.http,
            events=call.events or self.events,
            approvals=approvals,
            cancel=token,
            agent_id=call.agent_id,
            session_id=call.session_id,
            call_id=call.call_id,
            tool_name=tool_name,
            output_cap=self.output_cap,
            durable=scope.durable or self.durable,
            catalog=scope.catalog or self.catalog,
            skills=self.skills,
            subagents=scope.subagents,
            models=CallModels(approvals, scope.models),
        )

    def _shape(
        self, plan: _ToolPlan, output: BaseModel | None, data: dict[str, Any] | None, notes: list[str]
    ) -> ToolResult:
        """Stage 4's first half: the output checked against its model and dumped (``data`` when already so)."""
        if data is None:
            model = plan.output_model
            if type(output) is not model:
                if not isinstance(output, model):
                    try:
                        output = model.model_validate(output)
                    except ValidationError as exc:
                        raise RuntimeError(
                            f"returned {type(output).__name__}, not a valid {model.__name__}: {exc}"
                        ) from None
                # A subclass instance is dumped by its own serializer, as before (it may have more fields).
                data = output.__pydantic_serializer__.to_python(output, mode="json")
            else:
                data = plan.dump(output, mode="json")
        # Compact JSON as a model sees it; its UTF-8 size bounds its length in characters from above.
        try:
            raw = to_json(data)
        except PydanticSerializationError:
            # Text no UTF-8 can carry (a file name that is not UTF-8, as os.fsdecode gives it): one such name
            # must not turn a whole listing into an internal error. Anything else still fails as before.
            data = escape_surrogates(data)
            raw = to_json(data)
            notes = [*notes, r"Some text was not valid UTF-8 (a file name, say); its bytes are shown as \xNN."]
        if len(raw) > _INT_DIGITS and _LONG_DIGITS.search(raw):
            # Integers past Python's str() limit break every json.dumps downstream (CLI, MCP, providers,
            # sessions): they travel as their decimal digits in a string instead.
            data = _big_ints_as_text(data)
            notes = [*notes, "Integers longer than 4,300 digits are given as strings of their digits."]
            raw = to_json(data)
        handle = None
        if len(raw) > self.output_cap and len(text := raw.decode()) > self.output_cap:
            handle = self.stores.outputs.save(text)
            data, how = fit(data, self.output_cap)
            notes = [
                *notes,
                f"The output was {len(text):,} characters, over the {self.output_cap:,} a result may hold, so {how}. "
                f"The whole output is saved: read it with read_output(handle='{handle}', offset=0).",
            ]
        content = (
            cast(ToolOutput, output).attached_content()
            if output is not None and (plan.attaches or isinstance(output, ToolOutput))
            else []
        )
        meta = ResultMeta("", "", 0.0, len(raw), handle)  # tool, call id and duration: stamped by _record
        return ok_checked(data, list(notes) if notes else [], meta, content)

    def _choices(self, agent: AgentView | str | None, offered: Collection[str] | None = None) -> str:
        """The hint naming what this caller may call instead: only the tools offered to it."""
        names = self.lookup.offered_names(agent) if self.lookup is not None else self.registry.names()
        if offered is not None:
            names = [n for n in names if n in offered]
        shown = ", ".join(names[:40]) + (", …" if len(names) > 40 else "")
        return f"Call one of the available tools: {shown}." if names else "No tools are available."

    def _not_found(self, call: ToolCall, offered: Collection[str] | None) -> ToolError:
        hint = self._choices(call.agent or call.agent_id, offered)
        hidden = self.lookup.hidden(call.name, call.agent or call.agent_id) if self.lookup is not None else None
        if hidden is not None:
            call.verdict, call.decided_by = "deny", hidden[0]
            return ToolError(ErrorType.DENIED, f"Refused by policy: {hidden[1]}.", hint)
        return ToolError(ErrorType.UNKNOWN_TOOL, f"There is no tool named '{call.name}'.", hint)

    def _gate(self, call: ToolCall) -> Awaitable[None] | None:
        """Stage 2, the one gate, for a real call and ``decide`` alike: None when no step had to wait.

        Each point's list is read as that point begins, so a member an earlier point woke (the approval
        step, woken by the policy step that first answered "ask") is walked by this very call. A step that
        answers with an awaitable hands the rest of the walk (its list's own iterator, then the later
        points) to ``_gate_after``. Written out point by point: a loop over the points' names cost 0.7 µs.
        """
        ext = self.extensions
        if gates := ext.policy:
            walk = iter(gates)
            for gate in walk:
                if (pending := gate(call)) is not None:
                    return self._gate_after(call, pending, 0, walk)
        if gates := ext.rate_limit:
            walk = iter(gates)
            for gate in walk:
                if (pending := gate(call)) is not None:
                    return self._gate_after(call, pending, 1, walk)
        gates = ext.approval
        if call.verdict == "ask":
            # Any gate before this point may ask (a gate added to ``policy`` or ``rate_limit``, not only the
            # policy's own, which wakes the approval gate itself): a call that must ask is never let through.
            gates = ext.wake_point("approval")
        if gates:
            walk = iter(gates)
            for gate in walk:
                if (pending := gate(call)) is not None:
                    return self._gate_after(call, pending, 2, walk)
        if gates := ext.before_tool:
            walk = iter(gates)
            for gate in walk:
                if (pending := gate(call)) is not None:
                    return self._gate_after(call, pending, 3, walk)
        return None

    @staticmethod
    def _parse(call: ToolCall, args: str | bytes | dict[str, Any] | None) -> None:
        try:
            call.raw_args, call.notes = parse_arguments(args)
        except ToolError:
            call.raw_args = _raw_for_record(args)
            raise

    async def _gate_after(self, call: ToolCall, pending: Awaitable[None], point: int, walk: Iterator[Gate]) -> None:
        await pending
        ext = self.extensions
        while True:
            for gate in walk:
                if (pending_next := gate(call)) is not None:
                    await pending_next
            point += 1
            if point == 4:
                return
            members = (ext.policy, ext.rate_limit, ext.approval, ext.before_tool)[point]
            if point == 2 and call.verdict == "ask":
                members = ext.wake_point("approval")  # as in ``_gate``: whichever gate asked, the call is asked
            walk = iter(members)

    def _record(
        self, call: ToolCall, result: ToolResult, hooks_done: bool = False
    ) -> ToolResult | Awaitable[ToolResult]:
        """Stage 4: after_tool hooks (for calls that ran), then exactly one audit row, whatever happened.

        Answers the result itself when no hook or sink had anything to wait for (no coroutine made), else an
        awaitable of it that finishes the stage (``hooks_done``: from there on, the audit).
        """
        if not hooks_done and (hooks := self.extensions.after_tool):
            walk = iter(hooks)
            for after in walk:
                replaced = after(call, result)
                if type(replaced) is ToolResult or isinstance(replaced, ToolResult):
                    result = replaced
                else:
                    return self._record_after(call, result, replaced, walk)
        meta = result.meta
        meta.tool = call.name
        meta.call_id = call.call_id
        meta.duration_ms = (time.perf_counter() - call.started) * 1000
        if sinks := self.extensions.audit:
            walk_sinks = iter(sinks)
            for audit in walk_sinks:
                try:
                    if (pending := audit(call, result)) is not None:
                        return self._audit_after(call, result, pending, walk_sinks)
                except Exception as exc:
                    result = _unrecorded(call, exc)
        return result

    async def _record_after(
        self,
        call: ToolCall,
        result: ToolResult,
        pending: Awaitable[ToolResult],
        walk: Iterator[AfterTool],
    ) -> ToolResult:
        try:
            result = await pending
            for after in walk:
                replaced = after(call, result)
                if type(replaced) is ToolResult or isinstance(replaced, ToolResult):
                    result = replaced
                else:
                    result = await replaced
        except anyio.get_cancelled_exc_class():
            # The caller gave up while a hook ran: the tool's work is done, so its row is written all the same.
            audited = self._record(call, result, hooks_done=True)
            if type(audited) is not ToolResult:
                with anyio.CancelScope(shield=True):
                    await cast(Awaitable[ToolResult], audited)
            raise
        audited = self._record(call, result, hooks_done=True)
        return audited if type(audited) is ToolResult else await cast(Awaitable[ToolResult], audited)

    async def _audit_after(
        self, call: ToolCall, result: ToolResult, pending: Awaitable[None] | None, walk: Iterator[AuditSink]
    ) -> ToolResult:
        """The audit stage from a sink that had to wait (``pending``) on, through the rest of ``walk``."""
        while True:
            try:
                if pending is not None:
                    with anyio.CancelScope(shield=True):  # a row begun is finished, whoever gives up waiting
                        await pending
                    await anyio.lowlevel.checkpoint_if_cancelled()  # then the caller's cancellation, if any
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as exc:
                result = _unrecorded(call, exc)
            audit = next(walk, None)
            if audit is None:
                return result
            try:
                pending = audit(call, result)
            except Exception as exc:
                result, pending = _unrecorded(call, exc), None

    async def invoke_many(
        self, calls: Sequence[tuple[str, dict[str, Any] | str | None]], **kwargs: Any
    ) -> list[ToolResult]:
        """Run calls concurrently; results come back in call order."""
        results: list[ToolResult | None] = [None] * len(calls)

        async def run_one(index: int, name: str, args: dict[str, Any] | str | None) -> None:
            results[index] = await self.invoke(name, args, **kwargs)

        async with anyio.create_task_group() as group:
            for index, (name, args) in enumerate(calls):
                group.start_soon(run_one, index, name, args)
        return [r for r in results if r is not None]


@runtime_checkable
class Routable(Protocol):
    """Approvals that can be asked through one caller's channel (the Rig's ``ToolApprovals``)."""

    def through(self, channel: ApprovalChannel) -> Approvals: ...


def _through(approvals: Approvals, channel: ApprovalChannel) -> Approvals:
    """A tool's own questions go where its call's approvals go."""
    return approvals.through(channel) if isinstance(approvals, Routable) else approvals


def _unrecorded(call: ToolCall, exc: Exception) -> ToolResult:
    """The result of a call whose audit row could not be written: its output is withheld, saying why."""
    if isinstance(exc, ToolError):
        # The audit log refused on purpose (a state dir a repository planted a symlink in): say why.
        log.warning("audit sink refused call %s: %s", call.call_id, exc.message)
        result = ToolResult.error(
            exc.error_type,
            f"The call could not be recorded in the audit log, so its result is withheld: {exc.message}",
            exc.next_action_hint,
        )
    else:
        # "Every call, allowed or not, is one row": a call whose row cannot be written does not
        # hand its output on, so nothing it read leaves unrecorded.
        log.exception("audit sink failed for call %s", call.call_id, exc_info=exc)
        result = ToolResult.error(
            ErrorType.INTERNAL,
            "The call could not be recorded in the audit log, so its result is withheld.",
            "Tell the user: the audit log (.toolrig/audit.db) cannot be written.",
        )
    result.meta.tool, result.meta.call_id = call.name, call.call_id
    return result


_INT_DIGITS = 4_300
_LONG_DIGITS = re.compile(rb"\d{%d,}" % (_INT_DIGITS + 1))


def _big_ints_as_text(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 14_000:
        try:
            str(value)
        except ValueError:
            return to_json(value).decode()
        return value
    if isinstance(value, dict):
        return {k: _big_ints_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_big_ints_as_text(v) for v in value]
    return value


def _raw_for_record(args: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    """Arguments that could not be parsed, kept for the audit row as the text that was sent."""
    if isinstance(args, dict):
        return args
    if isinstance(args, bytes):
        args = args.decode("utf-8", "replace")
    if not isinstance(args, str):  # a Python caller's list or number: kept as its bounded repr
        try:
            args = repr(args)
        except ValueError:  # an integer past Python's 4,300-digit text limit
            args = f"<{type(args).__name__} too large to show>"
    return {"_unparsed": args[:2_000]} if args else {}
