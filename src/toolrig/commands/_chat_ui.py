"""The chat's screen: rendered only from events, with rich.

Streaming text is printed as it arrives; thinking is dimmed; each tool call gets a spinner line while it
runs and a permanent line with a short result preview when it ends. Events arrive on the event-loop
thread; rich's console serialises output, and the spinners stop before any question is asked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from toolrig.commands._agent_common import short_args
from toolrig.commands._chat_subagents import SubagentLines
from toolrig.events import Event

if TYPE_CHECKING:
    from toolrig.agent.usage import Usage
    from toolrig.registry import AnyTool


def tool_rows(tools: Iterable[AnyTool], width: int) -> list[Text]:
    """``/tools``: one line per tool, as ``toolrig tools list`` shows it (name as a person reads it, summary).

    A description is the model's text, often several lines or paragraphs: printed whole, it spilled over the
    list; the summary says how much more there is, as the list command does.
    """
    from toolrig.adapters.plain import summary

    listed = list(tools)
    names = [t.display_name or t.name for t in listed]
    column = max(20, *(len(n) for n in names)) if names else 20
    room = max(20, width - column - 2)
    return [
        Text.assemble((f"{name:<{column}}", "cyan"), f" {summary(t.description, room)}")
        for name, t in zip(names, listed, strict=True)
    ]


class ChatScreen:
    def __init__(self, console: Console) -> None:
        self.console = console
        self._lock = threading.RLock()
        self._running: dict[str, Spinner] = {}
        self._labels: dict[str, str] = {}
        self._live: Live | None = None
        self._column = 0  # characters on the current streamed line (0 = at a line start)
        self._in_thinking = False
        self.turn_usage: list[Usage] = []
        self.subagents = SubagentLines()  # live lines per child (issue 14), drawn with the spinners
        self.followups: list[str] = []  # the last answer's suggestions: typing a number sends one

    # ------------------------------------------------------------------------------ events

    def on_event(self, event: Event) -> None:
        with self._lock:
            child = self.subagents.handle(event)
            if child is not False:
                if isinstance(child, Text):
                    self.console.print(child)
                self._refresh()
                return
            if event.type == "stream_text":
                self._text(event.text, "")
            elif event.type == "thinking":
                if event.state == "start":
                    self._newline()
                    self._in_thinking = True
                    self._text("thinking… ", "dim italic")
                else:
                    self._in_thinking = False
                    self._newline()
            elif event.type == "thinking_delta":
                self._text(event.text, "dim")
            elif event.type == "tool_call":
                self._newline()
                call = f"{event.name}({short_args(event.args, 70)})"
                self._labels[event.id] = call
                self._running[event.id] = Spinner("dots", Text(call, "cyan"))
                self._refresh()
            elif event.type == "tool_result":
                self._running.pop(event.id, None)
                self._refresh()
                mark, style = ("✗", "red") if event.is_error else ("✓", "green")
                preview = event.preview.replace("\n", " ")
                call = self._labels.pop(event.id, event.name)
                self.console.print(Text.assemble((f"{mark} {call}", style), ("  → ", "dim"), (preview, "dim")))
            elif event.type == "approval_request":
                self.stop_spinners()
            elif event.type == "todos":
                self._todos(event.todos)
            elif event.type == "followups":
                self.followups = list(event.followups)
            elif event.type == "done":
                self.stop_spinners()
                self._newline()
                if event.stop_reason == "aborted":
                    self.console.print(Text("(cancelled)", "yellow"))
                elif event.stop_reason == "max_turns":
                    self.console.print(Text("(turn limit reached: the answer above is a summary)", "yellow"))
            elif event.type == "error":
                self.stop_spinners()
                self._newline()
                self.console.print(Text(f"error ({event.kind}): {event.message}", "bold red"))

    # ------------------------------------------------------------------------------ people in the loop

    def _todos(self, todos: list[dict[str, str]]) -> None:
        """The model's todo list, printed again each time it changes (one line per task)."""
        self._newline()
        marks = {"completed": ("✓", "green"), "in_progress": ("▸", "bold yellow"), "cancelled": ("✗", "dim")}
        done = sum(t.get("status") == "completed" for t in todos)
        lines = [Text(f"todos ({done}/{len(todos)})", "bold")]
        for todo in todos:
            mark, style = marks.get(todo.get("status", ""), ("○", ""))
            lines.append(Text.assemble(("  " + mark + " ", style), (str(todo.get("task", "")), style)))
        self.console.print(Group(*lines))

    def show_followups(self) -> None:
        """After the answer: the suggestions as a numbered list (typing the number sends it)."""
        if not self.followups:
            return
        self._newline()
        self.console.print(Text("next:", "bold"))
        for number, text in enumerate(self.followups, start=1):
            self.console.print(Text.assemble((f"  {number}. ", "cyan"), text))

    def _text(self, text: str, style: str) -> None:
        if not text:
            return
        self.console.print(Text(text, style), end="", soft_wrap=True)
        last = text.rsplit("\n", 1)[-1]
        self._column = len(last) if "\n" in text else self._column + len(text)

    def _newline(self) -> None:
        if self._column:
            self.console.print()
            self._column = 0

    # ------------------------------------------------------------------------------ spinners

    def _refresh(self) -> None:
        if not self._running and not self.subagents.active:
            self.stop_spinners()
            return
        group = Group(*self._running.values(), *self.subagents.renderables())
        if self._live is None:
            self._live = Live(group, console=self.console, refresh_per_second=12, transient=True)
            self._live.start()
        else:
            self._live.update(group)

    def stop_spinners(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None

    def finish_turn(self) -> None:
        with self._lock:
            self._running.clear()
            self.stop_spinners()
            self._newline()
