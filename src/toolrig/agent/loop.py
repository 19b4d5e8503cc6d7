"""The agent loop: prompt -> model turn -> tool calls -> model turn ... until the model answers.

Rules, in the order they apply: each model turn streams as events; all its tool calls run concurrently
(``sequential`` tools are barriers) and return in call order; a malformed call becomes an error result
the model can fix; a ``terminal`` tool's success ends the run with its output; when ``max_turns`` runs out
on tool results, one last call without tools asks for a summary. Every turn is recorded in the session.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from toolrig.agent.budget import Ledger
from toolrig.agent.calls import CallOutcome, run_calls
from toolrig.agent.checkpointing import mark_of
from toolrig.agent.context import tool_list_warning
from toolrig.agent.deferred import deferral, deferred_note
from toolrig.agent.errors import RunError
from toolrig.agent.messages import Message, TextBlock, ToolResultBlock, close_open_calls
from toolrig.agent.providers import Provider, TurnComplete, TurnRequest
from toolrig.agent.session import SessionStore, ToolCallRecord, new_session_id
from toolrig.agent.setup import (
    DEFAULT_SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT,  # re-exported: defined here before agent/setup.py
)
from toolrig.agent.setup import (
    first_channel,
    offered_tools,
    own_agent,
    resumed_questions,
    run_limits,
    run_provider,
    system_prompt,
)
from toolrig.agent.state import RunOptions, RunResult, RunState, StopReason
from toolrig.agent.subagents.nodes import UNSET, Lineage, RunNode
from toolrig.agent.subagents.prompt import agent_types_section, child_instructions
from toolrig.agent.turns import (
    Progress,
    RunSink,
    ends_run,
    paused_result,
    record_of,
    run_profile,
    stop_of,
    terminal_text,
    todo_reminder,
)
from toolrig.agent.usage import Usage
from toolrig.approvals import ApprovalDecision, Verdict
from toolrig.approvals.channel import ApprovalChannel
from toolrig.approvals.paused import PauseChannel, ReplayChannel
from toolrig.content import parts_from_json, parts_to_json
from toolrig.events import ChunkEvent, DoneEvent, ErrorEvent, Event, InitEvent, StreamTextEvent
from toolrig.hooks import HookChain, HookEvent
from toolrig.permissions import AgentView
from toolrig.policy.audit import background_ends
from toolrig.registry import AnyTool
from toolrig.rig import Rig
from toolrig.sampling import ModelSource
from toolrig.sandbox.background import BackgroundJobs, owned_jobs
from toolrig.scope import CallScope
from toolrig.stores.checkpoints.lease import run_lease
from toolrig.telemetry import chat_span, traced_run

log = logging.getLogger("toolrig.agent")

SUMMARY_REQUEST = (
    "You have used all {turns} turns this run allows, so no more tools can be called. Summarize what you "
    "did, what you found and what is left to do."
)
ABORTED = "aborted by the user"


class _Run:
    def __init__(
        self,
        rig: Rig,
        options: RunOptions,
        on_event: Callable[[Event], None] | None,
        lineage: Lineage | None = None,  # a subagent's place under its parent (toolrig.agent.subagents)
    ) -> None:
        self.lineage = lineage
        self.node: RunNode | None = None  # this run in the hub of runs, while it runs
        self.resumed_children: dict[str, Any] = {}  # RunState.children of a resumed run
        self.resume_decisions: Mapping[str, ApprovalDecision | Verdict] = {}
        self.rig = rig
        self.options = options
        self.sink = RunSink(on_event)
        own = own_agent(rig, lineage)
        self.provider: Provider = run_provider(rig, options, own)
        model = self.provider.settings.model
        limits = run_limits(rig, options, own, lineage, model)
        self.max_turns, self.timeout, self.budget, self.price = (
            limits.max_turns,
            limits.timeout,
            limits.budget,
            limits.price,
        )
        self.system = system_prompt(rig, options, own, lineage)
        self._init_lineage()  # subagents: this run's agent id, its hub, its place under a parent
        self.tools: list[AnyTool]
        self.tools, search_core = offered_tools(rig, self.view, options, model)
        self.offered = {t.name: t for t in self.tools}
        self.system += self._delegation_section()
        # llm.tools: search / tools.deferred: the model is shown a core set and tool_search; what a lookup
        # finds is shown from the next turn (every offered tool is callable from the first).
        self.deferred = deferral(self.tools, rig.config.tools.deferred, search_core)
        if self.deferred is not None:
            self.tools = self.deferred.visible()
        self.profile = run_profile(rig, options, lineage)
        self.system += deferred_note(self.deferred, self.profile)
        self.tools = self._faced(self.tools)
        warning = tool_list_warning(model, self.tools, rig.config.llm.context_window)
        if warning is not None:
            log.warning(warning)
        self.store = SessionStore.shared(rig.workspace.state_dir) if options.persist else None
        self.hooks = HookChain()
        for hook in options.hooks:
            self.hooks.add(hook)
        self.channel: ApprovalChannel | None = None  # who answers this run's approvals (``_guarded``); None: the Rig's
        self.pause = PauseChannel() if options.approvals == "pause" or options.questions == "pause" else None
        self.session_id = ""
        self._new_title: str | None = None
        self.owns_provider = options.provider is None
        self.progress: Progress | None = None
        self.jobs: BackgroundJobs | None = None  # its background commands, while it runs
        from toolrig.agent.capabilities import run_catalog
        from toolrig.agent.mcp_sampling import RunModels

        # tools' ctx.sample and remote MCP servers' sampling during the run's calls: this run's model, on its budget
        self.models = RunModels(self.provider, self)
        # capabilities_refresh may ask this model for themes; tool_search names tools as this model does.
        self.catalog = run_catalog(rig, self.provider, self.profile)
        self.scope = CallScope()  # who this run is, for each of its calls: set when the run starts (``_guarded``)

    def _faced(self, tools: list[AnyTool]) -> list[AnyTool]:
        """The tools under the run's profile, each capability once; a face's name also finds its tool in ``offered``."""
        from toolrig.adapters.faces import faced

        shown = faced(tools, self.profile)
        for face in self.profile.faces:
            if face.tool in self.offered:
                self.offered.setdefault(face.name, self.offered[face.tool])
        return shown

    # ------------------------------------------------------------------------------ session

    def _open_session(self, title: str, session_id: str | None) -> list[Message]:
        if self.lineage is not None:  # a subagent: a new session named by its task id (lineage in every row)
            self.session_id = self.lineage.child.task_id
            self._new_title = title if self.store is not None else None
            return []
        if self.store is None:
            self.session_id = session_id or new_session_id()
            return []
        sid = session_id
        if sid is None and self.options.continue_latest:
            sid = self.store.latest()
        if sid is not None and self.store.exists(sid):
            self.session_id = sid
            return self.store.messages(sid)
        if sid is not None and self.options.session_id is not None:
            raise RunError("config", f"no session {sid!r} in {self.store.path} (see `toolrig sessions list`)")
        # Created with the first record, in its transaction: one write less per run.
        self.session_id = sid or new_session_id()
        self._new_title = title
        return []

    def _record(self, progress: Progress, messages: list[Message], **fields: Any) -> None:
        if self.store is not None:
            if progress.unsaved:
                messages = [*progress.unsaved, *messages]
                progress.unsaved = []
            if self._new_title is not None:
                s = self.provider.settings
                fields = {"model": s.model, "provider": s.provider, **fields, "title": self._new_title}
                self._new_title = None
            self.store.record(self.session_id, turn=progress.session_turn, messages=messages, **fields)

    # ------------------------------------------------------------------------------ entry points

    async def start(self, prompt: str) -> RunResult:
        history = self._open_session(prompt, self.options.session_id)
        closing = close_open_calls(history, "the previous run ended before this call finished")
        progress = Progress(messages=history, new_from=len(history))
        progress.session_turn = self.store.next_turn(self.session_id) if self.store is not None else 0
        self.sink.emit(InitEvent(self.session_id))
        await self._hook(HookEvent("before_prompt", self.session_id, self.agent_id, message=prompt))
        first = Message.user(prompt)
        if closing is not None:
            first = Message("user", [*closing.content, *first.content])
        reminder = todo_reminder(self.rig.stores, self.session_id, history)
        if reminder is not None:
            first = Message("user", [reminder, *first.content])
        progress.messages.append(first)
        progress.unsaved.append(first)
        return await self._guarded(progress, None, self._channel())

    async def resume(
        self,
        state: RunState,
        decisions: Mapping[str, ApprovalDecision | Verdict],
        answers: Mapping[str, Any] | None = None,
    ) -> RunResult:
        if not state.messages or not state.messages[-1].tool_calls:
            raise RunError("state", "the saved run state has no tool calls waiting")
        self.max_turns = self.options.max_turns or state.max_turns
        if state.system_prompt and not self.options.system_prompt:
            self.system = state.system_prompt
        if self.store is not None and not self.store.exists(state.session_id):
            s = self.provider.settings
            self.store.create(model=s.model, provider=s.provider, session_id=state.session_id)
        self.session_id = state.session_id
        progress = Progress(messages=list(state.messages), new_from=state.new_from, usage=state.usage)
        progress.turns_used = state.turns_used
        progress.session_turn = self.store.next_turn(self.session_id) if self.store is not None else 0
        progress.open_turn = True
        self.sink.emit(InitEvent(self.session_id))
        pending = {p.call_id for p in state.pending}
        done: dict[str, ToolResultBlock] = {}
        for call in state.messages[-1].tool_calls:
            if call.id not in pending and call.id in state.results:
                saved = state.results[call.id]
                media = parts_to_json(parts_from_json(saved.get("media")))  # a state file is input: re-checked
                done[call.id] = ToolResultBlock(
                    call.id, call.name, str(saved["content"]), bool(saved["is_error"]), media=media
                )
        asked = [p.call_id for p in state.pending if p.questions]
        channel = ReplayChannel(
            self._resume_children(state, decisions),
            answers,
            asked=asked,
            then=resumed_questions(self.options, self.pause),
            bound={p.call_id: p.fingerprint for p in state.pending if p.fingerprint},
            approvals=self.pause if self.options.approvals == "pause" else self.options.approvals,
        )
        return await self._guarded(progress, done, channel)

    def _channel(self) -> ApprovalChannel | None:
        """Who answers this run's approvals and questions (a child's root asks this: ``hub.root_channel``)."""
        return first_channel(self.options, self.pause, self.rig)

    # ------------------------------------------------------------------------------ abort, timeout, failure

    @traced_run  # telemetry: an invoke_agent span around the run (toolrig.telemetry), nothing when off
    async def _guarded(
        self, progress: Progress, done: dict[str, ToolResultBlock] | None, channel: ApprovalChannel | None
    ) -> RunResult:
        self.channel = channel  # passed with each of the run's calls: nothing is registered on the Rig
        self.scope = CallScope(
            agent=self.view,
            agent_id=self.agent_id,
            parent_agent_id=self.lineage.parent.agent_id if self.lineage is not None else None,
            session_id=self.session_id,
            offered=self.offered,
            events=self.sink,
            channel=channel,
            models=ModelSource(run=self.models.sample),
            subagents=self.hub,
            catalog=self.catalog,
            profile=self.profile,
            hooks=self.hooks if len(self.hooks) else None,
            durable=self.options.durable,
            origin="agent",
        )
        self.progress = progress
        node = None
        try:
            with anyio.CancelScope() as scope:
                if self.timeout is not None:
                    scope.deadline = anyio.current_time() + self.timeout
                failure: Exception | None = None
                # The run owns its background commands: leaving this stops every one (sandbox/background.py).
                async with self._lease(), self._jobs() as self.jobs, anyio.create_task_group() as tasks:
                    node = self.hub.enter(self, self.lineage, progress.usage, tasks)
                    self.node = node
                    if self.options.abort is not None:
                        tasks.start_soon(self._watch_abort, self.options.abort, scope)
                    try:
                        result = await self._loop(progress, done)
                    except Exception as exc:  # re-raised below, outside the group, so it is not wrapped in one
                        failure = exc
                    finally:
                        tasks.cancel_scope.cancel()
                if failure is not None:
                    raise failure
                return self._finish(result)
            aborted = self.options.abort is not None and self.options.abort.is_set()
            partial = "".join(progress.partial)
            self._close_interrupted(progress, ABORTED if aborted else "the run timed out")
            if aborted:
                result = self._result(progress, partial, "aborted")
                return self._finish(result)
            raise RunError("timeout", f"the run did not finish within {self.timeout:g} seconds")
        except anyio.get_cancelled_exc_class():
            self._close_interrupted(progress, "the run was cancelled")
            raise
        except RunError as exc:
            self._close_interrupted(progress, f"the run failed: {exc.message}", status="failed")
            self.sink.emit(ErrorEvent(exc.kind, exc.message))
            raise
        finally:
            if node is not None:
                self.hub.leave(node)
            if self.owns_provider:
                # Bounded: closing a connection that a cancelled stream left behind must not hang the caller.
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self.provider.aclose()

    def _lease(self) -> contextlib.AbstractAsyncContextManager[None]:
        """A root run holds its session's lease while it goes: a rewind of the session, anywhere, is refused."""
        if self.lineage is not None or not self.session_id:  # a subagent's changes are its root's session's
            return contextlib.nullcontext()
        return run_lease(self.rig.workspace.state_dir, self.session_id)

    def _jobs(self) -> contextlib.AbstractAsyncContextManager[BackgroundJobs]:
        return owned_jobs(self.options.background, background_ends(self.rig.governance.audit, "agent"))

    @staticmethod
    async def _watch_abort(abort: anyio.Event, scope: anyio.CancelScope) -> None:
        await abort.wait()
        scope.cancel()

    def _close_interrupted(self, progress: Progress, reason: str, status: str = "interrupted") -> None:
        """Keep the history valid after an interruption: streamed text kept, open calls answered."""
        added: list[Message] = []
        if progress.partial:
            added.append(Message("assistant", [TextBlock("".join(progress.partial))]))
            progress.partial = []
        closing = close_open_calls(progress.messages, reason) if progress.open_turn else None
        if closing is not None:
            added.append(closing)
        progress.messages.extend(added)
        try:
            self._record(progress, added, status=status)
        except Exception:
            log.exception("could not record the interrupted turn of session %s", self.session_id)

    def _finish(self, result: RunResult) -> RunResult:
        self.sink.emit(DoneEvent(result.session_id, result.response, result.stop_reason, output=result.output))
        return result

    # ------------------------------------------------------------------------------ the loop

    async def _loop(self, progress: Progress, done: dict[str, ToolResultBlock] | None) -> RunResult:
        if done is not None:  # resuming a paused turn: finish its calls first
            outcome = await self._tool_phase(progress, done)
            if outcome is not None:
                return outcome
        while True:
            complete = await self._model_turn(progress, tool_choice="auto")
            calls = complete.message.tool_calls
            if not calls:
                response = complete.message.text
                await self._hook(HookEvent("after_response", self.session_id, self.agent_id, response=response))
                return self._result(progress, response, stop_of(complete))
            outcome = await self._tool_phase(progress, {})
            if outcome is not None:
                return outcome

    async def _model_turn(self, progress: Progress, tool_choice: str) -> TurnComplete:
        request = TurnRequest(self.system, progress.messages, self.tools, "none" if tool_choice == "none" else "auto")
        steps = self.options.steps
        # The tree's one budget (toolrig.agent.budget): admitted before the turn, charged as it completes.
        async with self._ledger().turn() as charge:
            if steps is None:
                complete = await self._stream_turn(progress, request)
            else:
                complete = await steps.model_turn(
                    f"turn-{progress.turns_used}", lambda: self._stream_turn(progress, request)
                )
            charge(complete.usage.priced(self.price).cost_usd)
        return self._turn_done(progress, complete)

    def _ledger(self) -> Ledger:
        if self.node is None or self.node.ledger is None:  # pragma: no cover - a turn runs inside _guarded
            raise RunError("state", "the run is not entered in its hub")
        return self.node.ledger

    async def _stream_turn(self, progress: Progress, request: TurnRequest) -> TurnComplete:
        emit = self.sink.emit
        complete: TurnComplete | None = None
        partial = progress.partial = []
        with chat_span(self.rig, self.provider.settings) as chat:  # telemetry: a chat span (nothing when off)
            async for item in self.provider.stream(request):
                chat.chunk()
                if type(item) is StreamTextEvent:
                    partial.append(item.text)
                    emit(item)
                elif isinstance(item, TurnComplete):
                    complete = item
                else:
                    emit(item)
            if complete is None:  # pragma: no cover - a provider always ends with TurnComplete
                raise RunError("provider", "the provider's stream ended without a final message")
            chat.done(complete)
        return complete

    def _turn_done(self, progress: Progress, complete: TurnComplete) -> TurnComplete:
        emit = self.sink.emit
        progress.partial = []
        usage = complete.usage.priced(self.price)
        progress.usage.add(usage)
        progress.turns_used += 1
        message = complete.message
        progress.messages.append(message)
        progress.open_turn = bool(message.tool_calls)
        emit(usage.event())
        text = message.text
        if text:
            emit(ChunkEvent(text))
        s = self.provider.settings
        self._record(
            progress,
            [message],
            usage=usage,
            model=s.model,
            provider=s.provider,
            stop_reason=complete.stop_reason,
            status=None if message.tool_calls else ("max_tokens" if stop_of(complete) == "max_tokens" else "done"),
        )
        progress.session_turn += 1
        self._ledger().raise_if_over()  # this run's, or an ancestor's limit, counting every run under it
        return complete

    async def _tool_phase(self, progress: Progress, done: dict[str, ToolResultBlock]) -> RunResult | None:
        """Run the last turn's calls (those not already ``done``); a RunResult when the run stops here."""
        calls = progress.messages[-1].tool_calls
        todo = [c for c in calls if c.id not in done]
        outcomes = await run_calls(
            todo,
            rig=self.rig,
            offered=self.offered,
            session_id=self.session_id,
            agent_id=self.agent_id,
            parent_agent_id=self.lineage.parent.agent_id if self.lineage is not None else None,
            events=self.sink,
            pause=self.pause,
            steps=self.options.steps,
            profile=self.profile,
            scope=self.scope.child(checkpoint=mark_of(self), background=self.jobs),
        )
        by_id = {o.call.id: o for o in outcomes}
        if any(o.paused for o in outcomes):
            return paused_result(self, progress, calls, done, by_id)
        blocks: list[ToolResultBlock] = []
        records: list[ToolCallRecord] = []
        terminal: CallOutcome | None = None
        for call in calls:
            if call.id in done:
                blocks.append(done[call.id])
                continue
            outcome = by_id[call.id]
            result = outcome.result
            if result is None:  # pragma: no cover - only a paused turn leaves calls unrun, handled above
                raise RunError("state", f"tool call {call.id} did not run")
            blocks.append(
                ToolResultBlock(
                    call.id, call.name, result.to_json(), result.is_error, media=parts_to_json(result.content)
                )
            )
            records.append(record_of(call, result, progress.session_turn - 1))
            if self.deferred is not None and self.deferred.reveal(call.name, result):
                self.tools = self._faced(self.deferred.visible())
            tool = self.offered.get(call.name)
            if terminal is None and tool is not None and ends_run(tool, result):
                terminal = outcome
        message = Message("user", list(blocks))
        if terminal is None and progress.turns_used >= self.max_turns:
            message.content.append(TextBlock(SUMMARY_REQUEST.format(turns=self.max_turns)))
        progress.messages.append(message)
        progress.open_turn = False
        self._record(progress, [message], tool_calls=records, status="done" if terminal is not None else None)
        if terminal is not None:
            output = (terminal.result.output if terminal.result else None) or {}
            response = terminal_text(output)
            await self._hook(HookEvent("after_response", self.session_id, self.agent_id, response=response))
            return self._result(progress, response, "terminal", output=output)
        if progress.turns_used >= self.max_turns:
            complete = await self._model_turn(progress, tool_choice="none")
            response = complete.message.text
            await self._hook(HookEvent("after_response", self.session_id, self.agent_id, response=response))
            return self._result(progress, response, "max_turns" if stop_of(complete) == "completed" else "max_tokens")
        return None

    def _result(self, progress: Progress, response: str, stop: StopReason, **extra: Any) -> RunResult:
        if self.node is not None and self.node.output is not UNSET:
            extra["output"] = self.node.output  # set_output: the last valid value is the run's output
        return RunResult(
            response=response,
            new_messages=progress.messages[progress.new_from :],
            usage=progress.usage,
            session_id=self.session_id,
            stop_reason=stop,
            turns=progress.turns_used,
            **extra,
        )

    async def _hook(self, event: HookEvent) -> None:
        await self.rig.hooks.run(event)
        await self.hooks.run(event)

    # ------------------------------------------------------------------------------ subagents (issue 14)

    def _init_lineage(self) -> None:
        """The run's agent id (``RunOptions.agent_id``, else the Rig's) and its place in the hub of runs.

        A child's ``lineage`` and narrowed profile are set by the hub before the child starts
        (``toolrig.agent.subagents.hub``); a root run has neither.
        """
        from toolrig.agent.subagents.hub import SubagentHub

        self.agent_id: str | None = self.options.agent_id if self.options.agent_id is not None else self.rig.agent
        # Whose permissions the run's calls are judged by: a child's come with it (never looked up by its id).
        self.view: AgentView = self.lineage.view if self.lineage is not None else self.rig.agent_view(self.agent_id)
        # The runs of one tree share a hub (their lineage, budgets, results); a root run makes its own.
        self.hub: SubagentHub = self.lineage.parent.run.hub if self.lineage is not None else SubagentHub(self.rig)
        if self.lineage is not None:
            self.system += child_instructions(self.lineage.kind)

    def _delegation_section(self) -> str:
        """The agent types this run may spawn, when it is offered a tool that spawns."""
        if not any(name in self.offered for name in ("spawn_agents", "Agent", "Task")):
            return ""
        return agent_types_section(self.hub, self.lineage.kind if self.lineage is not None else None)

    def _resume_children(
        self, state: RunState, decisions: Mapping[str, ApprovalDecision | Verdict]
    ) -> Mapping[str, ApprovalDecision | Verdict]:
        """Resuming: the paused spawns continue their children with the same decisions.

        A spawning call passed the gate before it paused, so its replay is allowed; its children's calls are
        decided by the person's decisions like the run's own.
        """
        self.resumed_children = state.children
        self.resume_decisions = decisions
        spawns = state.children.get("spawns", {}) if state.children else {}
        return {**decisions, **dict.fromkeys(spawns, "allow_once")} if spawns else decisions

    def spend(self, usage: Usage) -> None:
        """Tokens used outside the run's own turns (sampling for a tool or an MCP server), on its budget.

        They are priced, added to the run's usage (so ``max_budget_usd`` covers them) and shown as a usage event.
        """
        priced = usage.priced(self.price)
        if self.progress is not None:
            self.progress.usage.add(priced)
        if self.node is not None and self.node.ledger is not None:
            self.node.ledger.charge(priced.cost_usd)  # the tree's one budget sees it too (toolrig.agent.budget)
        self.sink.emit(priced.event())

    def over_budget(self) -> bool:
        """Whether this run, or a run above it, has spent its budget (``max_budget_usd``) already."""
        if self.node is not None and self.node.ledger is not None:
            return self.node.ledger.exhausted()
        return self.budget is not None and self.spent().cost_usd >= self.budget

    def spent(self) -> Usage:
        """What the run has spent so far (a child cut short still reports its usage)."""
        return self.progress.usage if self.progress is not None else Usage()
