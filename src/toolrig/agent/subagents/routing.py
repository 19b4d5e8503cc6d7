"""Where a child's approval requests go: its root run's channel, or a pause the root shares.

The one place the child -> root routing lives (``root_channel``); ``pause_for_children`` marks a spawning
call as waiting when a foreground child paused with its root.
"""

from __future__ import annotations

from typing import Any

from toolrig.agent.subagents.nodes import Child, HubRun, RunNode


def root_channel(parent: RunNode, child: Child) -> Any:
    """Where a child's approval requests go: the ROOT run's channel (terminal, MCP elicitation, callback).

    The one place the child -> root routing lives. Under a root run that pauses for approvals
    (``approvals="pause"``) a foreground child pauses too: its waiting calls travel in the root's RunState
    and resume with it (``pause_for_children``). A background child cannot pause with the run (nobody waits
    on it): its call is refused with that reason.
    """
    root = parent.root.run
    channel = root._channel()
    if channel is None:
        return None  # the Rig's own channel (the router's fallback), as for the root
    if root.pause is not None and channel is root.pause:
        if child.background:
            return _RefuseChannel(
                "a background subagent's call needs approval, and this run pauses for approvals: "
                "run the subagent in the foreground to have its call decided"
            )
        return "pause"
    return channel


def pause_for_children(run: HubRun, call_id: str) -> None:
    """Mark the parent's spawning call as waiting, so the parent pauses at the end of its turn too."""
    from toolrig.approvals import ApprovalRequest

    if run.pause is None:  # pragma: no cover - a child pauses only under a run that pauses
        return
    reason = "waits for its subagents' calls to be decided"
    run.pause.pending[call_id] = ApprovalRequest(call_id, "spawn_agents", {}, reason=reason)


class _RefuseChannel:
    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def decide(self, requests: Any) -> list[Any]:
        from toolrig.approvals import ApprovalDecision

        return [ApprovalDecision("deny", self.reason) for _ in requests]
