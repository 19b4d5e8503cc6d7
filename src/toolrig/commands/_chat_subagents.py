"""The chat's live lines for subagents: one line per child under the parent's tool call.

Kept apart from ``_chat_ui.py`` on purpose: the screen hands every event here first, and a child's own
tool events (tagged with its ``task_id``) only update its line instead of drawing spinners of their own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.text import Text

from toolrig.events import Event


@dataclass
class _Line:
    agent_type: str
    status: str = "running"
    tool_calls: int = 0
    last_tool: str | None = None
    started: float = field(default_factory=time.monotonic)
    elapsed_ms: float | None = None

    def text(self) -> Text:
        elapsed = self.elapsed_ms if self.elapsed_ms is not None else (time.monotonic() - self.started) * 1000
        last = f" · {self.last_tool}" if self.last_tool and self.status == "running" else ""
        style = {"done": "green", "running": "cyan"}.get(self.status, "red")
        return Text.assemble(
            ("  ↳ ", "dim"),
            (self.agent_type, "bold"),
            (f" {self.status}", style),
            (f" · {self.tool_calls} tool{'s' if self.tool_calls != 1 else ''} · {elapsed / 1000:.1f}s{last}", "dim"),
        )


class SubagentLines:
    def __init__(self) -> None:
        self.lines: dict[str, _Line] = {}

    @property
    def active(self) -> bool:
        return any(line.status == "running" for line in self.lines.values())

    def renderables(self) -> list[Text]:
        return [line.text() for line in self.lines.values() if line.status == "running"]

    def handle(self, event: Event) -> Text | bool:
        """True when the event was a subagent's (the screen redraws); a Text to print for good when one ends."""
        task_id = getattr(event, "task_id", None)
        if event.type == "subagent_start":
            self.lines[event.task_id] = _Line(event.agent_type)
            return True
        if event.type == "subagent_progress":
            line = self.lines.get(event.task_id)
            if line is not None:
                line.tool_calls, line.last_tool = event.tool_calls, event.last_tool
            return True
        if event.type == "subagent_done":
            line = self.lines.pop(event.task_id, None)
            if line is None:
                return True
            line.status = event.status
            line.tool_calls = int(event.usage.get("tool_calls", line.tool_calls))
            line.elapsed_ms = float(event.usage.get("duration_ms", 0.0))
            return line.text()
        if task_id is not None:  # a child's tool call, result or text: counted on its line, not drawn
            line = self.lines.get(task_id)
            if line is not None and event.type == "tool_call":
                line.tool_calls += 1
                line.last_tool = event.name
            return True
        return False
