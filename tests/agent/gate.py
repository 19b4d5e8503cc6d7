"""A real approval gate for the loop tests, built like governance's: it asks ``rig.approval_channel``.

It stands in until the governance issue lands its own gate; it does what that gate is specified to do
(ask the channel, emit ``approval_request`` / ``approval_resolved`` to the caller, refuse on deny).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolrig.approvals import ApprovalRequest, fingerprint
from toolrig.errors import ErrorType, ToolError
from toolrig.events import ApprovalRequestEvent, ApprovalResolvedEvent
from toolrig.executor import ToolCall
from toolrig.rig import Rig


class AskGate:
    def __init__(self, rig: Rig, tools: Iterable[str]) -> None:
        self.rig = rig
        self.tools = set(tools)

    async def __call__(self, call: ToolCall) -> None:
        if call.name not in self.tools:
            return
        request = ApprovalRequest(
            id=f"apr_{call.call_id}",
            tool=call.name,
            args=call.raw_args,
            subjects=tuple(call.subjects),
            reason=f"{call.name} is destructive",
            agent_id=call.agent_id,
            session_id=call.session_id,
            fingerprint=fingerprint(call.name, call.raw_args),
        )
        events = call.events
        if events is not None:
            events.emit(ApprovalRequestEvent(request.id, call.name, call.raw_args, reason=request.reason))
        channel = self.rig.approval_channel
        if channel is None:
            raise ToolError(ErrorType.DENIED, "No one can approve this call.")
        [decision] = await channel.decide([request])
        if events is not None:
            events.emit(ApprovalResolvedEvent(request.id, call.name, decision.verdict, decision.reason))
        if decision.verdict == "deny":
            raise ToolError(ErrorType.DENIED, f"The user denied this call: {decision.reason or 'no reason given'}")
        call.approval = decision.verdict


def with_gate(rig: Rig, *tools: str) -> Rig:
    rig.extensions.approval.append(AskGate(rig, tools or ("wipe",)))
    return rig
