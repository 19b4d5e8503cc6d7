"""Forwarding: the same requests also go to a person who is away (Telegram, a webhook); the first answer wins.

Trust model: the remote channels come from trusted config only (an untrusted workspace cannot set
``approvals.forward``); each binds its answers to the exact request (a single-use id, the request's
fingerprint) and reports the answers it refuses (forged, replayed, late, badly signed), which the Rig
writes to the audit log.

``FirstAnswer`` asks every channel at once. Each request is decided by the first person to answer it, on
any channel; once every request has a person's answer the others are cancelled (the terminal prompt stops,
the Telegram message is marked expired). A channel that has nobody to ask answers ``by_default`` at once
(an MCP client without elicitation): that stand-in is used for a request only if no person answers that
request anywhere, so a default answer in a batch never outweighs a person's answer to the same call. The
broker's timeout and fallback hold for the whole race, as for one channel.
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
        people: list[ApprovalDecision | None] = [None] * len(requests)
        stand_ins: list[ApprovalDecision | None] = [None] * len(requests)
        answered = False

        async def ask(channel: ApprovalChannel, scope: anyio.CancelScope) -> None:
            nonlocal answered
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
            answered = True
            for index, decision in enumerate(decided):
                slot = stand_ins if decision.by_default else people
                slot[index] = slot[index] or decision
            if all(people):
                scope.cancel()  # a person answered every request: stop asking everywhere else

        async with anyio.create_task_group() as group:
            for channel in self.channels:
                group.start_soon(ask, channel, group.cancel_scope)
        if not answered:
            raise NobodyHere("no channel could ask anyone")
        return [
            person or stand_in or ApprovalDecision("deny", "no channel answered this request")
            for person, stand_in in zip(people, stand_ins, strict=True)
        ]
