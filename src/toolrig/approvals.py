"""Approvals: the vocabulary shared by the policy that asks and the front ends that answer.

The policy (``policy/approvals.py``) decides *whether* a call needs a person; a channel decides *what the
person said*: a terminal prompt, an MCP elicitation, a program's callback. Parallel calls that ask at once
arrive as one batch, and every request is bound to a fingerprint of the exact tool and arguments.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Verdict = Literal["allow_once", "allow_always", "deny"]


def fingerprint(tool: str, args: dict[str, Any]) -> str:
    """A stable hash of a tool and its exact arguments, so an approval cannot be reused for another call."""
    canonical = json.dumps({"tool": tool, "args": args}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    id: str
    tool: str
    args: dict[str, Any]
    subjects: tuple[str, ...] = ()
    reason: str = ""
    agent_id: str | None = None
    session_id: str | None = None
    fingerprint: str = ""
    suggested: tuple[str, ...] = ()  # allowlist patterns that "allow always" would save, narrowest first


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    verdict: Verdict
    reason: str = ""
    patterns: tuple[str, ...] = field(default=())  # for allow_always: what to add to the allowlist
    fingerprint: str = ""  # when set, the answer holds only for the request with this fingerprint


class ApprovalChannel(Protocol):
    """Answers a batch of requests, one decision per request, in order."""

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]: ...


class CallbackChannel:
    """A program's own answer: wraps ``async def callback(request) -> ApprovalDecision``."""

    def __init__(self, callback: Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]) -> None:
        self._callback = callback

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        return [await self._callback(request) for request in requests]
