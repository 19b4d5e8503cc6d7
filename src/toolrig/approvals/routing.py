"""Routing: each run's requests go to that run's own channel.

Governance's approval gate asks ``rig.approval_channel``, in batches that may gather calls of several
runs sharing one Rig. The loop installs ``RunRouter`` there once; it hands each request to the channel of
the run that made it (known by the request's session id), the Rig's own channel otherwise. A request's
``id`` is the tool call's id, which is how a paused run finds its calls again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolrig.approvals.channel import ApprovalChannel
from toolrig.approvals.model import ApprovalDecision, ApprovalRequest

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
                decided = [ApprovalDecision("deny", NO_ONE, by_default=True) for _ in indexes]
            else:
                decided = await channel.decide([requests[i] for i in indexes])
            for index, decision in zip(indexes, decided, strict=True):
                answers[index] = decision
        return [a or ApprovalDecision("deny", NO_ONE, by_default=True) for a in answers]


def install_router(rig: Any) -> RunRouter:
    """Put a RunRouter on the rig (once), keeping whatever channel it had as the fallback."""
    channel = rig.approval_channel
    if isinstance(channel, RunRouter):
        return channel
    router = RunRouter(channel)
    rig.approval_channel = router
    return router
