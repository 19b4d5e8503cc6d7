"""What goes into a run and what comes out: options, the result, and a paused run's saved state.

``RunState`` is plain JSON (never pickle): a run paused for approvals is written out, a person decides,
and the run resumes from it in another process, possibly days later.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from toolrig.agent.errors import RunError
from toolrig.agent.messages import Message, messages_from_json, messages_to_json
from toolrig.agent.usage import Usage
from toolrig.approvals import ApprovalChannel
from toolrig.hooks import Hooks

if TYPE_CHECKING:
    import anyio

    from toolrig.agent.providers.base import Effort, Provider, Thinking, TurnComplete
    from toolrig.durable.api import Durable
    from toolrig.result import ToolResult
    from toolrig.sandbox.background import BackgroundJobs


class Steps(Protocol):
    """Wraps each model turn and tool call of a run so a durable engine can record and replay them.

    ``key`` is stable across a replay of the same run (``turn-N``, ``tool-<call id>``): a recorded step
    returns its recorded outcome instead of running again.
    """

    async def model_turn(self, key: str, run: Callable[[], Awaitable[TurnComplete]]) -> TurnComplete: ...

    async def tool_call(self, key: str, run: Callable[[], Awaitable[ToolResult]]) -> ToolResult: ...


# "max_tokens": the model's last answer was cut off by the token limit (llm.max_tokens); it is not complete.
StopReason = Literal["completed", "terminal", "max_turns", "max_tokens", "paused", "aborted"]
STATE_VERSION = 1


@dataclass
class RunOptions:
    """How one run goes; anything left None comes from the ``agent:`` section of the config.

    ``abort`` is an ``anyio.Event``: setting it stops the run where it is (the chat's Ctrl-C) and the run
    returns with ``stop_reason="aborted"``. ``approvals`` is the channel that answers this run's approval
    requests, or ``"pause"`` to stop the run at the first request and return a ``RunState`` to resume.
    ``tools_allow`` / ``tools_deny`` narrow the Rig's tools for this run (globs or ``group:NAME``).
    """

    model: str | None = None
    system_prompt: str | None = None
    max_turns: int | None = None
    timeout: float | None = None
    abort: anyio.Event | None = None
    tools_allow: Sequence[str] = ()
    tools_deny: Sequence[str] = ()
    hooks: Sequence[Hooks] = ()
    thinking: Thinking | None = None
    effort: Effort | None = None
    session_id: str | None = None  # resume this session
    continue_latest: bool = False  # resume the workspace's most recent session
    max_budget_usd: float | None = None
    approvals: ApprovalChannel | Literal["pause"] | None = None
    persist: bool = True  # record the session in .toolrig/sessions.db
    provider: Provider | None = None  # an already built provider (tests, programs that share one)
    steps: Steps | None = None  # a durable run's step journal (toolrig.workers.journal)
    durable: Durable | None = None  # a durable run's own task (its calls' ToolContext.durable); None: the Rig's
    # The run's agent id (default: the Rig's agent): the key of its memory (agents/<id>/) and kv namespace,
    # and the agent its audit rows and hooks name. A configured profile of that name also applies.
    agent_id: str | None = None
    # ask_user's questions (approvals owns this field): "ask" them wherever approvals go; "pause" the run
    # with them in its RunState (`toolrig run` without a terminal); "skip" them (a scheduled task).
    questions: Literal["ask", "pause", "skip"] = "ask"
    profile: str | None = None  # the tool profile the model sees; default the agent's, then llm.tool_profile
    # Who owns the run's background commands (run_command background: true): a caller whose session outlives one
    # run (chat) passes its own; default the run's, and they stop when the run ends.
    background: BackgroundJobs | None = None


@dataclass
class PendingCall:
    """A tool call of the paused turn that has not run yet, with the approval it waits for (if any)."""

    call_id: str
    tool: str
    arguments: str
    reason: str = ""
    subjects: list[str] = field(default_factory=list)
    needs_approval: bool = True
    task_id: str | None = None  # set when the call is a subagent's (its task id); decide it like any other
    # ask_user: the questions this call waits to have answered (resume with `answers={call_id: [...]}`)
    questions: list[dict[str, Any]] = field(default_factory=list)
    # The approval request's fingerprint (tool and exact arguments): a decision given for this call id holds
    # for this call only, never for a later call that reuses the id.
    fingerprint: str = ""


@dataclass
class RunState:
    """A paused run: the whole history, the turn's finished results, and the calls still waiting."""

    session_id: str
    provider: str
    model: str
    system_prompt: str | None
    turns_used: int
    max_turns: int
    messages: list[Message]
    new_from: int  # index in ``messages`` where this run's own messages start
    pending: list[PendingCall]
    results: dict[str, dict[str, Any]]  # call id -> {"content": ..., "is_error": ...}
    usage: Usage = field(default_factory=Usage)
    version: int = STATE_VERSION
    # Subagents paused with the run: {"counter": N, "spawns": {spawn call id: {"children": [...]}}}, each child
    # either its finished result record or its own paused RunState (as JSON data), resumed with the run.
    children: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = {
            "version": self.version,
            "session_id": self.session_id,
            "provider": self.provider,
            "model": self.model,
            "system_prompt": self.system_prompt,
            "turns_used": self.turns_used,
            "max_turns": self.max_turns,
            "messages": messages_to_json(self.messages),
            "new_from": self.new_from,
            "pending": [vars(p) for p in self.pending],
            "results": self.results,
            "usage": self.usage.to_json(),
            "children": self.children,
        }
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        try:
            data = json.loads(text)
            if data.get("version") != STATE_VERSION:
                raise RunError("state", f"run state version {data.get('version')!r} is not {STATE_VERSION}")
            return cls(
                session_id=str(data["session_id"]),
                provider=str(data["provider"]),
                model=str(data["model"]),
                system_prompt=data.get("system_prompt"),
                turns_used=int(data["turns_used"]),
                max_turns=int(data["max_turns"]),
                messages=messages_from_json(data["messages"]),
                new_from=int(data["new_from"]),
                pending=[PendingCall(**p) for p in data["pending"]],
                results={str(k): dict(v) for k, v in data["results"].items()},
                usage=Usage.from_json(data.get("usage", {})),
                children=dict(data.get("children") or {}),
            )
        except RunError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RunError("state", f"the saved run state is unreadable: {exc}") from None


@dataclass
class RunResult:
    """The outcome of a run; ``state`` is set when the run paused.

    ``output`` is the last valid ``set_output`` value (any JSON), else a terminal tool's output, else None.
    ``usage`` includes what the run's subagents spent.
    """

    response: str
    new_messages: list[Message]
    usage: Usage
    session_id: str
    stop_reason: StopReason = "completed"
    turns: int = 0
    output: Any = None
    state: RunState | None = None
