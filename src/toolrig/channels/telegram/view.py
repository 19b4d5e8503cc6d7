"""One run, followed into one user's chat: streamed text as coalesced edits, tool lines, cards as buttons.

Trust model: the run's events carry hostile text (the model's, tools'): the transcript escapes it (``render``);
cards are sent as plain text (no markup at all). A button's press reaches ``press`` only after the bot checked
its nonce, user and chat; the answer then goes through the gateway's own single-use, call-bound card.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.channels.telegram import render
from toolrig.channels.telegram.buttons import Button, Buttons, QuestionCard

if TYPE_CHECKING:
    from toolrig.channels.telegram.botapi import BotApi
    from toolrig.gateway.runs import LiveRun

log = logging.getLogger("toolrig.channels.telegram")

ENDINGS = {"completed": "", "terminal": "", "aborted": "■ stopped", "failed": "⚠ the run failed"}


def request_of(card: dict[str, Any]) -> Any:
    """The card as the approvals' request, so it is summarised exactly as forwarded approvals are."""
    from toolrig.approvals.model import ApprovalRequest
    from toolrig.approvals.questions import question_from

    arguments = card.get("arguments")
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        args = {"arguments": arguments}
    questions = tuple(question_from(q) for q in card.get("questions") or () if isinstance(q, dict))
    return ApprovalRequest(
        str(card.get("call_id", "")),
        str(card.get("tool", "")),
        args if isinstance(args, dict) else {"arguments": args},
        subjects=tuple(str(s) for s in card.get("subjects") or ()),
        reason=str(card.get("reason") or ""),
        agent_id=card.get("task_id") if isinstance(card.get("task_id"), str) else None,
        questions=questions,
    )


class RunView:
    def __init__(
        self,
        api: BotApi,
        chat_id: int,
        run: LiveRun,
        buttons: Buttons,
        *,
        edit_seconds: float,
        on_session: Callable[[str], None],
    ) -> None:
        self.api = api
        self.chat_id = chat_id
        self.run = run
        self.buttons = buttons
        self.edit_seconds = edit_seconds
        self.on_session = on_session
        self.transcript = render.Transcript()
        self.sent: dict[int, tuple[int, str]] = {}  # transcript index -> (message id, text last sent)
        self.followups: list[str] = []
        self._lock = anyio.Lock()
        self._wake = anyio.Event()
        self._ended = False

    async def follow(self) -> list[str]:
        """Show the run until it ends; the follow-ups it suggested come back (the bot shows them as buttons)."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._pace)
            async for item in self.run.follow():
                if item is not None:
                    await self._on(item[1])
            self._ended = True
            self._wake.set()
        return self.followups

    async def _pace(self) -> None:
        """Flush on a change, then rest ``edit_seconds``: every fragment in between lands in one edit."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            ended = self._ended  # read before the flush: what arrives during it gets a flush of its own
            async with self._lock:
                await self._flush()
            if ended:
                return
            await anyio.sleep(self.edit_seconds)

    async def _on(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "init" and isinstance(event.get("session_id"), str):
            self.on_session(event["session_id"])
        elif kind == "stream_text":
            self.transcript.text(str(event.get("text", "")))
        elif kind == "tool_call":
            self.transcript.line(render.tool_call(event))
        elif kind == "tool_result":
            self.transcript.line(render.tool_result(event))
        elif kind in ("subagent_start", "subagent_done"):
            line = render.subagent(event)
            if line is not None:
                self.transcript.line(line)
        elif kind == "error":
            message = f"{event.get('kind', '')}: {event.get('message', '')}"
            self.transcript.line(f"⚠ {render.escape(message[:500])}")
        elif kind == "followups":
            self.followups = [str(f) for f in event.get("followups") or ()][:8]
        elif kind == "pending":
            await self._card(event)
            return
        elif kind in ("pending_answered", "pending_withdrawn"):
            await self._card_closed(event)
            return
        elif kind == "run_end":
            ending = ENDINGS.get(str(event.get("status")), f"■ {event.get('status')}")
            if ending:
                self.transcript.line(render.escape(ending))
        else:
            return
        self._wake.set()

    async def _flush(self) -> None:
        transcript = self.transcript
        for index in sorted(transcript.dirty):
            transcript.dirty.discard(index)
            text = transcript.messages[index]
            if not text.strip() or self.sent.get(index, (0, ""))[1] == text:
                continue
            payload: dict[str, Any] = {"chat_id": self.chat_id, "text": text, "parse_mode": "HTML"}
            if index in self.sent:
                done = await self.api.best_effort("editMessageText", {**payload, "message_id": self.sent[index][0]})
                if done is not None:
                    self.sent[index] = (self.sent[index][0], text)
                continue
            message = await self.api.best_effort("sendMessage", payload)
            if isinstance(message, dict) and isinstance(message.get("message_id"), int):
                self.sent[index] = (message["message_id"], text)

    async def _card(self, card: dict[str, Any]) -> None:
        """A card goes below what was said so far; what the run says next goes below the card."""
        from toolrig.remote.telegram import _showable, _summary

        async with self._lock:
            await self._flush()
            self.transcript.close()
            request = request_of(card)
            base = {"user": self.chat_id, "view": self, "card_id": str(card["id"]), "call_id": request.id}
            if card.get("kind") == "approval":
                button = Button(kind="approval", **base)
                nonce = self.buttons.add(button)
                choices = [("Approve once", "o"), ("Deny", "d")] if _showable(request) else [("Deny", "d")]
                button.text = _summary(request)
                await self._send_card(button, [[(label, f"{nonce}:{code}") for label, code in choices]])
                return
            shared = QuestionCard(str(card["id"]), request.id, list(request.questions))
            for index, question in enumerate(request.questions):
                button = Button(kind="question", question=index, card=shared, **base)
                nonce = self.buttons.add(button)
                options = [] if question.form is not None else list(question.options)
                rows = [[(c.label[:60], f"{nonce}:o{i}")] for i, c in enumerate(options)]
                rows.append([("Done", f"{nonce}:done")] if question.allow_multiple else [])
                rows[-1].append(("Skip", f"{nonce}:skip"))
                button.text = _summary(request, index)
                if question.form is not None:
                    button.text += "\n(a form: answer it on the gateway's page, or skip)"
                await self._send_card(button, rows)

    async def _send_card(self, button: Button, rows: list[list[tuple[str, str]]]) -> None:
        keyboard = [[{"text": label, "callback_data": data} for label, data in row] for row in rows if row]
        payload = {"chat_id": self.chat_id, "text": button.text, "reply_markup": {"inline_keyboard": keyboard}}
        message = await self.api.best_effort("sendMessage", payload)
        if isinstance(message, dict) and isinstance(message.get("message_id"), int):
            button.message_id = message["message_id"]

    async def _card_closed(self, event: dict[str, Any]) -> None:
        withdrawn = event.get("type") == "pending_withdrawn"
        outcome = (
            "withdrawn"
            if withdrawn
            else {"allow_once": "approved", "deny": "denied"}.get(str(event.get("verdict")), "answered")
        )
        for nonce, button in self.buttons.of_card(str(event.get("id"))):
            self.buttons.close(nonce, "withdrawn" if withdrawn else "answered")
            if button.message_id:
                await self.api.best_effort(
                    "editMessageText",
                    {"chat_id": self.chat_id, "message_id": button.message_id, "text": f"{button.text}\n\n→ {outcome}"},
                )

    async def press(self, button: Button, code: str) -> str:
        """A checked press on one of this run's cards; what Telegram shows the presser comes back."""
        from toolrig.gateway.channel import AnswerRefused

        try:
            if button.kind == "approval":
                if code not in ("o", "d"):
                    return "Not a choice on this card."
                self.run.answer(button.card_id, call_id=button.call_id, verdict="allow_once" if code == "o" else "deny")
                return "Approved once" if code == "o" else "Denied"
            return self._pick(button, code)
        except AnswerRefused as exc:
            return exc.message[:180]

    def _pick(self, button: Button, code: str) -> str:
        card = button.card
        if card is None:
            return "Not a question."
        index = button.question
        question = card.questions[index]
        labels = [c.label for c in question.options] if question.form is None else []
        if code.startswith("o") and code[1:].isdigit() and int(code[1:]) < len(labels):
            label = labels[int(code[1:])]
            picked = card.picked[index]
            if not question.allow_multiple:
                card.picked[index] = [label]
                return self.reply(button, {"selected": [label]})
            if label in picked:
                picked.remove(label)
            else:
                picked.append(label)
            return f"picked: {', '.join(picked) or 'nothing'}"[:180]
        if code == "done" and question.allow_multiple:
            return self.reply(button, {"selected": list(card.picked[index])})
        if code == "skip":
            return self.reply(button, {})
        return "Not a choice on this question."

    def reply(self, button: Button, answer: dict[str, Any]) -> str:
        """One question's answer; once every question of the card has one, the card is answered (once)."""
        card = button.card
        if card is None:
            return "Not a question."
        card.replies[button.question] = answer
        if not card.complete:
            return "Noted: answer the other questions too."
        replies = [r or {} for r in card.replies]
        said = any(r.get("selected") or r.get("other_text") for r in replies)
        from toolrig.gateway.channel import AnswerRefused

        try:
            verdict = "allow_once" if said else "deny"
            self.run.answer(card.card_id, call_id=card.call_id, verdict=verdict, answers=replies)
        except AnswerRefused as exc:
            return exc.message[:180]
        return "Answered" if said else "Skipped"
