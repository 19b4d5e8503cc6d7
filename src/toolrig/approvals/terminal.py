"""The interactive approval channel: a person at a terminal answers yes once, yes always, or no with a reason.

Trust model: whoever types on the terminal is the user. The prompt shows the exact tool, arguments and
subjects the answer binds to; nothing the model wrote is interpreted, only printed (control characters
escaped so a hostile argument cannot redraw the screen).

Input is read from the file descriptor without a thread (``anyio.wait_readable``), so a timeout or a
Ctrl-C stops the question at once and leaves no reader blocked behind.

Questions (``ask_user``) and approvals are a selectable list on a real terminal (arrow keys move, space
picks, enter confirms, Esc skips; an approval's y / a / n still move to their row; the terminal is in cbreak
mode only while the list is shown); on a pipe they are answered by typing option numbers, text or y / a / n,
one line per question.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

import anyio

from toolrig.approvals.model import ApprovalDecision, ApprovalRequest, Choice, Question, Reply
from toolrig.approvals.questions import field_questions, optional_fields, values_from_fields
from toolrig.approvals.selector import Selector, printable

_SHOWN_ARGS = 600
# An approval's answers as a list: (key that picks it, label, what it does).
_CHOICES = (
    (b"y", "yes, once", ""),
    (b"a", "yes, always", "add it to the allowlist"),
    (b"n", "no", "tell the model why"),
)
_FOR_THE_REST = ((b"Y", "yes to this and all the rest", ""), (b"N", "no to this and all the rest", ""))


class TerminalChannel:
    def __init__(self, *, input_fd: int | None = None, output: TextIO | None = None) -> None:
        self.input_fd = sys.stdin.fileno() if input_fd is None else input_fd
        self.output = output or sys.stderr
        self._buffer = b""

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        if any(r.questions for r in requests):  # questions one by one; approvals among them as one batch
            out: list[ApprovalDecision] = []
            for request in requests:
                out.extend([await self._questions(request)] if request.questions else await self.decide([request]))
            return out
        count = len(requests)
        self._say(f"\ntoolrig: {count} tool call{'s' if count > 1 else ''} need{'' if count > 1 else 's'} approval")
        for index, request in enumerate(requests, start=1):
            self._show(index, request)
        decisions: list[ApprovalDecision] = []
        for_all: ApprovalDecision | None = None
        for index, request in enumerate(requests, start=1):
            if for_all is not None:
                decisions.append(for_all)
                continue
            decision, applies_to_rest = await self._ask(index, count, request)
            decisions.append(decision)
            if applies_to_rest:
                for_all = decision
        return decisions

    async def _questions(self, request: ApprovalRequest) -> ApprovalDecision:
        total = len(request.questions)
        replies: list[Reply] = []
        for index, question in enumerate(request.questions, start=1):
            heading = f"\ntoolrig: the agent asks ({index}/{total})" + (
                f" [{printable(question.header)}]" if question.header else ""
            )
            self._say(heading)
            self._say(f"  {printable(question.question)}")
            reply = await (self._form(question) if question.form is not None else self._one_question(question))
            if reply is None:  # skipped: the rest is skipped with it
                return ApprovalDecision("deny", "the user skipped the question", fingerprint=request.fingerprint)
            replies.append(reply)
        return ApprovalDecision("allow_once", "answered at the terminal", fingerprint=request.fingerprint,
                                answers=tuple(replies))  # fmt: skip

    async def _form(self, question: Question) -> Reply | None:
        """A form asked field by field; an empty line takes the field's default (or leaves it out)."""
        replies = []
        for field, optional in zip(field_questions(question), optional_fields(question), strict=True):
            self._say(f"  - {printable(field.question)}")
            reply = await self._one_question(field, optional=optional)
            if reply is None:
                return None
            replies.append(reply)
        return values_from_fields(question, replies)

    async def _one_question(self, question: Question, *, optional: bool = False) -> Reply | None:
        if question.options and os.isatty(self.input_fd):
            selector = Selector(question, self.input_fd, self.output, self._buffer)
            picked = await selector.run()
            self._buffer = selector.leftover
            if picked is None:
                return None
            labels, wants_text = picked
            text = None
            if wants_text:
                text = (await self._prompt("  your answer > ") or "").strip() or None
            return Reply(tuple(labels), text)
        if question.options:
            for number, choice in enumerate(question.options, start=1):
                extra = f" - {printable(choice.description)}" if choice.description else ""
                self._say(f"    {number}. {printable(choice.label)}{extra}")
        hint = "numbers like 1,3" if question.allow_multiple else "a number"
        if not question.options:
            ask = "  your answer (empty to skip) > "
        elif question.allow_other_text:
            ask = f"  {hint}, or your own words (empty to skip) > "
        else:
            ask = f"  {hint} (empty to skip) > "
        if optional:
            ask = ask.replace("empty to skip", "empty for the default")
        line = await self._prompt(ask)
        if not line:
            return Reply() if optional and line is not None else None
        return _typed_reply(line, question)

    def _show(self, index: int, request: ApprovalRequest) -> None:
        args = json.dumps(request.args, ensure_ascii=False)
        if len(args) > _SHOWN_ARGS:
            args = args[:_SHOWN_ARGS] + f"… ({len(args) - _SHOWN_ARGS} more characters)"
        self._say(f"  [{index}] {request.tool} {printable(args)}")
        for subject in request.subjects:
            self._say(f"      acts on: {printable(subject)}")
        if request.reason:
            self._say(f"      why asked: {printable(request.reason)}")

    async def _ask(self, index: int, count: int, request: ApprovalRequest) -> tuple[ApprovalDecision, bool]:
        if os.isatty(self.input_fd):
            return await self._pick(index, count, request)
        choices = "[y]es once, [a]lways, [n]o" + (", Y/N = yes/no to all the rest" if count > 1 else "")
        while True:
            answer = await self._prompt(f"[{index}/{count}] allow {request.tool}? {choices} > ")
            if answer is None:
                return ApprovalDecision("deny", "no answer (the terminal input was closed)"), True
            answered = await self._answered(answer, request)
            if answered is not None:
                return answered
            self._say("  please answer y, a or n")

    async def _pick(self, index: int, count: int, request: ApprovalRequest) -> tuple[ApprovalDecision, bool]:
        """On a real terminal an approval is a list, as a question is (it was the one prompt that was typed)."""
        rows = _CHOICES + (_FOR_THE_REST if index < count else ())
        self._say(f"[{index}/{count}] allow {request.tool}?")
        question = Question(f"allow {request.tool}?", options=tuple(Choice(label, what) for _, label, what in rows))
        shortcuts = {key: row for row, (key, _, _) in enumerate(rows)}
        selector = Selector(question, self.input_fd, self.output, self._buffer, shortcuts=shortcuts)
        picked = await selector.run()
        self._buffer = selector.leftover
        keys = [key.decode() for key, label, _ in rows if picked is not None and label in picked[0]]
        answered = await self._answered(keys[0], request) if keys else None
        # Esc, or the input closed: nobody said yes.
        return answered or (
            ApprovalDecision("deny", "the user skipped the question", fingerprint=request.fingerprint),
            False,
        )

    async def _answered(self, answer: str, request: ApprovalRequest) -> tuple[ApprovalDecision, bool] | None:
        """The decision a typed or picked answer gives, and whether it holds for the rest of the batch."""
        if answer in ("y", "yes", "Y"):
            return ApprovalDecision("allow_once", fingerprint=request.fingerprint), answer == "Y"
        if answer in ("a", "always"):
            return await self._always(request), False
        if answer in ("n", "no", "N"):
            reason = await self._prompt("  reason for the model (optional) > ")
            return ApprovalDecision("deny", (reason or "").strip(), fingerprint=request.fingerprint), answer == "N"
        return None

    async def _always(self, request: ApprovalRequest) -> ApprovalDecision:
        suggested = ", ".join(request.suggested) or request.tool
        typed = await self._prompt(
            f"  save to the allowlist: {suggested}  (Enter to accept, or type a pattern like 'git *') > "
        )
        typed = (typed or "").strip()
        if typed and ":" not in typed and typed != request.tool:
            typed = f"{request.tool}:{typed}"  # a bare glob is about this tool's subjects
        patterns = (typed,) if typed else request.suggested or (request.tool,)
        return ApprovalDecision("allow_always", patterns=patterns, fingerprint=request.fingerprint)

    async def _prompt(self, text: str) -> str | None:
        self.output.write(text)
        self.output.flush()
        line = await self._readline()
        return None if line is None else line.strip()

    async def _readline(self) -> str | None:
        while b"\n" not in self._buffer:
            await anyio.wait_readable(self.input_fd)
            chunk = os.read(self.input_fd, 4096)
            if not chunk:
                if not self._buffer:
                    return None
                line, self._buffer = self._buffer, b""
                return line.decode(errors="replace")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")

    def _say(self, text: str) -> None:
        self.output.write(text + "\n")
        self.output.flush()


def _typed_reply(line: str, question: Question) -> Reply | None:
    """A typed line: option numbers (``1,3``) when they all name options, else the person's own words."""
    parts = [p.strip() for p in line.replace(" ", ",").split(",") if p.strip()]
    count = len(question.options)
    if parts and all(p.isdigit() and 1 <= int(p) <= count for p in parts):
        labels = tuple(dict.fromkeys(question.options[int(p) - 1].label for p in parts))
        return Reply(labels if question.allow_multiple else labels[:1])
    if question.free_text:
        return Reply((), line.strip())
    return Reply()  # neither numbers nor allowed text: an empty answer, which counts as skipped
