"""How a run answers approval requests: its own channel, a pause to be resumed later, or recorded decisions.

Governance's approval gate asks ``rig.approval_channel``. The loop installs ``RunRouter`` there once; the
router sends each request to the channel of the run (and the tool call) that made it, found through
context variables that the call's task inherits, so several runs can share one Rig.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from toolrig.approvals import ApprovalChannel, ApprovalDecision, ApprovalRequest, Verdict

PAUSED_REASON = "paused: this call waits for a person's decision; the run will resume with it"

current_channel: contextvars.ContextVar[ApprovalChannel | None] = contextvars.ContextVar(
    "toolrig_run_channel", default=None
)
current_call: contextvars.ContextVar[str | None] = contextvars.ContextVar("toolrig_run_call", default=None)


class RunRouter:
    """Installed as ``rig.approval_channel``: the asking run's channel, else the Rig's own, else deny."""

    def __init__(self, fallback: ApprovalChannel | None) -> None:
        self.fallback = fallback

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        channel = current_channel.get() or self.fallback
        if channel is None:
            return [ApprovalDecision("deny", "no one is there to approve this call") for _ in requests]
        return await channel.decide(requests)


def install_router(rig_holder: object) -> RunRouter:
    """Put a RunRouter on the rig (once), keeping whatever channel it had as the fallback."""
    channel = getattr(rig_holder, "approval_channel", None)
    if isinstance(channel, RunRouter):
        return channel
    router = RunRouter(channel)
    rig_holder.approval_channel = router  # type: ignore[attr-defined]
    return router


@dataclass(slots=True)
class PendingApproval:
    call_id: str
    request: ApprovalRequest


@dataclass
class PauseChannel:
    """Answers nothing now: records each request against its tool call, so the run can stop and be resumed."""

    pending: list[PendingApproval] = field(default_factory=list)

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        call_id = current_call.get() or ""
        self.pending.extend(PendingApproval(call_id, r) for r in requests)
        return [ApprovalDecision("deny", PAUSED_REASON) for _ in requests]

    def paused_calls(self) -> set[str]:
        return {p.call_id for p in self.pending}


class ReplayChannel:
    """Answers with decisions a person gave for a paused run, keyed by tool call id; anything else is denied."""

    def __init__(self, decisions: Mapping[str, ApprovalDecision | Verdict]) -> None:
        self.decisions = {
            k: (v if isinstance(v, ApprovalDecision) else ApprovalDecision(v)) for k, v in decisions.items()
        }

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        call_id = current_call.get() or ""
        decision = self.decisions.get(call_id)
        if decision is None:
            return [ApprovalDecision("deny", "no decision was given for this call when the run resumed")] * len(
                requests
            )
        return [decision for _ in requests]
