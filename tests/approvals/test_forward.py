"""FirstAnswer: each request is decided by the first person who answers it; a stand-in never outweighs one."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.approvals import ApprovalDecision, ApprovalRequest
from toolrig.approvals.channel import NobodyHere
from toolrig.approvals.forward import FirstAnswer

pytestmark = pytest.mark.anyio


def requests(count: int) -> list[ApprovalRequest]:
    return [ApprovalRequest(f"r{i}", "run_command", {"command": str(i)}) for i in range(count)]


class Scripted:
    """A channel that answers with fixed decisions once ``after`` is set (None: at once)."""

    def __init__(self, answers: Sequence[ApprovalDecision] | None, after: anyio.Event | None = None) -> None:
        self.answers = answers
        self.after = after
        self.done = anyio.Event()

    async def decide(self, batch: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        if self.after is not None:
            await self.after.wait()
        self.done.set()
        if self.answers is None:
            raise NobodyHere("nobody")
        return list(self.answers)


def person(verdict: str) -> ApprovalDecision:
    return ApprovalDecision(verdict, "a person")  # type: ignore[arg-type]


def stand_in(verdict: str) -> ApprovalDecision:
    return ApprovalDecision(verdict, "nobody to ask", by_default=True)  # type: ignore[arg-type]


async def test_a_stand_in_in_a_mixed_batch_never_outweighs_a_persons_answer_elsewhere() -> None:
    """Review F9: MCP answers r1 from a person and r2 by default (allow); Telegram's person denies both."""
    mcp = Scripted([person("deny"), stand_in("allow_once")])
    telegram = Scripted([person("deny"), person("deny")], after=mcp.done)
    decided = await FirstAnswer([mcp, telegram]).decide(requests(2))
    assert [d.verdict for d in decided] == ["deny", "deny"]
    assert not any(d.by_default for d in decided)


verdicts = st.sampled_from(["allow_once", "allow_always", "deny"])
answer = st.tuples(st.booleans(), verdicts)  # (by default?, verdict)


@settings(max_examples=60, deadline=None)
@given(script=st.lists(st.lists(answer, min_size=3, max_size=3), min_size=1, max_size=4))
async def test_each_request_gets_the_first_persons_answer_else_the_first_stand_in(
    script: list[list[tuple[bool, str]]],
) -> None:
    channels: list[Scripted] = []
    for answers in script:  # channel k answers after channel k-1: the order of answers is the script's
        decisions = [stand_in(v) if default else person(v) for default, v in answers]
        channels.append(Scripted(decisions, after=channels[-1].done if channels else None))
    decided = await FirstAnswer(channels).decide(requests(3))
    for index, got in enumerate(decided):
        column = [answers[index] for answers in script]
        people = [v for default, v in column if not default]
        expected = (False, people[0]) if people else (True, column[0][1])
        assert (got.by_default, got.verdict) == expected


async def test_when_no_channel_can_ask_anyone_the_broker_hears_so() -> None:
    with pytest.raises(NobodyHere):
        await FirstAnswer([Scripted(None), Scripted(None)]).decide(requests(1))
