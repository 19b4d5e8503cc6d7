"""Forwarding: the same requests also go to a person who is away (Telegram, a webhook); the first answer wins.

Trust model: the remote channels come from trusted config only (an untrusted workspace cannot set
``approvals.forward``); each binds its answers to the exact request (a single-use id, the request's
fingerprint) and reports the answers it refuses (forged, replayed, late, badly signed), which the Rig
writes to the audit log.

``FirstAnswer`` asks every channel at once. A person's answer from any of them wins and the others are
cancelled (the terminal prompt stops, the Telegram message is marked expired). A channel that has nobody
to ask answers ``by_default`` at once (an MCP client without elicitation): that stand-in is used only if no
person answers anywhere. The broker's timeout and fallback hold for the whole race, as for one channel.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio

from toolrig.approvals.channel import ApprovalChannel, NobodyHere
from toolrig.approvals.model import ApprovalDecision, ApprovalRequest

log = logging.getLogger("toolrig.approvals.forward")


class FirstAnswer:
    """An ``ApprovalChannel`` that asks several channels at once and keeps the first person's answer."""

    def __init__(self, channels: Sequence[ApprovalChannel]) -> None:
        self.channels = list(channels)

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        winner: list[ApprovalDecision] | None = None
        stand_in: list[ApprovalDecision] | None = None

        async def ask(channel: ApprovalChannel, scope: anyio.CancelScope) -> None:
            nonlocal winner, stand_in
            try:
                decided = list(await channel.decide(requests))
            except NobodyHere:
                return
            except Exception:
                log.exception("an approval channel failed; the others may still answer")
                return
            if len(decided) != len(requests):
                log.error("an approval channel answered %d of %d requests", len(decided), len(requests))
                return
            if all(d.by_default for d in decided):
                stand_in = stand_in or decided
                return
            if winner is None:
                winner = decided
                scope.cancel()  # a person answered: stop asking everywhere else

        async with anyio.create_task_group() as group:
            for channel in self.channels:
                group.start_soon(ask, channel, group.cancel_scope)
        if winner is not None:
            return winner
        if stand_in is not None:
            return stand_in
        raise NobodyHere("no channel could ask anyone")
