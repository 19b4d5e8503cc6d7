"""Approvals answered through a webhook: Slack, ntfy, a company portal, anything that can take a POST.

Trust model: toolrig POSTs each request signed with HMAC-SHA256 over ``timestamp.body`` (headers
``X-Toolrig-Timestamp`` and ``X-Toolrig-Signature: sha256=<hex>``), so the receiver knows it came from us.
The answer must be signed the same way with the same shared secret, name the request's single-use id, and
carry a fresh timestamp; it comes back either by toolrig polling ``poll_url`` or by the receiver POSTing it
to an endpoint that calls ``WebhookChannel.accept``. Unsigned, wrongly signed, stale, replayed or late
answers are refused and kept in ``refused`` for the audit. The secret comes from trusted config only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.approvals import ApprovalDecision, ApprovalRequest, Verdict
from toolrig.approvals.model import RefusedAnswer
from toolrig.approvals.questions import question_json, replies_from

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("toolrig.remote.webhook")

SIGNATURE = "X-Toolrig-Signature"
TIMESTAMP = "X-Toolrig-Timestamp"
MAX_SKEW_SECONDS = 300  # an answer signed longer ago (or ahead) than this is refused as a possible replay
_VERDICTS: tuple[Verdict, ...] = ("allow_once", "allow_always", "deny")


class WebhookError(Exception):
    """The webhook could not be reached or refused the request; the message says why."""


def sign(secret: bytes, body: bytes, timestamp: int) -> str:
    return "sha256=" + hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def signed_headers(secret: bytes, body: bytes, now: float | None = None) -> dict[str, str]:
    timestamp = int(time.time() if now is None else now)
    return {TIMESTAMP: str(timestamp), SIGNATURE: sign(secret, body, timestamp), "Content-Type": "application/json"}


@dataclass(frozen=True, slots=True)
class Refusal:
    why: str  # unsigned | bad_signature | stale | malformed | replayed | late | unknown
    request_id: str


@dataclass(slots=True)
class _Open:
    request: ApprovalRequest
    done: anyio.Event = field(default_factory=anyio.Event)
    decision: ApprovalDecision | None = None


class WebhookChannel:
    """An ``ApprovalChannel`` that sends requests to a URL and takes signed answers back."""

    def __init__(
        self,
        url: str,
        secret: str | bytes,
        *,
        poll_url: str | None = None,
        poll_interval: float = 2.0,
        http: httpx2.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.secret = secret.encode() if isinstance(secret, str) else secret
        self.poll_url = poll_url
        self.poll_interval = poll_interval
        self._http = http
        self._open: dict[str, _Open] = {}
        self._closed: dict[str, tuple[str, ApprovalRequest]] = {}
        self.refused: list[Refusal] = []
        self.on_refused: Callable[[RefusedAnswer], None] | None = None  # the audit's hook (set by the Rig)

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        mine: list[tuple[str, _Open]] = []
        try:
            for request in requests:
                request_id = secrets.token_urlsafe(18)
                self._open[request_id] = slot = _Open(request)
                mine.append((request_id, slot))
                await self._send(request_id, request)
            while not all(slot.done.is_set() for _, slot in mine):
                if self.poll_url is None:
                    await _all_done(mine)  # answers arrive through accept(), called by the callback endpoint
                    break
                for request_id, slot in mine:
                    if not slot.done.is_set():
                        await self._poll(self.poll_url, request_id)
                if not all(slot.done.is_set() for _, slot in mine):
                    await anyio.sleep(self.poll_interval)
            return [slot.decision for _, slot in mine if slot.decision is not None]
        finally:
            for request_id, slot in mine:
                if not slot.done.is_set():
                    self._open.pop(request_id, None)
                    self._closed[request_id] = ("late", slot.request)

    def accept(self, body: bytes, headers: Mapping[str, str], now: float | None = None) -> tuple[int, str]:
        """Take one signed answer (from a callback POST or a poll): an HTTP status and a short reason."""
        lowered = {k.lower(): v for k, v in headers.items()}
        signature, stamp = lowered.get(SIGNATURE.lower()), lowered.get(TIMESTAMP.lower())
        answer = _json_object(body)
        request_id = str(answer.get("id", "")) if answer else ""
        if not signature or not stamp or not stamp.isdigit():
            return self._refuse("unsigned", request_id, 401)
        if not hmac.compare_digest(signature, sign(self.secret, body, int(stamp))):
            return self._refuse("bad_signature", request_id, 401)
        if abs((time.time() if now is None else now) - int(stamp)) > MAX_SKEW_SECONDS:
            return self._refuse("stale", request_id, 401)
        slot = self._open.get(request_id)
        if slot is None:
            closed = self._closed.get(request_id)
            return self._refuse(closed[0] if closed else "unknown", request_id, 409, closed[1] if closed else None)
        request = slot.request
        if request.questions:
            return self._answers(request_id, slot, answer)
        verdict = answer.get("verdict") if answer else None
        if answer is None or verdict not in _VERDICTS:
            return self._refuse("malformed", request_id, 400, request)
        slot.decision = ApprovalDecision(
            verdict,  # one of _VERDICTS, checked above
            str(answer.get("reason") or "answered through the webhook")[:500],
            patterns=request.suggested[:1] if verdict == "allow_always" else (),
            fingerprint=request.fingerprint,
        )
        return self._close(request_id, slot)

    def _answers(self, request_id: str, slot: _Open, answer: dict[str, Any] | None) -> tuple[int, str]:
        """A question's answer: ``{"id", "answers": [...]}`` (one per question), or ``{"id", "skipped": true}``."""
        request = slot.request
        if answer is not None and answer.get("skipped") is True:
            slot.decision = ApprovalDecision("deny", "skipped through the webhook", fingerprint=request.fingerprint)
            return self._close(request_id, slot)
        replies = replies_from(answer, request.questions) if answer is not None else None
        if replies is None:
            return self._refuse("malformed", request_id, 400, request)
        slot.decision = ApprovalDecision(
            "allow_once", "answered through the webhook", fingerprint=request.fingerprint, answers=replies
        )
        return self._close(request_id, slot)

    def _close(self, request_id: str, slot: _Open) -> tuple[int, str]:
        del self._open[request_id]
        self._closed[request_id] = ("replayed", slot.request)
        slot.done.set()
        return 200, "accepted"

    def _refuse(
        self, why: str, request_id: str, status: int, request: ApprovalRequest | None = None
    ) -> tuple[int, str]:
        self.refused.append(Refusal(why, request_id))
        log.warning("refused a webhook answer (%s) for request %r", why, request_id[:40])
        if request is None and request_id in self._open:
            request = self._open[request_id].request
        if self.on_refused is not None:
            self.on_refused(RefusedAnswer("webhook", why, request, f"answer for {request_id[:40]!r}"))
        return status, f"refused: {why}"

    async def _send(self, request_id: str, request: ApprovalRequest) -> None:
        payload: dict[str, Any] = {
            "type": "question" if request.questions else "approval_request",
            "id": request_id,
            "tool": request.tool,
            "arguments": request.args,
            "subjects": list(request.subjects),
            "reason": request.reason,
            "agent_id": request.agent_id,
        }
        if request.questions:
            payload["questions"] = [question_json(q) for q in request.questions]
        else:
            payload["choices"] = list(_VERDICTS)
        body = json.dumps(payload, ensure_ascii=False, default=str).encode()
        response = await self._request("POST", self.url, content=body, headers=signed_headers(self.secret, body))
        if response.status_code >= 300:
            raise WebhookError(f"the approval webhook answered HTTP {response.status_code} to the request")

    async def _poll(self, poll_url: str, request_id: str) -> None:
        response = await self._request("GET", poll_url, params={"id": request_id})
        if response.status_code in (202, 204, 404):  # no answer yet
            return
        if response.status_code >= 300:
            raise WebhookError(f"the approval poll URL answered HTTP {response.status_code}")
        self.accept(response.content, dict(response.headers))

    async def _request(self, method: str, url: str, **kwargs: Any) -> httpx2.Response:
        import httpx2

        client = self._http or httpx2.AsyncClient(trust_env=False, timeout=30)
        try:
            return await client.request(method, url, **kwargs)
        except httpx2.HTTPError as exc:
            raise WebhookError(f"the approval webhook could not be reached: {type(exc).__name__}: {exc}") from None
        finally:
            if self._http is None:
                await client.aclose()


async def _all_done(slots: list[tuple[str, _Open]]) -> None:
    for _, slot in slots:
        await slot.done.wait()


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None
