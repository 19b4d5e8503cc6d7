"""The MCP approval channel on its own: fallbacks, reading answers, and calls parked across rounds."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import ElicitResult

from toolrig.approvals import ApprovalDecision, ApprovalRequest
from toolrig.approvals.mcp import (
    DECISION_SCHEMA,
    McpApprovalChannel,
    ParkedCall,
    decision_from,
    elicit_request,
    question,
)
from toolrig.result import ToolResult

pytestmark = pytest.mark.anyio

REQUEST = ApprovalRequest(
    id="r1", tool="write_file", args={"path": "a.txt", "content": "x"}, subjects=("a.txt",), reason="It writes."
)


@pytest.mark.parametrize(("fallback", "verdict"), [("deny", "deny"), ("allow", "allow_once")])
async def test_without_an_asking_client_the_fallback_answers_every_request(fallback: Any, verdict: str) -> None:
    decisions = await McpApprovalChannel(fallback).decide([REQUEST, REQUEST])
    assert [d.verdict for d in decisions] == [verdict, verdict]
    assert all(d.reason for d in decisions)


class Answers:
    """A client's user who answers every question the same way, and remembers what was asked."""

    def __init__(self, verdict: Any) -> None:
        self.verdict = verdict
        self.asked: list[str] = []

    async def ask(self, requests: Any) -> list[ApprovalDecision]:
        self.asked.extend(r.id for r in requests)
        return [ApprovalDecision(self.verdict, "asked") for _ in requests]


def request(call_id: str) -> ApprovalRequest:
    return ApprovalRequest(id=call_id, tool="write_file", args={"path": call_id})


async def test_a_batch_is_split_so_each_client_is_asked_only_about_its_own_calls() -> None:
    """Each call brings its client's channel; the broker asks each channel only about its own requests."""
    from toolrig.approvals.broker import ApprovalBroker
    from toolrig.event_bus import NullSink

    broker = ApprovalBroker(None, batch_window=0)
    alice, bob = Answers("allow_once"), Answers("allow_always")
    channels = {"c1": alice, "c2": bob, "c3": alice, "c4": None}
    decided: dict[str, str] = {}

    async def one(call_id: str) -> None:
        channel = McpApprovalChannel("deny", channels[call_id])
        answer = await broker.decide(request(call_id), NullSink(), channel)
        decided[call_id] = answer.decision.verdict

    async with anyio.create_task_group() as group:
        for call_id in channels:
            group.start_soon(one, call_id)
    assert decided == {"c1": "allow_once", "c2": "allow_always", "c3": "allow_once", "c4": "deny"}
    assert (sorted(alice.asked), bob.asked) == (["c1", "c3"], ["c2"])


async def test_a_call_whose_client_cannot_ask_gets_the_fallback() -> None:
    [decision] = await McpApprovalChannel("allow").decide([request("c1")])
    assert decision.verdict == "allow_once" and "cannot ask" in decision.reason


def test_the_question_names_the_tool_its_subjects_reason_and_arguments() -> None:
    text = question(REQUEST)
    assert "'write_file'" in text and "a.txt" in text and "It writes." in text and '"content": "x"' in text
    assert len(question(ApprovalRequest(id="r", tool="t", args={"x": "y" * 10_000}))) < 2_200


def test_the_elicitation_asks_for_one_of_three_decisions() -> None:
    request = elicit_request(REQUEST)
    assert request.method == "elicitation/create"
    options = DECISION_SCHEMA["properties"]["decision"]["oneOf"]
    assert [o["const"] for o in options] == ["allow_once", "allow_always", "deny"]


@given(
    st.sampled_from(["accept", "decline", "cancel"]),
    st.one_of(st.none(), st.dictionaries(st.sampled_from(["decision", "other"]), st.text(max_size=15), max_size=2)),
)
def test_only_an_accepted_well_formed_answer_allows_anything(action: str, content: dict[str, str] | None) -> None:
    decision = decision_from(ElicitResult(action=action, content=content))  # type: ignore[arg-type]
    valid = action == "accept" and content is not None and content.get("decision") in ("allow_once", "allow_always")
    assert (decision.verdict != "deny") is valid
    assert decision_from(ElicitResult(action=action, content=content).model_dump()) == decision  # type: ignore[arg-type]


async def test_a_parked_call_asks_then_resumes_with_the_answer() -> None:
    parked = ParkedCall("fp", timeout_seconds=30)
    asked: list[ApprovalDecision] = []

    channel = McpApprovalChannel("deny", parked)

    async def call() -> ToolResult:
        asked.extend(await channel.decide([REQUEST]))
        return ToolResult.ok({"done": True})

    async with anyio.create_task_group() as group:
        group.start_soon(parked.run, call)
        assert await parked.next() == "questions"
        assert list(parked.questions) == ["r1"]
        parked.answer({"r1": ElicitResult(action="accept", content={"decision": "allow_once"}), "other": None})
        assert await parked.next() == "done"
    assert [d.verdict for d in asked] == ["allow_once"]
    assert parked.result is not None and parked.result.output == {"done": True}


async def test_a_parked_call_nobody_answers_is_denied_after_its_timeout() -> None:
    parked = ParkedCall("fp", timeout_seconds=0.01)
    asked: list[ApprovalDecision] = []

    channel = McpApprovalChannel("allow", parked)

    async def call() -> ToolResult:
        asked.extend(await channel.decide([REQUEST]))
        return ToolResult.ok({})

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(parked.run, call)
            assert await parked.next() == "questions"
            assert await parked.next() == "done"
    assert asked[0].verdict == "deny" and "in time" in asked[0].reason


async def test_cancelling_the_waiting_round_cancels_the_parked_call() -> None:
    parked = ParkedCall("fp", timeout_seconds=30)
    finished = anyio.Event()

    async def call() -> ToolResult:
        try:
            await anyio.sleep_forever()
        finally:
            finished.set()
        raise AssertionError("unreachable")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(parked.run, call)
            with anyio.CancelScope() as round_scope:
                round_scope.cancel()  # the client gave up on this round
                await parked.next()
            await finished.wait()
    assert parked.result is None
