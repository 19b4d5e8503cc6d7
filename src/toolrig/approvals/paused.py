"""Paused runs: a channel that answers nothing now, and one that replays the person's later decisions.

A headless run cannot wait for a person: ``PauseChannel`` records each request by its tool call id and
the run stops with them in its ``RunState``; whoever resumes it (any process) hands the decisions to
``ReplayChannel``. Anything without a decision is denied, never allowed by default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from toolrig.approvals.model import ApprovalDecision, ApprovalRequest, Verdict

PAUSED_REASON = "paused: this call waits for a person's decision; the run will resume with it"


@dataclass
class PauseChannel:
    """Answers nothing now: records each request by its call id, so the run can stop and be resumed."""

    pending: dict[str, ApprovalRequest] = field(default_factory=dict)

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        for request in requests:
            self.pending[request.id] = request
        return [ApprovalDecision("deny", PAUSED_REASON) for _ in requests]


class ReplayChannel:
    """Answers with decisions a person gave for a paused run, keyed by tool call id; anything else is denied."""

    def __init__(self, decisions: Mapping[str, ApprovalDecision | Verdict]) -> None:
        self.decisions = {
            k: (v if isinstance(v, ApprovalDecision) else ApprovalDecision(v)) for k, v in decisions.items()
        }

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        missing = ApprovalDecision("deny", "no decision was given for this call when the run resumed")
        return [self.decisions.get(r.id, missing) for r in requests]
