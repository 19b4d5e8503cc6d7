"""The one channel protocol: how a request reaches a person (or a program standing in for one).

Every front end answers through it: the terminal prompt, a program's callback, MCP elicitation, a paused
run (pause now, replay the person's decisions later), Telegram and webhooks. A channel gets a batch (calls
that asked at once) and returns one decision per request, in order; the broker adds timeouts, fallbacks
and the fingerprint check, so a channel never has to.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from toolrig.approvals.model import ApprovalDecision, ApprovalRequest
from toolrig.context import Approvals


class NobodyHere(Exception):
    """Raised by a channel that has nobody to put a request to: the broker answers with ``approvals.fallback``."""


class ApprovalChannel(Protocol):
    """Answers a batch of requests, one decision per request, in order."""

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]: ...


class CallbackChannel:
    """A program's own answer: wraps ``async def callback(request) -> ApprovalDecision``."""

    def __init__(self, callback: Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]) -> None:
        self._callback = callback

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        return [await self._callback(request) for request in requests]


class QuestionsApart:
    """A run's channel that sends questions (``ask_user``) one way and approvals another.

    ``questions=None`` skips every question at once (a scheduled task nobody watches); ``approvals=None``
    leaves approvals to the broker's fallback, as if the run had no channel at all.
    """

    def __init__(self, *, questions: ApprovalChannel | None, approvals: ApprovalChannel | None) -> None:
        self.questions = questions
        self.approvals = approvals

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        asked = [r for r in requests if r.questions]
        others = [r for r in requests if not r.questions]
        if others and self.approvals is None:
            raise NobodyHere("no one can approve calls in this run")
        answers: dict[int, ApprovalDecision] = {}
        if asked:
            if self.questions is None:
                skipped = ApprovalDecision("deny", "nobody is there to answer questions in this run", by_default=True)
                decided = [skipped] * len(asked)
            else:
                decided = await self.questions.decide(asked)
            answers.update({id(r): d for r, d in zip(asked, decided, strict=True)})
        if others and self.approvals is not None:
            decided = await self.approvals.decide(others)
            answers.update({id(r): d for r, d in zip(others, decided, strict=True)})
        return [answers[id(r)] for r in requests]


@runtime_checkable
class Routable(Protocol):
    """Approvals that can be asked through one caller's channel (the Rig's ``ToolApprovals``)."""

    def through(self, channel: ApprovalChannel) -> Approvals: ...


def routed(approvals: Approvals, channel: ApprovalChannel) -> Approvals:
    """A tool's own questions go where its call's approvals go."""
    return approvals.through(channel) if isinstance(approvals, Routable) else approvals
