"""What a run looks like in a Telegram chat: its text and tool lines as HTML messages, each within the size limit.

Trust model: everything shown comes from the model or a tool (hostile). It is escaped for Telegram's HTML (the
only markup toolrig writes itself is ``<b>``, ``<i>`` and ``<code>`` around escaped text), so a model's text can
neither inject markup nor break a message; sizes are counted in UTF-16 units, as Telegram counts them.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any

LIMIT = 4_000  # Telegram allows 4,096 UTF-16 units of text a message: room for a cut marker
ARGS_SHOWN = 80


def units(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units: an emoji is two)."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def escape(text: str) -> str:
    return html.escape(text, quote=False)


def code(text: str) -> str:
    return f"<code>{escape(text)}</code>"


def _short(text: str, size: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"


def tool_call(event: dict[str, Any]) -> str:
    """``→ name(args)``, one line, indented under its subagent when a child made the call."""
    args = event.get("args")
    shown = json.dumps(args, ensure_ascii=False, default=str) if isinstance(args, dict) else str(args or "")
    indent = "    " if event.get("task_id") else ""
    return f"{indent}→ {code(str(event.get('name', '?'))[:80] + '(' + _short(shown, ARGS_SHOWN) + ')')}"


def tool_result(event: dict[str, Any]) -> str:
    indent = "    " if event.get("task_id") else ""
    mark = "✗" if event.get("is_error") else "✓"
    preview = _short(str(event.get("preview") or ""), ARGS_SHOWN)
    return f"{indent}{mark} {code(str(event.get('name', '?'))[:80])}" + (f" {escape(preview)}" if preview else "")


def subagent(event: dict[str, Any]) -> str | None:
    kind = event.get("type")
    task = escape(str(event.get("task_id", ""))[:40])
    if kind == "subagent_start":
        what = _short(str(event.get("prompt") or ""), ARGS_SHOWN)
        return f"  ⇢ subagent <b>{escape(str(event.get('agent_type', ''))[:60])}</b> {task}: {escape(what)}"
    if kind == "subagent_done":
        error = event.get("error")
        tail = f": {escape(_short(str(error), ARGS_SHOWN))}" if error else ""
        return f"  ⇠ subagent {task} {escape(str(event.get('status', ''))[:40])}{tail}"
    return None


def todos(items: Iterable[Any]) -> str:
    marks = {"completed": "☑", "in_progress": "▶", "pending": "☐"}
    lines = []
    for item in items:
        if isinstance(item, dict):
            mark = marks.get(str(item.get("status")), "•")
            lines.append(f"{mark} {escape(_short(str(item.get('task') or item.get('content') or ''), 300))}")
    return "\n".join(lines) if lines else "<i>No todo list in this session.</i>"


class Transcript:
    """A run's output as a list of HTML messages that only ever grow at the end, each at most ``LIMIT`` units.

    ``dirty`` holds the indexes whose text changed since they were last sent, so the sender can coalesce many
    fragments into one edit.
    """

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self.messages: list[str] = []
        self.dirty: set[int] = set()
        self._closed = True  # the next output starts a new message (a card was sent below the last one)

    def line(self, atom: str) -> None:
        """A whole line (a tool call, a subagent): never cut; a new message if it does not fit the last one."""
        atom = atom if units(atom) <= self.limit else escape(_short(html.unescape(atom), self.limit // 2))
        if not self._closed and self.messages[-1] and not self.messages[-1].endswith("\n"):
            atom = "\n" + atom
        self._put(atom + "\n")

    def text(self, plain: str) -> None:
        """The model's own words, escaped; cut at a newline or space where a message fills up."""
        while plain:
            room = self.limit - (0 if self._closed else units(self.messages[-1]))
            piece = _fitting(plain, room)
            if not piece:
                self._closed = True  # nothing fits: the rest goes to a new message
                room = self.limit
                piece = _fitting(plain, room)
            self._append(escape(piece))
            plain = plain[len(piece) :]

    def close(self) -> None:
        """Later output goes below whatever is sent next (a card), in a message of its own."""
        self._closed = True

    def _put(self, atom: str) -> None:
        if self._closed or units(self.messages[-1]) + units(atom) > self.limit:
            self._closed = True
        self._append(atom.lstrip("\n") if self._closed else atom)

    def _append(self, escaped: str) -> None:
        if self._closed:
            self.messages.append("")
            self._closed = False
        self.messages[-1] += escaped
        self.dirty.add(len(self.messages) - 1)


def _fitting(plain: str, room: int) -> str:
    """The longest head of ``plain`` whose escaped form fits ``room``, ending at a newline or space if one is near."""
    if room <= 0:
        return ""
    if units(escape(plain)) <= room:
        return plain
    low, high = 0, len(plain)
    while low < high:  # the escaped size only grows with the head's length
        middle = (low + high + 1) // 2
        if units(escape(plain[:middle])) <= room:
            low = middle
        else:
            high = middle - 1
    head = plain[:low]
    cut = max(head.rfind("\n"), head.rfind(" "))
    return head[: cut + 1] if cut >= len(head) // 2 else head
