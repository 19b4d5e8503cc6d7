"""How a run answers approval requests: its own channel, a pause to be resumed later, or recorded decisions.

Governance's approval gate asks ``rig.approval_channel``, in batches that may gather calls of several
runs sharing one Rig. The loop installs ``RunRouter`` there once; it hands each request to the channel of
the run that made it (known by the request's session id), the Rig's own channel otherwise. A request's
``id`` is the tool call's id, which is how a paused run finds its calls again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolrig.approvals import ApprovalChannel, ApprovalDecision, ApprovalRequest, Verdict

PAUSED_REASON = "paused: this call waits for a person's decision; the run will resume with it"
NO_ONE = "no one is there to approve this call"


class RunRouter:
    """Installed as ``rig.approval_channel``: each request goes to its run's channel, else the Rig's own."""

    def __init__(self, fallback: ApprovalChannel | None) -> None:
        self.fallback = fallback
        self.runs: dict[str, ApprovalChannel] = {}

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        groups: dict[int, tuple[ApprovalChannel | None, list[int]]] = {}
        for index, request in enumerate(requests):
            channel = self.runs.get(request.session_id or "") or self.fallback
            groups.setdefault(id(channel), (channel, []))[1].append(index)
        answers: list[ApprovalDecision | None] = [None] * len(requests)
        for channel, indexes in groups.values():
            if channel is None:
                decided = [ApprovalDecision("deny", NO_ONE) for _ in indexes]
            else:
                decided = await channel.decide([requests[i] for i in indexes])
            for index, decision in zip(indexes, decided, strict=True):
                answers[index] = decision
        return [a or ApprovalDecision("deny", NO_ONE) for a in answers]


def install_router(rig: Any) -> RunRouter:
    """Put a RunRouter on the rig (once), keeping whatever channel it had as the fallback."""
    channel = rig.approval_channel
    if isinstance(channel, RunRouter):
        return channel
    router = RunRouter(channel)
    rig.approval_channel = router
    return router


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
