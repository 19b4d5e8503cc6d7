from __future__ import annotations

import io

from rich.console import Console

from toolrig.commands._chat_ui import ChatScreen
from toolrig.events import (
    SubagentDoneEvent,
    SubagentProgressEvent,
    SubagentStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)


def test_a_child_is_one_live_line_and_its_tool_calls_only_count_on_it() -> None:
    out = io.StringIO()
    screen = ChatScreen(Console(file=out, force_terminal=False, width=100))
    screen.on_event(ToolCallEvent("p1", "spawn_agents", {"agents": []}))
    screen.on_event(SubagentStartEvent("general-1", "s.1", "general", "s", "look"))
    screen.on_event(ToolCallEvent("toolu_1", "read_files", {"paths": ["a"]}, task_id="s.1"))
    screen.on_event(ToolResultEvent("toolu_1", "read_files", "{}", False, task_id="s.1"))
    [line] = screen.subagents.renderables()
    assert "general running · 1 tool" in line.plain and "read_files" in line.plain
    screen.on_event(SubagentProgressEvent("s.1", 3, 2500.0, "code_search"))
    assert "3 tools · " in screen.subagents.renderables()[0].plain
    screen.on_event(SubagentDoneEvent("s.1", "done", {"tool_calls": 3, "duration_ms": 2600.0}))
    assert screen.subagents.renderables() == []
    screen.on_event(ToolResultEvent("p1", "spawn_agents", '{"results":[]}', False))
    screen.finish_turn()
    text = out.getvalue()
    assert "↳ general done · 3 tools · 2.6s" in text
    assert "read_files" not in text.split("↳")[0]  # the child's call drew no line of its own
    assert "✓ spawn_agents" in text
