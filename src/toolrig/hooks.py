"""Lifecycle hooks: code that runs before and after prompts, responses and tool calls.

Python hooks subclass ``Hooks`` and override the points they care about. A hook that fails is logged
and never aborts the run, with one deliberate exception: ``before_tool`` may refuse a call by raising
``ToolError`` (its message is what the model sees).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from toolrig.errors import ToolError

if TYPE_CHECKING:
    from toolrig.result import ToolResult

log = logging.getLogger("toolrig.hooks")

HookPoint = Literal["before_prompt", "after_response", "before_tool", "after_tool"]
HOOK_POINTS: tuple[HookPoint, ...] = ("before_prompt", "after_response", "before_tool", "after_tool")


@dataclass(frozen=True, slots=True)
class HookEvent:
    point: HookPoint
    session_id: str | None = None
    agent_id: str | None = None
    message: str | None = None  # before_prompt: the user's prompt
    response: str | None = None  # after_response: the model's final text
    tool: str | None = None
    tool_args: dict[str, Any] | None = None
    tool_result: ToolResult | None = None


class Hooks:
    """Override any point; each runs in registration order. The defaults do nothing."""

    async def before_prompt(self, event: HookEvent) -> None:
        return None

    async def after_response(self, event: HookEvent) -> None:
        return None

    async def before_tool(self, event: HookEvent) -> None:
        """Raise ``ToolError`` (usually ``denied``) to block the call."""
        return None

    async def after_tool(self, event: HookEvent) -> None:
        return None


class HookChain:
    """The hooks of one Rig, run point by point in order, each failure isolated."""

    def __init__(self) -> None:
        self._hooks: list[Hooks] = []
        self.enabled = True

    def add(self, hooks: Hooks) -> Hooks:
        self._hooks.append(hooks)
        return hooks

    def __len__(self) -> int:
        return len(self._hooks)

    async def run(self, event: HookEvent) -> None:
        """Run every hook for ``event.point``; only a ``before_tool`` ToolError escapes (it blocks the call)."""
        if not self.enabled:
            return
        for hooks in list(self._hooks):
            try:
                await getattr(hooks, event.point)(replace(event))
            except ToolError:
                if event.point == "before_tool":
                    raise
                log.warning("%s hook %r raised ToolError outside before_tool; ignored", event.point, hooks)
            except Exception:
                log.exception("%s hook %r failed; the run goes on", event.point, hooks)
