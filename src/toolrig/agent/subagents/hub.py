"""The runs of one Rig and their children: spawning, waiting, cancelling, results, lineage.

A child is the same agent loop as its parent, on the same Rig, under its own agent id whose profile is the
intersection of its type and its parent (``narrowing.py``); its calls go through the one gate like any
other, audited with the child's agent id and task id. Ids are lineage: a root run's task id is its session
id, and a child's is its parent's task id plus ``.N`` (``20261124-010203-abc123.2.1``), so an audit row's
session column names the task and, by its prefix, every ancestor.

A root run makes the hub its tree shares (children reach it through their lineage) and passes it in its
calls' scope; the tools reach it only through ``ToolContext.subagents``, never by importing the runtime.
Nothing of a run is kept on the Rig: two root runs on one Rig have two hubs.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.agent.budget import Ledger
from toolrig.agent.errors import RunError
from toolrig.agent.subagents.loading import load_agent_types
from toolrig.agent.subagents.narrowing import child_profile, min_or_none
from toolrig.agent.subagents.nodes import ENDED, PREVIEW_CHARS, SUMMARY_CHARS, Child, HubRun
from toolrig.agent.subagents.nodes import STATUSES as STATUSES  # re-exported, as the names below
from toolrig.agent.subagents.nodes import UNSET as UNSET
from toolrig.agent.subagents.nodes import Lineage as Lineage  # re-exported: defined here before nodes.py
from toolrig.agent.subagents.nodes import RunNode as RunNode
from toolrig.agent.subagents.routing import pause_for_children, root_channel
from toolrig.agent.subagents.types import AgentType, AgentTypes
from toolrig.agent.usage import Usage
from toolrig.errors import ErrorType, ToolError
from toolrig.events import (
    ApprovalRequestEvent,
    ApprovalResolvedEvent,
    ChunkEvent,
    Event,
    SubagentDoneEvent,
    SubagentProgressEvent,
    SubagentStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from toolrig.permissions import AgentView

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from toolrig.agent.state import RunResult, RunState
    from toolrig.rig import Rig

log = logging.getLogger("toolrig.agent")


class SubagentHub:
    """``ToolContext.subagents`` for the runs of one tree: a root run and its descendants."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.nodes: dict[str, RunNode] = {}
        self._types: AgentTypes | None = None
        self.children_started: dict[str, int] = {}  # per root task id
        self.shared_memory: dict[str, str | None] = {}  # a child's agent id -> whose memory it uses

    # ------------------------------------------------------------------ types

    @property
    def types(self) -> AgentTypes:
        if self._types is None:
            self._types = load_agent_types(self.rig.workspace.root, self.rig.loaded)
        return self._types

    def agent_types(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "description": t.description, "source": t.source} for t in self.types.types.values()]

    # ------------------------------------------------------------------ runs entering and leaving

    def enter(self, run: HubRun, lineage: Lineage | None, usage: Usage, background: TaskGroup | None) -> RunNode:
        if lineage is None:
            node = RunNode(run, run.session_id, run.agent_id, 0, usage=usage, background=background)
        else:
            parent, child, kind = lineage.parent, lineage.child, lineage.kind
            node = RunNode(
                run,
                child.task_id,
                child.agent_id,
                parent.depth + 1,
                parent=parent,
                agent_type=kind.name,
                spawns=tuple(kind.profile.spawns),
                output_schema=kind.profile.output_schema,
                usage=usage,
                background=background,
            )
        node.limit = anyio.Semaphore(self.rig.config.subagents.max_parallel)
        # What a resumed run spent before its pause is its starting balance, not charged again to its ancestors
        # (their own saved usage holds it already).
        limit = getattr(run, "budget", None)
        if node.parent is None or node.parent.ledger is None:
            node.ledger = Ledger(limit, spent=usage.cost_usd)
            if usage.calls:
                node.ledger.largest = usage.cost_usd / usage.calls
        else:
            node.ledger = node.parent.ledger.child(limit)
            node.ledger.spent = usage.cost_usd
        resumed = getattr(run, "resumed_children", None)
        if resumed:
            node.counter = int(resumed.get("counter", 0))
            node.resuming = dict(resumed.get("spawns", {}))
            node.decisions = getattr(run, "resume_decisions", {})
        self.nodes[node.task_id] = node
        return node

    def leave(self, node: RunNode) -> None:
        self.nodes.pop(node.task_id, None)
        if node.parent is None:
            self.children_started.pop(node.task_id, None)

    def node(self, session_id: str | None) -> RunNode:
        found = self.nodes.get(session_id or "")
        if found is None:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "Subagents are available only inside an agent run.",
                next_action_hint="Do the work yourself with your other tools.",
            )
        return found

    def memory_owner(self, agent_id: str | None) -> str | None:
        if agent_id is None or not self.shared_memory:
            return agent_id
        return self.shared_memory.get(agent_id, agent_id)

    # ------------------------------------------------------------------ set_output

    def set_output(self, session_id: str | None, value: Any) -> None:
        node = self.node(session_id)
        if node.output_schema is not None:
            problem = schema_problem(node.output_schema, value)
            if problem is not None:
                raise ToolError(
                    ErrorType.INVALID_INPUT,
                    f"The output does not match this agent's output schema: {problem}",
                    next_action_hint="Call set_output again with a value that matches the schema; the last valid "
                    "value is the result.",
                )
        node.output = value

    # ------------------------------------------------------------------ spawning

    async def spawn(
        self, session_id: str | None, requests: list[dict[str, Any]], *, background: bool, call_id: str = ""
    ) -> list[dict[str, Any]]:
        node = self.node(session_id)
        if call_id and call_id in node.resuming:
            return await self._resume_spawn(node, call_id, node.resuming.pop(call_id))
        settings = self.rig.config.subagents
        if node.depth >= settings.max_depth:
            raise ToolError(
                ErrorType.DENIED,
                f"Refused by policy: subagents may nest only {settings.max_depth} deep (subagents.max_depth), "
                "and this run is that deep already.",
                next_action_hint="Do the work yourself with your other tools.",
            )
        kinds = [self._kind_for(node, request) for request in requests]
        root = node.root
        started = self.children_started.get(root.task_id, 0)
        if started + len(requests) > settings.max_children:
            raise ToolError(
                ErrorType.DENIED,
                f"Refused by policy: this run may start {settings.max_children} subagents in all "
                f"(subagents.max_children); {started} have started.",
            )
        self.children_started[root.task_id] = started + len(requests)
        children = [self._new_child(node, kind, request) for kind, request in zip(kinds, requests, strict=True)]
        if background:
            if node.background is None:  # pragma: no cover - every run enters with its task group
                raise ToolError(ErrorType.UNAVAILABLE, "Background subagents are not available in this run.")
            for child, kind in zip(children, kinds, strict=True):
                child.background = True
                node.background.start_soon(self._run_child, node, child, kind)
            return [
                {"task_id": c.task_id, "agent_id": c.agent_id, "agent_type": c.agent_type, "status": c.status}
                for c in children
            ]
        async with anyio.create_task_group() as group:
            for child, kind in zip(children, kinds, strict=True):
                group.start_soon(self._run_child, node, child, kind)
        return self._collected(node, call_id, children)

    def _collected(self, node: RunNode, call_id: str, children: list[Child]) -> list[dict[str, Any]]:
        """The records in order; if a child paused for approvals, the parent's call pauses with it."""
        if not any(c.paused is not None for c in children):
            return [dict(c.record or {}) for c in children]
        node.paused_spawns[call_id] = {
            "children": [
                {"task_id": c.task_id, "agent_id": c.agent_id, "agent_type": c.agent_type}
                | ({"state": json.loads(c.paused.to_json())} if c.paused is not None else {"record": c.record})
                for c in children
            ]
        }
        pause_for_children(node.run, call_id)
        raise ToolError(ErrorType.DENIED, "Paused: a subagent waits for a person's decision.")

    async def _resume_spawn(self, node: RunNode, call_id: str, saved: dict[str, Any]) -> list[dict[str, Any]]:
        """Finish a spawn that paused: finished children keep their records, paused ones resume."""
        from toolrig.agent.state import RunState

        children: list[Child] = []
        async with anyio.create_task_group() as group:
            for item in saved.get("children", []):
                child = self._saved_child(node, item)
                node.children[child.task_id] = child
                children.append(child)
                if "state" not in item:
                    child.record, child.status = item.get("record") or {}, "done"
                    child.done.set()
                    continue
                kind = self.types.get(child.agent_type)
                if kind is None:
                    raise ToolError(ErrorType.NOT_FOUND, f"The agent type {child.agent_type!r} is gone.")
                state = RunState.from_json(json.dumps(item["state"]))
                group.start_soon(self._run_child, node, child, kind, state)
        return self._collected(node, call_id, children)

    def _saved_child(self, node: RunNode, item: Mapping[str, Any]) -> Child:
        """A child read back from a saved state (input): its ids are labels, checked here, never trusted as keys.

        A saved agent id is kept only if it has the form this hub gives (``<type>-`` and six hex digits) and
        names no configured agent; a task id only if it is this run's own (``<task id>.<n>``). Anything else
        gets a fresh id, as a new child would: a state file must not choose whose memory, tasks or session a
        child works in.
        """
        kind = str(item.get("agent_type") or "")
        agent_id, task_id = str(item.get("agent_id") or ""), str(item.get("task_id") or "")
        if not re.fullmatch(re.escape(kind) + r"-[0-9a-f]{6}", agent_id) or agent_id in self.rig.config.agents:
            agent_id = self._fresh_agent_id(kind)
        suffix = task_id.removeprefix(node.task_id + ".")
        if suffix == task_id or not suffix.isascii() or not suffix.isdigit() or task_id in node.children:
            node.counter += 1
            task_id = f"{node.task_id}.{node.counter}"
        return Child(task_id, agent_id, kind, node.task_id, "")

    def _fresh_agent_id(self, kind: str) -> str:
        agent_id = f"{kind}-{secrets.token_hex(3)}"
        while agent_id in self.rig.config.agents:  # pragma: no cover - 24 random bits
            agent_id = f"{kind}-{secrets.token_hex(3)}"
        return agent_id

    def _kind_for(self, node: RunNode, request: dict[str, Any]) -> AgentType:
        name = str(request.get("agent_type") or "")
        kind = self.types.get(name)
        if kind is None:
            known = ", ".join(self.types.names())
            raise ToolError(
                ErrorType.NOT_FOUND,
                f"No agent type {name[:80]!r}.",
                next_action_hint=f"Use one of: {known}.",
            )
        if node.spawns is not None and name not in node.spawns:
            allowed = ", ".join(node.spawns) or "none"
            raise ToolError(
                ErrorType.DENIED,
                f"Refused by policy: an agent of type {node.agent_type!r} may not spawn {name!r} "
                f"(it may spawn: {allowed}).",
            )
        return kind

    def _new_child(self, node: RunNode, kind: AgentType, request: dict[str, Any]) -> Child:
        node.counter += 1
        task_id = f"{node.task_id}.{node.counter}"
        agent_id = self._fresh_agent_id(kind.name)
        prompt = str(request.get("prompt") or "")
        params = request.get("params")
        if params:
            prompt += "\n\nParameters (JSON):\n" + json.dumps(params, ensure_ascii=False, indent=1)
        child = Child(task_id, agent_id, kind.name, node.task_id, prompt)
        node.children[task_id] = child
        return child

    async def _run_child(self, parent: RunNode, child: Child, kind: AgentType, resume: RunState | None = None) -> None:
        root_emit = parent.run.sink.emit
        result: RunResult | None = None
        error: str | None = None
        usage = Usage()
        try:
            async with parent.limit:
                with anyio.CancelScope() as scope:
                    child.scope = scope
                    if child.cancel_requested:
                        scope.cancel()
                    child.status = "running"
                    root_emit(
                        SubagentStartEvent(
                            child.agent_id,
                            child.task_id,
                            child.agent_type,
                            child.parent_task_id,
                            child.prompt[:PREVIEW_CHARS],
                        )
                    )
                    run = self._child_run(parent, child, kind)
                    async with anyio.create_task_group() as ticker:
                        ticker.start_soon(self._tick, child, root_emit)
                        try:
                            if resume is None:
                                result = await run.start(child.prompt)
                            else:  # the child's session is its task id, whatever the saved state says
                                resume = replace(resume, session_id=child.task_id)
                                result = await run.resume(resume, parent.decisions)
                        except RunError as exc:
                            usage = run.spent()
                            child.status = "timed_out" if exc.kind == "timeout" else "failed"
                            error = exc.message
                        else:
                            usage = result.usage
                            child.status = "done"
                            if result.stop_reason == "paused" and result.state is not None:
                                child.status, child.paused = "paused", result.state
                        finally:
                            ticker.cancel_scope.cancel()
                if scope.cancelled_caught:
                    child.status = "cancelled"
                    error = "cancelled"
                    usage = run.spent()
        except anyio.get_cancelled_exc_class():
            child.status = "cancelled"
            error = "the parent run was cancelled"
            raise
        finally:
            self.shared_memory.pop(child.agent_id, None)
            if result is None and child.status not in ENDED:
                child.status = "failed"
            record = self._record(parent, child, kind, result, usage, error)
            child.record = record
            if parent.usage is not None:
                parent.usage.add(usage)  # the parent's budget covers what its children spend
            root_emit(SubagentDoneEvent(child.task_id, child.status, dict(record["usage"]), error))
            child.done.set()

    def _child_run(self, parent: RunNode, child: Child, kind: AgentType) -> Any:
        from toolrig.agent.state import RunOptions

        prun = parent.run
        settings = self.rig.config.subagents
        own = kind.profile
        parent_view: AgentView = prun.view
        warnings: list[str] = []
        profile = child_profile(
            parent_view.profile,
            self.rig.governance.policy.mode(parent_view),
            prun.offered,
            own,
            lambda tool: self.rig.tool_settings(tool, parent_view),
            type_name=kind.name,
            warnings=warnings,
        )
        for warning in warnings:
            if warning not in self.rig.loaded.warnings:  # once per type and setting, not once per child
                self.rig.loaded.warnings.append(warning)
                log.warning("%s", warning)
        same_model = own.model is None or own.model == prun.provider.settings.model
        options = RunOptions(
            model=None if same_model else own.model,
            provider=prun.provider if same_model else None,
            system_prompt=own.system_prompt,
            max_turns=min(own.max_turns or settings.max_turns, settings.max_turns),
            timeout=min_or_none(own.timeout_seconds, settings.timeout_seconds),
            max_budget_usd=own.max_budget_usd,  # the parent's limit holds it too, live (its ledger)
            approvals=root_channel(parent, child),
            persist=prun.options.persist,
            hooks=prun.options.hooks,
            agent_id=child.agent_id,
            durable=prun.options.durable,  # a durable run's children reach its task, as its own calls do
        )
        if own.shared_memory:
            self.shared_memory[child.agent_id] = self.memory_owner(prun.agent_id)
        view = parent_view.child(child.agent_id, profile)  # handed to the child's run: nothing is registered
        # The same loop as its parent's run (its class: the hub never imports the loop above it).
        make: Any = type(prun)  # the run's class, whatever it is (a protocol here)
        return make(self.rig, options, self._forwarder(parent, child), Lineage(parent, child, kind, view))

    def _forwarder(self, parent: RunNode, child: Child) -> Any:
        """The child's event sink: its tool events and text, tagged with its task id, go up to the parent."""
        emit = parent.run.sink.emit
        hide_text = self.rig.config.subagents.hide_child_text

        def forward(event: Event) -> None:
            if isinstance(event, ToolCallEvent) and event.task_id is None:
                child.tool_calls += 1
                child.last_tool = event.name
                emit(replace(event, task_id=child.task_id))
            elif isinstance(event, ToolResultEvent) and event.task_id is None:
                emit(replace(event, task_id=child.task_id))
            elif isinstance(event, ChunkEvent) and event.task_id is None:
                if not hide_text:
                    emit(replace(event, task_id=child.task_id))
            elif isinstance(event, _PASSED_UP) or getattr(event, "task_id", None) is not None:
                emit(event)  # a grandchild's, already tagged; approvals the root's front end must show

        return forward

    async def _tick(self, child: Child, emit: Any) -> None:
        period = self.rig.config.subagents.progress_seconds
        while True:
            await anyio.sleep(period)
            emit(SubagentProgressEvent(child.task_id, child.tool_calls, round(child.elapsed_ms(), 1), child.last_tool))

    def _record(
        self,
        parent: RunNode,
        child: Child,
        kind: AgentType,
        result: RunResult | None,
        usage: Usage,
        error: str | None,
    ) -> dict[str, Any]:
        """The result record, exactly: task_id, agent_type, status, output, summary, usage, error?"""
        response = result.response if result is not None else ""
        output: Any = None
        node_output = result.output if result is not None else None
        mode = kind.profile.output_mode
        if result is not None:
            if mode == "structured":
                output = node_output
                if output is None and child.status == "done":
                    child.status = "failed"
                    error = "the agent ended without a valid set_output value (its type's output is structured)"
            elif mode == "all_messages":
                from toolrig.agent.messages import messages_to_json

                output = messages_to_json(result.new_messages)
            else:
                output = node_output if node_output is not None else response
        summary = response.strip()[:SUMMARY_CHARS] if response else (error or "")
        record: dict[str, Any] = {
            "task_id": child.task_id,
            "agent_type": child.agent_type,
            "status": child.status,
            "output": output,
            "summary": summary,
            "usage": {
                "input": usage.input,
                "output": usage.output,
                "cost_usd": round(usage.cost_usd, 6),
                "tool_calls": child.tool_calls,
                "duration_ms": round(child.elapsed_ms(), 1),
            },
        }
        if error is not None:
            record["error"] = error
        return record

    # ------------------------------------------------------------------ list, wait, cancel

    def children(self, session_id: str | None, status: str | None = None) -> list[dict[str, Any]]:
        node = self.node(session_id)
        return [c.row() for c in node.children.values() if status is None or c.status == status]

    def owns(self, session_id: str | None, task_id: str) -> bool:
        node = self.nodes.get(session_id or "")
        return node is not None and task_id in node.children

    async def wait(
        self, session_id: str | None, task_ids: list[str], *, within: float, mode: str
    ) -> tuple[list[dict[str, Any]], list[str]]:
        node = self.node(session_id)
        wanted = [node.children[t] for t in task_ids] if task_ids else list(node.children.values())
        if not wanted:
            return [], []

        def satisfied() -> bool:
            ended = [c for c in wanted if c.done.is_set()]
            return len(ended) == len(wanted) if mode == "all" else bool(ended)

        with anyio.move_on_after(within):
            while not satisfied():
                async with anyio.create_task_group() as group:
                    for c in wanted:
                        if not c.done.is_set():
                            group.start_soon(_first_of, c.done, group)
        ended = [dict(c.record or {}) for c in wanted if c.done.is_set()]
        pending = [c.task_id for c in wanted if not c.done.is_set()]
        return ended, pending

    def cancel(self, session_id: str | None, task_id: str) -> dict[str, Any]:
        node = self.node(session_id)
        child = node.children.get(task_id)
        if child is None:
            raise ToolError(ErrorType.NOT_FOUND, f"No subagent task {task_id[:120]!r} of this run.")
        if child.status not in ENDED:
            child.cancel_requested = True
            if child.scope is not None:
                child.scope.cancel()
        return {"task_id": task_id, "status": "cancelled" if child.status not in ENDED else child.status}


_PASSED_UP = (ApprovalRequestEvent, ApprovalResolvedEvent, SubagentStartEvent, SubagentProgressEvent, SubagentDoneEvent)


async def _first_of(event: anyio.Event, group: TaskGroup) -> None:
    await event.wait()
    group.cancel_scope.cancel()


def schema_problem(schema: dict[str, Any], value: Any) -> str | None:
    """The first way ``value`` breaks ``schema`` (a JSON Schema), as a sentence; None when it fits."""
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    try:
        cls = validators.validator_for(schema)
        cls.check_schema(schema)
        error = next(iter(sorted(cls(schema).iter_errors(value), key=lambda e: list(e.path))), None)
    except SchemaError as exc:
        return f"the agent type's output schema is itself invalid ({exc.message[:200]})"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.path) or "(the value)"
    return f"at {where}: {error.message[:300]}"
