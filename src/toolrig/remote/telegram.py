"""Approvals answered by a person who is away, through a Telegram bot (Bot API long polling, no public URL).

Trust model: the bot token and chat id come from trusted config. Each request goes out as a message with
inline buttons whose ``callback_data`` carries a random single-use nonce bound to the request's fingerprint.
A press counts only if it comes from the configured chat (and, when set, an allowed user), names a nonce
that is still open, and arrives before the broker's timeout; anything else (a forged press from another
chat, a replayed or late one) is refused on Telegram and kept in ``refused`` for the audit.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.approvals import ApprovalDecision, ApprovalRequest, Verdict
from toolrig.approvals.model import RefusedAnswer, Reply

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("toolrig.remote.telegram")

DEFAULT_API = "https://api.telegram.org"
MAX_TEXT = 3_500  # Telegram's limit is 4,096 characters a message (room left for the answer's line)
_CHOICES: dict[str, tuple[str, Verdict]] = {
    "o": ("Allow once", "allow_once"),
    "a": ("Allow always", "allow_always"),
    "d": ("Deny", "deny"),
}


class TelegramError(Exception):
    """The Bot API refused a call or could not be reached; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A button press that did not count, for the audit log."""

    why: str  # forged | replayed | late | unshown (allow on a call too long to show) | unknown (a nonce never sent)
    nonce: str
    from_id: int | None
    chat_id: int | None


@dataclass(slots=True)
class _Open:
    request: ApprovalRequest
    message_id: int
    done: anyio.Event = field(default_factory=anyio.Event)
    decision: ApprovalDecision | None = None
    question: int = -1  # for a question request: which of its questions this message asks
    picked: list[str] = field(default_factory=list)
    reply: Reply | None = None  # None once done: skipped


class TelegramChannel:
    """An ``ApprovalChannel`` whose answers are button presses in a Telegram chat."""

    def __init__(
        self,
        token: str,
        chat_id: int,
        *,
        allowed_users: Sequence[int] = (),
        api_base: str = DEFAULT_API,
        poll_seconds: int = 25,
        http: httpx2.AsyncClient | None = None,
    ) -> None:
        self._url = f"{api_base.rstrip('/')}/bot{token}/"
        self.chat_id = chat_id
        self.allowed_users = frozenset(allowed_users)
        self.poll_seconds = poll_seconds
        self._http = http
        self._open: dict[str, _Open] = {}
        # nonce -> ("replayed" (answered) or "late" (expired), its request) for a later press
        self._closed: dict[str, tuple[str, ApprovalRequest]] = {}
        self._offset = 0
        self._polling = anyio.Lock()
        self.refused: list[Refusal] = []
        self.on_refused: Callable[[RefusedAnswer], None] | None = None  # the audit's hook (set by the Rig)

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        mine: list[tuple[str, _Open]] = []
        try:
            for request in requests:
                for index in range(len(request.questions)) if request.questions else (-1,):
                    nonce = secrets.token_hex(8)
                    message = await self._call("sendMessage", self._message(request, nonce, index))
                    slot = _Open(request, int(message.get("message_id", 0)), question=index)
                    self._open[nonce] = slot
                    mine.append((nonce, slot))
            while not all(slot.done.is_set() for _, slot in mine):
                async with self._polling:  # one getUpdates at a time: the Bot API answers 409 to a second
                    if all(slot.done.is_set() for _, slot in mine):
                        break
                    await self._poll_once()
            return [_decision(request, [slot for _, slot in mine if slot.request is request]) for request in requests]
        finally:
            with anyio.CancelScope(shield=True):
                await self._expire([(n, s) for n, s in mine if not s.done.is_set()])

    async def _poll_once(self) -> None:
        updates = await self._call(
            "getUpdates",
            {"offset": self._offset, "timeout": self.poll_seconds, "allowed_updates": ["callback_query", "message"]},
            seconds=self.poll_seconds + 10,
        )
        for update in updates if isinstance(updates, list) else []:
            if not isinstance(update, dict):
                continue
            update_id = update.get("update_id")
            if isinstance(update_id, int):
                self._offset = max(self._offset, update_id + 1)
            query = update.get("callback_query")
            if isinstance(query, dict):
                await self._press(query)
            message = update.get("message")
            if isinstance(message, dict):
                await self._typed(message)

    async def _typed(self, message: dict[str, Any]) -> None:
        """A reply to a question's message with the person's own words (only where the question takes text)."""
        replied = _object(message.get("reply_to_message")).get("message_id")
        chat_id = _object(message.get("chat")).get("id")
        from_id = _object(message.get("from")).get("id")
        text = message.get("text")
        found = next(((n, s) for n, s in self._open.items() if s.question >= 0 and s.message_id == replied), None)
        if found is None or not isinstance(text, str):
            return  # ordinary chat messages are not answers
        nonce, slot = found
        if chat_id != self.chat_id or (self.allowed_users and from_id not in self.allowed_users):
            self._refused(Refusal("forged", nonce, from_id, chat_id), slot.request)
            return
        question = slot.request.questions[slot.question]
        if not question.free_text:
            return
        slot.reply = Reply(tuple(slot.picked), text.strip()[:2000] or None)
        self._close(nonce, slot)

    async def _press(self, query: dict[str, Any]) -> None:
        data = query.get("data") if isinstance(query.get("data"), str) else ""
        nonce, _, code = str(data).partition(":")
        sender, message = _object(query.get("from")), _object(query.get("message"))
        from_id, chat_id = sender.get("id"), _object(message.get("chat")).get("id")
        slot = self._open.get(nonce)
        closed = self._closed.get(nonce)
        known = slot.request if slot is not None else closed[1] if closed is not None else None
        if chat_id != self.chat_id or (self.allowed_users and from_id not in self.allowed_users):
            refusal = Refusal("forged", nonce, from_id, chat_id)
            await self._refuse(query, refusal, "You may not answer this request.", known)
            return
        if slot is not None and slot.question >= 0:
            await self._pick(query, nonce, slot, code)
            return
        if slot is None or code not in _CHOICES:
            why = closed[0] if closed is not None else "unknown"
            refusal = Refusal(why, nonce, from_id, chat_id)
            await self._refuse(query, refusal, "This request was answered or expired.", known)
            return
        label, verdict = _CHOICES[code]
        request = slot.request
        if verdict != "deny" and not _showable(request):
            refusal = Refusal("unshown", nonce, from_id, chat_id)
            await self._refuse(query, refusal, "This call was too long to show: it can only be denied here.", request)
            return
        patterns = request.suggested[:1] if verdict == "allow_always" else ()
        slot.decision = ApprovalDecision(
            verdict, f"answered on Telegram by {from_id}", patterns=patterns, fingerprint=request.fingerprint
        )
        self._close(nonce, slot)
        await self._best_effort("answerCallbackQuery", {"callback_query_id": query.get("id"), "text": label})
        text = f"{_summary(request)}\n\n→ {label}"
        await self._best_effort(
            "editMessageText", {"chat_id": self.chat_id, "message_id": slot.message_id, "text": text}
        )

    async def _pick(self, query: dict[str, Any], nonce: str, slot: _Open, code: str) -> None:
        """A button under a question: an option (picked, or toggled when several may be), Done, or Skip."""
        question = slot.request.questions[slot.question]
        labels = [c.label for c in question.options]
        if code == "skip":
            slot.reply = None
        elif code == "done" or (code.startswith("o") and code[1:].isdigit() and int(code[1:]) < len(labels)):
            if code != "done":
                label = labels[int(code[1:])]
                if not question.allow_multiple:
                    slot.picked = [label]
                elif label in slot.picked:
                    slot.picked.remove(label)
                else:
                    slot.picked.append(label)
                if question.allow_multiple:
                    shown = ", ".join(slot.picked) or "nothing"
                    await self._best_effort(
                        "answerCallbackQuery", {"callback_query_id": query.get("id"), "text": f"picked: {shown}"}
                    )
                    return
            slot.reply = Reply(tuple(slot.picked)) if slot.picked else None
        else:
            return
        self._close(nonce, slot)
        text = f"{_summary(slot.request, slot.question)}\n\n→ {', '.join(slot.picked) if slot.reply else 'skipped'}"
        await self._best_effort("answerCallbackQuery", {"callback_query_id": query.get("id"), "text": "noted"})
        await self._best_effort(
            "editMessageText", {"chat_id": self.chat_id, "message_id": slot.message_id, "text": text}
        )

    def _close(self, nonce: str, slot: _Open) -> None:
        self._open.pop(nonce, None)
        self._closed[nonce] = ("replayed", slot.request)
        slot.done.set()

    def _refused(self, refusal: Refusal, request: ApprovalRequest | None) -> None:
        self.refused.append(refusal)
        log.warning("refused a %s Telegram answer (from %s in chat %s)", refusal.why, refusal.from_id, refusal.chat_id)
        if self.on_refused is not None:
            self.on_refused(
                RefusedAnswer("telegram", refusal.why, request, f"user {refusal.from_id} in chat {refusal.chat_id}")
            )

    async def _refuse(
        self, query: dict[str, Any], refusal: Refusal, text: str, request: ApprovalRequest | None = None
    ) -> None:
        self._refused(refusal, request)
        await self._best_effort("answerCallbackQuery", {"callback_query_id": query.get("id"), "text": text})

    async def _expire(self, slots: list[tuple[str, _Open]]) -> None:
        for nonce, slot in slots:
            self._open.pop(nonce, None)
            self._closed[nonce] = ("late", slot.request)
            with anyio.move_on_after(5):
                text = f"{_summary(slot.request, slot.question)}\n\n→ expired (no answer in time)"
                await self._best_effort(
                    "editMessageText", {"chat_id": self.chat_id, "message_id": slot.message_id, "text": text}
                )

    def _message(self, request: ApprovalRequest, nonce: str, question: int = -1) -> dict[str, Any]:
        if question >= 0:
            asked = request.questions[question]
            rows = [[{"text": c.label[:60], "callback_data": f"{nonce}:o{i}"} for i, c in enumerate(asked.options)]]
            rows.append([{"text": "Done" if asked.allow_multiple else "Skip", "callback_data": f"{nonce}:done"}])
            if asked.allow_multiple:
                rows[-1].append({"text": "Skip", "callback_data": f"{nonce}:skip"})
            text = _summary(request, question)
            return {"chat_id": self.chat_id, "text": text, "reply_markup": {"inline_keyboard": rows}}
        choices = _CHOICES if _showable(request) else {"d": _CHOICES["d"]}
        buttons = [{"text": label, "callback_data": f"{nonce}:{code}"} for code, (label, _) in choices.items()]
        return {"chat_id": self.chat_id, "text": _summary(request), "reply_markup": {"inline_keyboard": [buttons]}}

    async def _best_effort(self, method: str, payload: dict[str, Any]) -> None:
        """Acknowledgements and edits: a failure there must not change a decision already made."""
        try:
            await self._call(method, payload)
        except TelegramError as exc:
            log.warning("Telegram %s failed: %s", method, exc)

    async def _call(self, method: str, payload: dict[str, Any], seconds: float = 30) -> Any:
        import httpx2

        client = self._http or httpx2.AsyncClient(trust_env=False)
        try:
            response = await client.post(self._url + method, json=payload, timeout=seconds)
            body = response.json()
        except (httpx2.HTTPError, ValueError) as exc:
            raise TelegramError(f"{method}: {type(exc).__name__}: {exc}") from None
        finally:
            if self._http is None:
                await client.aclose()
        if not isinstance(body, dict) or not body.get("ok"):
            description = body.get("description") if isinstance(body, dict) else None
            raise TelegramError(f"{method}: HTTP {response.status_code}: {description or 'not ok'}")
        return body.get("result")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _decision(request: ApprovalRequest, slots: list[_Open]) -> ApprovalDecision:
    """One request's decision from its messages: the approval's press, or every question's answer."""
    if not request.questions:
        return slots[0].decision or ApprovalDecision("deny", "no answer on Telegram")
    replies = tuple(slot.reply or Reply() for slot in sorted(slots, key=lambda s: s.question))
    if not any(slot.reply for slot in slots):
        return ApprovalDecision("deny", "skipped on Telegram", fingerprint=request.fingerprint)
    return ApprovalDecision("allow_once", "answered on Telegram", fingerprint=request.fingerprint, answers=replies)


def _summary(request: ApprovalRequest, question: int = -1) -> str:
    import json

    if question >= 0:
        asked = request.questions[question]
        head = f"toolrig asks ({question + 1}/{len(request.questions)})" + (
            f" [{asked.header}]" if asked.header else ""
        )
        lines = [head, asked.question]
        lines += [f"• {c.label}" + (f": {c.description}" if c.description else "") for c in asked.options]
        if asked.free_text:
            lines.append("(reply to this message with your own answer)")
        text = "\n".join(lines)
        return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"

    head = "\n".join(_judged(request))
    if len(head) > MAX_TEXT:
        shown = head[: MAX_TEXT - 200].rsplit("\n", 1)[0]
        return f"{shown}\n[… {len(head) - len(shown)} more characters: too long to show here, so it can only be denied]"
    args = json.dumps(request.args, ensure_ascii=False, default=str)
    room = MAX_TEXT - len(head) - len("\narguments: ")
    if len(args) > room:
        cut = max(room - 60, 0)
        args = f"{args[:cut]}[… {len(args) - cut} more characters of arguments not shown]"
    return f"{head}\narguments: {args}"


def _judged(request: ApprovalRequest) -> list[str]:
    """What the person must see to approve: the tool, why it asks, and every subject policy judged, in full."""
    lines = [f"toolrig asks to run {request.tool}"]
    if request.reason:
        lines.append(request.reason)
    if request.agent_id:
        lines.append(f"agent: {request.agent_id}")
    lines += [f"• {subject}" for subject in request.subjects]
    return lines


def _showable(request: ApprovalRequest) -> bool:
    """A call is approvable here only if its subjects fit in one message: nobody approves what they cannot see."""
    return len("\n".join(_judged(request))) <= MAX_TEXT
