"""The executor: the one path every tool call takes, whoever makes it (agent loop, MCP, CLI, a test).

::

    parse -> repair -> validate -> [policy] -> [rate_limit] -> [approval] -> [before_tool]
      -> execute (async, or sync in a worker thread; timeout; cancellation)
      -> validate output -> fit to the output cap -> [after_tool] -> [audit]

The bracketed steps are extension points filled by governance (policy, approvals, hooks, audit); each
is a list of small async callables, so one concern never needs to know another. Whatever happens, the
caller gets a ToolResult; the only thing that propagates is the caller's own cancellation.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from toolrig.arguments import explain_validation_error, parse_arguments, repair_arguments
from toolrig.cancel import CancelToken, bind_token, unbind_token
from toolrig.context import AllowAll, Approvals, HttpAccess, SkillAccess, ToolCatalog, ToolContext
from toolrig.errors import ErrorType, ToolError
from toolrig.events import EventSink, NullSink
from toolrig.registry import AnyTool, Registry
from toolrig.result import ResultMeta, ToolResult
from toolrig.sandbox.paths import Workspace
from toolrig.shaping import fit
from toolrig.stores import Stores

if TYPE_CHECKING:
    from toolrig.durable.api import Durable

log = logging.getLogger("toolrig.executor")

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_OUTPUT_CAP = 100_000


@dataclass(slots=True)
class ToolCall:
    """One call on its way through the executor; extension points read it and may add notes."""

    name: str
    tool: AnyTool | None
    raw_args: dict[str, Any]
    call_id: str
    origin: str
    agent_id: str | None = None
    parent_agent_id: str | None = None
    session_id: str | None = None
    input: BaseModel | None = None
    subjects: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdict: str = ""  # what governance concluded: allow, ask (until answered), deny, rate_limited
    verdict_reason: str = ""  # why, in words for a person (approval prompts) or the model (refusals)
    decided_by: str = ""  # the rule or setting that decided, for the audit row and `policy explain`
    approval: str = ""  # how an approval was answered: allow_once, allow_always, deny, timeout, grant, ...
    started: float = 0.0
    events: EventSink | None = None  # where this call's events go (the caller's sink, else the executor's)


class Gate(Protocol):
    """A step before execution (policy, rate limit, approval, before_tool hook): raise ToolError to stop."""

    async def __call__(self, call: ToolCall) -> None: ...


class AfterTool(Protocol):
    """A step after execution that may replace the result (after_tool hooks)."""

    async def __call__(self, call: ToolCall, result: ToolResult) -> ToolResult: ...


class AuditSink(Protocol):
    """Receives every finished call, allowed or not, with its final result."""

    async def __call__(self, call: ToolCall, result: ToolResult) -> None: ...


@dataclass
class Extensions:
    policy: list[Gate] = field(default_factory=list)
    rate_limit: list[Gate] = field(default_factory=list)
    approval: list[Gate] = field(default_factory=list)
    before_tool: list[Gate] = field(default_factory=list)
    after_tool: list[AfterTool] = field(default_factory=list)
    audit: list[AuditSink] = field(default_factory=list)

    def gates(self) -> list[Gate]:
        return [*self.policy, *self.rate_limit, *self.approval, *self.before_tool]


_counter = itertools.count(1)
_prefix = os.urandom(3).hex()


def new_call_id() -> str:
    return f"call_{_prefix}{next(_counter):06d}"


class Executor:
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
        tool_config: Callable[[AnyTool, str | None], BaseModel | None] | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        output_cap: int = DEFAULT_OUTPUT_CAP,
    ) -> None:
        self.registry = registry
        self.workspace = workspace
        self.extensions = extensions or Extensions()
        self.stores = stores or Stores(workspace.state_dir)
        if http is None:
            from toolrig.sandbox.http import GuardedHttp

            http = GuardedHttp()
        self.http: HttpAccess = http
        self.events: EventSink = events or NullSink()
        self.approvals: Approvals = approvals or AllowAll()
        self.tool_config = tool_config or (lambda tool, agent: None)
        self.timeout_seconds = timeout_seconds
        self.output_cap = output_cap
        self.durable: Durable | None = None  # schedules and tasks (the Rig sets it; a durable run binds its task)
        self.catalog: ToolCatalog | None = None  # set by the rig: the offered tools, for tool_search
        self.skills: SkillAccess | None = None  # set by the rig: the workspace's Agent Skills

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
    ) -> ToolResult:
        """Run one tool call to a ToolResult. Only the caller's own cancellation propagates."""
        call = ToolCall(
            name=name,
            tool=self.registry.find(name),
            raw_args={},
            call_id=call_id or new_call_id(),
            origin=origin,
            agent_id=agent_id,
            parent_agent_id=parent_agent_id,
            session_id=session_id,
            started=time.perf_counter(),
            events=events or self.events,
        )
        token = CancelToken()
        try:
            result = await self._run(call, args, token, timeout_seconds, events or self.events)
        except anyio.get_cancelled_exc_class():
            token.cancel("the caller cancelled the call")
            with anyio.CancelScope(shield=True):
                await self._finish(call, ToolResult.error(ErrorType.CANCELLED, "The call was cancelled."))
            raise
        return await self._finish(call, result)

    async def _run(
        self,
        call: ToolCall,
        args: str | bytes | dict[str, Any] | None,
        token: CancelToken,
        timeout_seconds: float | None,
        events: EventSink,
    ) -> ToolResult:
        tool = call.tool
        try:
            if tool is None:
                raise self._unknown_tool(call.name)
            call.raw_args, call.notes = parse_arguments(args)
            repaired, repair_notes = repair_arguments(tool.input_model, call.raw_args)
            call.notes.extend(repair_notes)
            try:
                call.input = tool.input_model.model_validate(repaired)
            except ValidationError as exc:
                raise explain_validation_error(tool.input_model, exc) from None
            call.subjects = tool.subjects(call.input)
            for gate in self.extensions.gates():
                await gate(call)
            ctx = ToolContext(
                workspace=self.workspace,
                stores=self.stores,
                config=self.tool_config(tool, call.agent_id),
                http=self.http,
                events=events,
                approvals=self.approvals,
                cancel=token,
                agent_id=call.agent_id,
                session_id=call.session_id,
                call_id=call.call_id,
                tool_name=tool.name,
                output_cap=self.output_cap,
                durable=self.durable,
                catalog=self.catalog,
                skills=self.skills,
            )
            limit = timeout_seconds or tool.timeout_seconds or self.timeout_seconds
            bound = bind_token(token)
            try:
                with anyio.move_on_after(limit) as scope:
                    if tool.is_async:
                        output = await tool.execute(call.input, ctx)
                    else:
                        # The worker thread inherits the bound token through the copied context.
                        run = partial(tool.execute, call.input, ctx)
                        output = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
            finally:
                unbind_token(bound)
            if scope.cancelled_caught:
                token.cancel(f"timed out after {limit:g}s")
                raise ToolError(
                    ErrorType.TIMEOUT,
                    f"'{tool.name}' did not finish within {limit:g} seconds and was stopped.",
                    "Retry with a smaller request, or a longer timeout if the tool takes one.",
                    retryable=True,
                )
            return self._shape(tool, output, call.notes)
        except ToolError as err:
            return ToolResult.from_error(err, notes=call.notes)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            # The one place an unexpected exception is caught: the tool is broken, the loop must not be.
            log.exception("tool %r raised an unexpected exception (call %s)", call.name, call.call_id)
            return ToolResult.error(
                ErrorType.INTERNAL,
                f"The tool '{call.name}' failed unexpectedly: {type(exc).__name__}: {exc}",
                notes=call.notes,
            )

    def _shape(self, tool: AnyTool, output: Any, notes: list[str]) -> ToolResult:
        model = tool.output_model
        if not isinstance(output, model):
            try:
                output = model.model_validate(output)
            except ValidationError as exc:
                raise RuntimeError(f"returned {type(output).__name__}, not a valid {model.__name__}: {exc}") from None
        data: dict[str, Any] = output.model_dump(mode="json")
        # Compact JSON as a model sees it; its UTF-8 size bounds its length in characters from above.
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
        return ToolResult.ok(data, notes=notes, meta=ResultMeta(output_bytes=len(raw), full_output_handle=handle))

    def _unknown_tool(self, name: str) -> ToolError:
        names = self.registry.names()
        shown = ", ".join(names[:40]) + (", …" if len(names) > 40 else "")
        return ToolError(
            ErrorType.UNKNOWN_TOOL,
            f"There is no tool named '{name}'.",
            f"Call one of the available tools: {shown}." if names else "No tools are available.",
        )

    async def _finish(self, call: ToolCall, result: ToolResult) -> ToolResult:
        for after in self.extensions.after_tool:
            result = await after(call, result)
        meta = result.meta
        meta.tool = call.name
        meta.call_id = call.call_id
        meta.duration_ms = (time.perf_counter() - call.started) * 1000
        for audit in self.extensions.audit:
            try:
                await audit(call, result)
            except Exception:
                log.exception("audit sink failed for call %s", call.call_id)
        return result

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
