"""The one channel protocol: how a request reaches a person (or a program standing in for one).

Every front end answers through it: the terminal prompt, a program's callback, MCP elicitation, a paused
run (pause now, replay the person's decisions later), Telegram and webhooks. A channel gets a batch (calls
that asked at once) and returns one decision per request, in order; the broker adds timeouts, fallbacks
and the fingerprint check, so a channel never has to.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from toolrig.approvals.model import ApprovalDecision, ApprovalRequest


class ApprovalChannel(Protocol):
    """Answers a batch of requests, one decision per request, in order."""

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]: ...


class CallbackChannel:
    """A program's own answer: wraps ``async def callback(request) -> ApprovalDecision``."""

    def __init__(self, callback: Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]) -> None:
        self._callback = callback

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        return [await self._callback(request) for request in requests]
