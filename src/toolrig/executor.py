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
ToolResult; the only thing that propagates is the caller's own cancellation. The call record and the
extension points' members are ``toolrig.gate``'s.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.lowlevel
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from toolrig.approvals.channel import ApprovalChannel, routed
from toolrig.arguments import explain_validation_error, parse_arguments, repair_arguments
from toolrig.calling import ToolPlan, raw_for_record, shape, unrecorded
from toolrig.cancel import CancelToken, bind_token, unbind_token
from toolrig.context import AllowAll, Approvals, GuardedOnFirstUse, HttpAccess, SkillAccess, ToolCatalog, ToolContext
from toolrig.errors import ErrorType, ToolError, UsageError
from toolrig.event_bus import EventSink, NullSink

# Re-exported (``X as X``): the gate's parts were defined here before ``toolrig.gate``.
from toolrig.gate import Admission as Admission
from toolrig.gate import AfterTool as AfterTool
from toolrig.gate import AuditSink as AuditSink
from toolrig.gate import ExtensionPoint as ExtensionPoint
from toolrig.gate import Extensions as Extensions
from toolrig.gate import Gate as Gate
from toolrig.gate import Lookup as Lookup
from toolrig.gate import Reserved as Reserved
from toolrig.gate import ToolCall as ToolCall
from toolrig.mcp_access import CallMcp
from toolrig.permissions import AgentView
from toolrig.registry import AnyTool, Registry
from toolrig.result import ToolResult
from toolrig.sampling import CallModels
from toolrig.sandbox.paths import Workspace
from toolrig.scope import CallScope
from toolrig.stores import Stores
from toolrig.stores.checkpoints import Recorder
from toolrig.worker_threads import run_sync

if TYPE_CHECKING:
    from toolrig.durable.api import Durable
    from toolrig.sandbox.session import SessionSandbox

log = logging.getLogger("toolrig.executor")

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_OUTPUT_CAP = 100_000


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
        global_config: BaseModel | None = None,
        mcp_servers: Callable[[], list[str]] | None = None,
        sandbox: SessionSandbox | None = None,
    ) -> None:
        self.registry = registry
        self.global_config = global_config  # the resolved config, for ToolContext.global_config
        self.mcp_servers = mcp_servers  # the configured MCP servers' names; None: no ToolContext.mcp
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
        self.sandbox = sandbox  # the sandbox of calls whose scope brings no session's own (the Rig's)
        # Handed to tools that provably never read their context (Tool.reads_context), instead of a fresh one.
        self._unread_context = ToolContext(workspace=workspace, stores=self.stores)
        self._plans: dict[str, ToolPlan] = {}  # by tool name; checked against the registry's tool on each call

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
        call = self._new_call(
            name, call_id, origin, agent_id, parent_agent_id, session_id, events, called_as, agent, channel, scope
        )
        if scope is not None and offered is None:
            offered = scope.offered
        # Stages 1-2 in this frame, stage 3 in one more (``_run``); only the caller's cancellation leaves the
        # inner ``try``, to be recorded by the outer one.
        try:
            try:
                plan, validated = self._prepare(call, args, offered)  # stage 1
                if (pending := self._gate(call)) is not None:  # stage 2, the one gate
                    await pending
                result = await self._run(call, plan, validated, timeout_seconds)  # stage 3
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

    def _new_call(
        self,
        name: str,
        call_id: str | None,
        origin: str,
        agent_id: str | None,
        parent_agent_id: str | None,
        session_id: str | None,
        events: EventSink | None,
        called_as: str | None,
        agent: AgentView | None,
        channel: ApprovalChannel | None,
        scope: CallScope | None,
    ) -> ToolCall:
        """The call as it begins: who is calling from ``scope``, a keyword given as well winning over its field."""
        if scope is not None:
            agent_id = agent_id if agent_id is not None else scope.agent_id
            parent_agent_id = parent_agent_id if parent_agent_id is not None else scope.parent_agent_id
            session_id = session_id if session_id is not None else scope.session_id
            events = events or scope.events
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
        return call

    async def _run(
        self, call: ToolCall, plan: ToolPlan, validated: BaseModel, timeout_seconds: float | None
    ) -> ToolResult:
        """Stage 3: run the tool (with a token and a deadline when it can see or need them), its output shaped."""
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
        save = self.stores.outputs.save
        if direct is None:
            return shape(plan, self.output_cap, save, output, None, call.notes)
        if type(output) is plan.plain:  # already its own validated JSON form
            return shape(plan, self.output_cap, save, None, {"result": output}, call.notes)
        return shape(plan, self.output_cap, save, direct.wrap(output), None, call.notes)

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
    ) -> tuple[ToolPlan, BaseModel]:
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
            plan = self._plans[tool.name] = ToolPlan.of(tool)
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
        approvals = self.approvals if call.channel is None else routed(self.approvals, call.channel)
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
            mcp=None if self.mcp_servers is None else self._mcp(call, self.mcp_servers),
            global_config=self.global_config,
            background=scope.background,
            checkpoint=None
            if scope.checkpoint is None
            else Recorder.of(self.workspace, scope.checkpoint, tool_name, call.call_id),
            sandbox=scope.sandbox or self.sandbox,
        )

    def _mcp(self, call: ToolCall, servers: Callable[[], list[str]]) -> CallMcp:
        """The call's MCP handle: its calls are new calls under this call's scope (agent, session, channel)."""
        catalog = call.scope.catalog or self.catalog
        return CallMcp(
            partial(
                self.invoke, origin=call.origin, agent_id=call.agent_id, parent_agent_id=call.parent_agent_id,
                session_id=call.session_id, agent=call.agent, channel=call.channel, scope=call.scope,
            ),
            lambda: catalog.offered(call.agent_id) if catalog is not None else self.registry.list(),
            servers,
        )  # fmt: skip

    def _choices(
        self, agent: AgentView | str | None, offered: Collection[str] | None = None, near: str | None = None
    ) -> str:
        """The hint naming what this caller may call instead: only the tools offered to it, those like ``near`` first.

        The list is capped, so a misspelt name's likely target must lead it, not depend on where its group sorts.
        """
        names = self.lookup.offered_names(agent) if self.lookup is not None else self.registry.names()
        if offered is not None:
            names = [n for n in names if n in offered]
        if near is not None and len(names) > 40:
            import difflib  # only for a misspelt name among many tools

            close = difflib.get_close_matches(near, names, n=5, cutoff=0.6)
            names = [*close, *(n for n in names if n not in close)]
        shown = ", ".join(names[:40]) + (", …" if len(names) > 40 else "")
        return f"Call one of the available tools: {shown}." if names else "No tools are available."

    def _not_found(self, call: ToolCall, offered: Collection[str] | None) -> ToolError:
        hint = self._choices(call.agent or call.agent_id, offered, near=call.name)
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
            call.raw_args = raw_for_record(args)
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
                    result = unrecorded(call.name, call.call_id, exc)
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
                result = unrecorded(call.name, call.call_id, exc)
            audit = next(walk, None)
            if audit is None:
                return result
            try:
                pending = audit(call, result)
            except Exception as exc:
                result, pending = unrecorded(call.name, call.call_id, exc), None

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
