"""Delegation tools: spawn subagents, list and cancel them, and hand back a structured result.

Trust model: prompts, types and outputs are the model's. These tools only ask the agent runtime through
``ToolContext.subagents``; the runtime decides what a child may do (never more than its parent), how deep
children nest and how many run, and every call a child makes goes through the one gate. The tools count as
read-only: spawning changes nothing by itself, and each of a child's own calls is judged (and asked) alone.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from toolrig.context import SubagentAccess, ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError

MAX_BATCH = 32
# The children's own timeouts bound a spawn: the per-call default (limits.timeout_seconds) must not cut it.
SPAWN_TIMEOUT_SECONDS = 24 * 3600.0


def access(ctx: ToolContext) -> SubagentAccess:
    if ctx.subagents is None:
        raise ToolError(
            ErrorType.UNAVAILABLE,
            "Subagents are available only inside an agent run.",
            next_action_hint="Do the work yourself with your other tools.",
        )
    return ctx.subagents


class AgentRequest(ToolInput):
    agent_type: str = Field(min_length=1, max_length=64, description="The agent type to run (see your instructions).")
    prompt: str = Field(
        min_length=1, max_length=100_000, description="The whole task: the child sees nothing of your conversation."
    )
    params: dict[str, Any] | None = Field(default=None, description="Optional JSON parameters given to the child.")


class SpawnAgentsInput(ToolInput):
    agents: list[AgentRequest] = Field(
        min_length=1, max_length=MAX_BATCH, description="The children to start; they run in parallel."
    )
    background: bool = Field(
        default=False,
        description="false: wait and get one result per child, in order. true: get task ids now; use wait_task.",
    )


class SpawnAgentsOutput(ToolOutput):
    results: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Per child: task_id, agent_type, status, output, summary, usage, error (foreground).",
    )
    tasks: list[dict[str, Any]] = Field(default_factory=list, description="Per child: task_id, status (background).")


class SpawnAgents(Tool[SpawnAgentsInput, SpawnAgentsOutput]):
    name = "spawn_agents"
    group = "agents"
    read_only = True
    timeout_seconds = SPAWN_TIMEOUT_SECONDS
    description = (
        "Delegate tasks to subagents that run in parallel, each with a fresh context and at most your permissions. "
        "Give each child a complete prompt. By default waits and returns one result per child in order "
        "(status, output, summary, usage); background: true returns task ids at once (then wait_task, "
        "subagent_list, cancel_task)."
    )

    async def execute(self, input: SpawnAgentsInput, ctx: ToolContext) -> SpawnAgentsOutput:
        requests = [r.model_dump(exclude_none=True) for r in input.agents]
        found = await access(ctx).spawn(ctx.session_id, requests, background=input.background, call_id=ctx.call_id)
        if input.background:
            return SpawnAgentsOutput(tasks=found)
        return SpawnAgentsOutput(results=found)


class ClaudeTaskInput(ToolInput):
    description: str = Field(min_length=1, max_length=200, description="A short (3-5 word) description of the task.")
    prompt: str = Field(min_length=1, max_length=100_000, description="The task for the agent to perform.")
    subagent_type: str = Field(default="general", max_length=64, description="The type of agent to use.")


class ClaudeTaskOutput(ToolOutput):
    result: dict[str, Any] = Field(description="task_id, agent_type, status, output, summary, usage, error.")


class _ClaudeStyle(Tool[ClaudeTaskInput, ClaudeTaskOutput]):
    """Claude's ``Agent``/``Task`` call shape, on the same machinery as spawn_agents (one child, foreground)."""

    group = "agents"
    read_only = True
    timeout_seconds = SPAWN_TIMEOUT_SECONDS
    description = (
        "Launch a subagent to handle a task on its own, with a fresh context and at most your permissions; "
        "returns its result (status, output, summary, usage). subagent_type picks the agent type."
    )

    async def execute(self, input: ClaudeTaskInput, ctx: ToolContext) -> ClaudeTaskOutput:
        request = {"agent_type": input.subagent_type or "general", "prompt": input.prompt}
        [record] = await access(ctx).spawn(ctx.session_id, [request], background=False, call_id=ctx.call_id)
        return ClaudeTaskOutput(result=record)


class AgentAlias(_ClaudeStyle):
    name = "Agent"


class TaskAlias(_ClaudeStyle):
    name = "Task"


class SubagentListInput(ToolInput):
    status: Literal["started", "running", "done", "failed", "cancelled", "timed_out"] | None = Field(
        default=None, description="Only children with this status."
    )


class SubagentListOutput(ToolOutput):
    subagents: list[dict[str, Any]] = Field(
        description="Per child: task_id, agent_id, agent_type, status, tool_calls, elapsed_ms, prompt_preview."
    )


class SubagentList(Tool[SubagentListInput, SubagentListOutput]):
    name = "subagent_list"
    group = "agents"
    read_only = True
    description = "List the subagents this run started: status, tool-call count, elapsed time, a preview of the prompt."

    def execute(self, input: SubagentListInput, ctx: ToolContext) -> SubagentListOutput:
        return SubagentListOutput(subagents=access(ctx).children(ctx.session_id, input.status))


class CancelTaskInput(ToolInput):
    task_id: str = Field(min_length=1, max_length=400, description="A subagent task id from spawn_agents.")


class CancelTaskOutput(ToolOutput):
    task_id: str
    status: str


class CancelTask(Tool[CancelTaskInput, CancelTaskOutput]):
    name = "cancel_task"
    group = "agents"
    # It stops only work this run started, every call of which went through the gate: asking a person before
    # a run may stop its own child would only keep a runaway child running.
    read_only = True
    description = "Stop a subagent this run started (and everything it runs); its result says cancelled."

    def execute(self, input: CancelTaskInput, ctx: ToolContext) -> CancelTaskOutput:
        found = access(ctx).cancel(ctx.session_id, input.task_id)
        return CancelTaskOutput(task_id=found["task_id"], status=found["status"])


class SetOutputInput(ToolInput):
    output: Any = Field(description="Your result: any JSON value; it must match your output schema if you have one.")


class SetOutputOutput(ToolOutput):
    accepted: bool = True


class SetOutput(Tool[SetOutputInput, SetOutputOutput]):
    name = "set_output"
    group = "agents"
    read_only = True
    description = (
        "Set this run's result to a JSON value (checked against your output schema, if any). Call it again to "
        "replace it; the last valid value counts. Then give your short final answer."
    )

    def execute(self, input: SetOutputInput, ctx: ToolContext) -> SetOutputOutput:
        access(ctx).set_output(ctx.session_id, input.output)
        return SetOutputOutput()


TOOLS = [SpawnAgents(), SubagentList(), CancelTask(), SetOutput(), AgentAlias(), TaskAlias()]
