"""The web's approval channel: a request is parked until its answer arrives over HTTP, then the call goes on.

Trust model: an answer is data from whoever holds the token. Each parked request gets a fresh unguessable id that
answers that one request once (popped on use); the decision carries the request's fingerprint, so the broker
applies it to that exact call only. Forged, replayed and stale ids find nothing and are refused (and logged).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from toolrig.approvals.model import ApprovalDecision, ApprovalRequest
from toolrig.approvals.questions import question_json, refused, replies_from

log = logging.getLogger("toolrig.gateway")

Publish = Callable[[dict[str, Any]], None]


class AnswerRefused(Exception):
    """An answer that fits no parked request (unknown, already used, wrong call) or not its questions."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(eq=False)
class Parked:
    id: str
    request: ApprovalRequest
    done: anyio.Event = field(default_factory=anyio.Event)
    decision: ApprovalDecision | None = None

    def card(self) -> dict[str, Any]:
        """What a person sees to decide: the exact call, its subjects and the questions (all shown as text)."""
        r = self.request
        return {
            "type": "pending",
            "id": self.id,
            "kind": r.kind,
            "call_id": r.id,
            "tool": r.tool,
            "args": r.args,
            "subjects": list(r.subjects),
            "reason": r.reason,
            "agent_id": r.agent_id,
            "suggested": list(r.suggested),
            "questions": [question_json(q) for q in r.questions],
        }


class WebChannel:
    """One run's channel: ``decide`` parks each request and waits; ``answer`` (an HTTP handler) releases one."""

    def __init__(self, publish: Publish) -> None:
        self._publish = publish
        self.parked: dict[str, Parked] = {}

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        parked = [Parked(secrets.token_urlsafe(18), request) for request in requests]
        for item in parked:
            self.parked[item.id] = item
            self._publish(item.card())
        try:
            for item in parked:
                await item.done.wait()
        finally:  # answered, or the run was cancelled or the broker gave up waiting: the ids are spent either way
            for item in parked:
                if self.parked.pop(item.id, None) is not None:
                    self._publish({"type": "pending_withdrawn", "id": item.id, "call_id": item.request.id})
        return [item.decision or ApprovalDecision("deny", "no answer") for item in parked]

    def answer(
        self,
        pending_id: str,
        *,
        call_id: str | None,
        verdict: Literal["allow_once", "allow_always", "deny"],
        reason: str = "",
        answers: list[Any] | None = None,
    ) -> ApprovalDecision:
        item = self.parked.get(pending_id)
        if item is None:
            log.warning("gateway: refused an answer for %r: no such pending request (stale, replayed or forged)",
                        pending_id[:40])  # fmt: skip
            raise AnswerRefused(404, "no pending request has this id (already answered, withdrawn, or never asked)")
        request = item.request
        if call_id is not None and call_id != request.id:
            log.warning("gateway: refused an answer naming call %r for pending %r of call %r",
                        call_id[:80], pending_id, request.id)  # fmt: skip
            raise AnswerRefused(409, "this answer names another call than the one pending under this id")
        decision = _decision(request, verdict, reason, answers)
        del self.parked[pending_id]  # single use
        item.decision = decision
        item.done.set()
        self._publish({"type": "pending_answered", "id": pending_id, "call_id": request.id, "verdict": verdict})
        return decision

    def cards(self) -> list[dict[str, Any]]:
        return [item.card() for item in self.parked.values()]


def _decision(
    request: ApprovalRequest, verdict: str, reason: str, answers: list[Any] | None
) -> ApprovalDecision:
    reason = reason[:2000]
    if request.questions:
        if verdict == "deny" or answers is None:
            return ApprovalDecision("deny", reason or "skipped from the web page", fingerprint=request.fingerprint)
        replies = replies_from(answers, request.questions)
        if replies is None:
            raise AnswerRefused(422, f"give exactly one answer per question ({len(request.questions)})")
        why = refused(replies)
        if why is not None:
            raise AnswerRefused(422, why)
        return ApprovalDecision("allow_once", "answered from the web", fingerprint=request.fingerprint, answers=replies)
    if verdict == "allow_always":
        if not request.suggested:
            raise AnswerRefused(422, "this call offers no pattern to allow always: approve it once")
        return ApprovalDecision(
            "allow_always", reason or "approved always from the web", request.suggested[:1], request.fingerprint
        )
    if verdict == "allow_once":
        return ApprovalDecision("allow_once", reason or "approved from the web", fingerprint=request.fingerprint)
    return ApprovalDecision("deny", reason or "denied from the web", fingerprint=request.fingerprint)
