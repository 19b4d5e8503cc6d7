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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.approvals import ApprovalDecision, ApprovalRequest, Verdict

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("toolrig.remote.telegram")

DEFAULT_API = "https://api.telegram.org"
MAX_TEXT = 3_500  # Telegram's limit is 4,096 characters a message; the rest of a long call is cut
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

    why: str  # forged | replayed | late | unknown (a nonce this process never sent)
    nonce: str
    from_id: int | None
    chat_id: int | None


@dataclass(slots=True)
class _Open:
    request: ApprovalRequest
    message_id: int
    done: anyio.Event = field(default_factory=anyio.Event)
    decision: ApprovalDecision | None = None


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
        self._closed: dict[str, str] = {}  # nonce -> "replayed" (answered) or "late" (expired) for a later press
        self._offset = 0
        self._polling = anyio.Lock()
        self.refused: list[Refusal] = []

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        mine: list[tuple[str, _Open]] = []
        try:
            for request in requests:
                nonce = secrets.token_hex(8)
                message = await self._call("sendMessage", self._message(request, nonce))
                slot = _Open(request, int(message.get("message_id", 0)))
                self._open[nonce] = slot
                mine.append((nonce, slot))
            while not all(slot.done.is_set() for _, slot in mine):
                async with self._polling:  # one getUpdates at a time: the Bot API answers 409 to a second
                    if all(slot.done.is_set() for _, slot in mine):
                        break
                    await self._poll_once()
            return [slot.decision for _, slot in mine if slot.decision is not None]
        finally:
            with anyio.CancelScope(shield=True):
                await self._expire([(n, s) for n, s in mine if not s.done.is_set()])

    async def _poll_once(self) -> None:
        updates = await self._call(
            "getUpdates",
            {"offset": self._offset, "timeout": self.poll_seconds, "allowed_updates": ["callback_query"]},
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

    async def _press(self, query: dict[str, Any]) -> None:
        data = query.get("data") if isinstance(query.get("data"), str) else ""
        nonce, _, code = str(data).partition(":")
        sender, message = _object(query.get("from")), _object(query.get("message"))
        from_id, chat_id = sender.get("id"), _object(message.get("chat")).get("id")
        slot = self._open.get(nonce)
        if chat_id != self.chat_id or (self.allowed_users and from_id not in self.allowed_users):
            await self._refuse(query, Refusal("forged", nonce, from_id, chat_id), "You may not answer this request.")
            return
        if slot is None or code not in _CHOICES:
            why = self._closed.get(nonce, "unknown")
            await self._refuse(query, Refusal(why, nonce, from_id, chat_id), "This request was answered or expired.")
            return
        label, verdict = _CHOICES[code]
        request = slot.request
        patterns = request.suggested[:1] if verdict == "allow_always" else ()
        slot.decision = ApprovalDecision(
            verdict, f"answered on Telegram by {from_id}", patterns=patterns, fingerprint=request.fingerprint
        )
        del self._open[nonce]
        self._closed[nonce] = "replayed"
        slot.done.set()
        await self._best_effort("answerCallbackQuery", {"callback_query_id": query.get("id"), "text": label})
        text = f"{_summary(request)}\n\n→ {label}"
        await self._best_effort(
            "editMessageText", {"chat_id": self.chat_id, "message_id": slot.message_id, "text": text}
        )

    async def _refuse(self, query: dict[str, Any], refusal: Refusal, text: str) -> None:
        self.refused.append(refusal)
        log.warning("refused a %s Telegram answer (from %s in chat %s)", refusal.why, refusal.from_id, refusal.chat_id)
        await self._best_effort("answerCallbackQuery", {"callback_query_id": query.get("id"), "text": text})

    async def _expire(self, slots: list[tuple[str, _Open]]) -> None:
        for nonce, slot in slots:
            self._open.pop(nonce, None)
            self._closed[nonce] = "late"
            with anyio.move_on_after(5):
                text = f"{_summary(slot.request)}\n\n→ expired (no answer in time)"
                await self._best_effort(
                    "editMessageText", {"chat_id": self.chat_id, "message_id": slot.message_id, "text": text}
                )

    def _message(self, request: ApprovalRequest, nonce: str) -> dict[str, Any]:
        buttons = [{"text": label, "callback_data": f"{nonce}:{code}"} for code, (label, _) in _CHOICES.items()]
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


def _summary(request: ApprovalRequest) -> str:
    import json

    args = json.dumps(request.args, ensure_ascii=False, default=str)
    lines = [f"toolrig asks to run {request.tool}"]
    if request.reason:
        lines.append(request.reason)
    if request.agent_id:
        lines.append(f"agent: {request.agent_id}")
    lines.append(f"arguments: {args}")
    text = "\n".join(lines)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
