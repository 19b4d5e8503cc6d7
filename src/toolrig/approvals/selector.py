"""A selectable list on a real terminal: arrow keys move, space picks, enter confirms, Esc skips.

Trust model: labels come from the model; they are printed with control characters escaped, so a hostile
option cannot move the cursor or redraw the screen. The terminal is put in cbreak mode (no echo, one key at a
time, Ctrl-C still a signal) only while the list is shown, and restored whatever happens.
"""

from __future__ import annotations

import os
import termios
import tty
from typing import TextIO

import anyio

from toolrig.approvals.model import Question

UP = (b"\x1b[A", b"\x1bOA", b"k")
DOWN = (b"\x1b[B", b"\x1bOB", b"j")
ENTER = (b"\r", b"\n")
ESCAPE = b"\x1b"
OTHER = "Other: type your own answer"


def printable(text: str) -> str:
    """Model or peer text as a terminal shows it: control characters escaped, so it cannot redraw the screen."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


class Selector:
    """One question's options as a list; ``run()`` returns (labels picked, wants own text) or None (skipped)."""

    def __init__(
        self,
        question: Question,
        fd: int,
        output: TextIO,
        buffered: bytes = b"",
        *,
        shortcuts: dict[bytes, int] | None = None,
    ) -> None:
        self.question = question
        # A key that moves to its row (an approval's y / a / n): enter still confirms, so typing a letter and
        # enter answers as it did when approvals were line input.
        self.shortcuts = shortcuts or {}
        self.fd = fd
        self.output = output
        self.leftover = buffered
        self.rows = [c.label for c in question.options] + ([OTHER] if question.allow_other_text else [])
        self.cursor = 0
        self.picked: set[int] = set()
        self._drawn = 0

    async def run(self) -> tuple[list[str], bool] | None:
        saved = termios.tcgetattr(self.fd)
        try:
            tty.setcbreak(self.fd)
            self._draw()
            while True:
                key = await self._key()
                if key is None or key == ESCAPE or key == b"q":
                    self._finish("skipped")
                    return None
                if key in self.shortcuts:
                    self.cursor = self.shortcuts[key]
                    self.picked = {self.cursor}
                elif key in UP:
                    self.cursor = (self.cursor - 1) % len(self.rows)
                elif key in DOWN:
                    self.cursor = (self.cursor + 1) % len(self.rows)
                elif key == b" ":
                    self._toggle(self.cursor)
                elif key in ENTER:
                    if not self.picked:
                        self._toggle(self.cursor)
                    return self._result()
                self._draw()
        finally:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)

    def _toggle(self, row: int) -> None:
        if self.question.allow_multiple:
            self.picked ^= {row}
        else:
            self.picked = {row}

    def _result(self) -> tuple[list[str], bool]:
        other = len(self.question.options)
        labels = [self.rows[i] for i in sorted(self.picked) if i < other]
        wants_text = other in self.picked
        self._finish(", ".join(labels + (["(own answer)"] if wants_text else [])) or "nothing")
        return labels, wants_text

    def _draw(self) -> None:
        lines = []
        multiple = self.question.allow_multiple
        for index, label in enumerate(self.rows):
            mark = (
                ("[x]" if index in self.picked else "[ ]") if multiple else ("(*)" if index in self.picked else "( )")
            )
            pointer = ">" if index == self.cursor else " "
            description = ""
            if index < len(self.question.options) and self.question.options[index].description:
                description = f" - {printable(self.question.options[index].description)}"
            lines.append(f"  {pointer} {mark} {printable(label)}{description}")
        action = "space picks, " if multiple else ""
        keys = f", or press {' / '.join(k.decode() for k in self.shortcuts)}" if self.shortcuts else ""
        lines.append(f"  ↑/↓ move, {action}enter confirms, esc skips{keys}")
        text = (f"\x1b[{self._drawn}F\x1b[J" if self._drawn else "") + "\n".join(lines) + "\n"
        self._drawn = len(lines)
        self.output.write(text)
        self.output.flush()

    def _finish(self, what: str) -> None:
        clear = f"\x1b[{self._drawn}F\x1b[J" if self._drawn else ""
        self.output.write(f"{clear}  → {printable(what)}\n")
        self.output.flush()
        self._drawn = 0

    async def _key(self) -> bytes | None:
        """The next key: one byte, or a whole escape sequence (an arrow key's three bytes)."""
        while not self.leftover:
            if not await self._read():
                return None
        if self.leftover[:1] == ESCAPE:
            if len(self.leftover) < 3:
                with anyio.move_on_after(0.05):  # a lone Esc, or an arrow key whose bytes are still coming
                    while len(self.leftover) < 3 and await self._read():
                        pass
            if len(self.leftover) >= 3 and self.leftover[1:2] in (b"[", b"O"):
                key, self.leftover = self.leftover[:3], self.leftover[3:]
                return key
        key, self.leftover = self.leftover[:1], self.leftover[1:]
        return key

    async def _read(self) -> bool:
        await anyio.wait_readable(self.fd)
        chunk = os.read(self.fd, 64)
        self.leftover += chunk
        return bool(chunk)
