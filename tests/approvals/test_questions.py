"""ask_user's questions: read in every spelling, answered through the one channel protocol, never a hang."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.approvals import ApprovalDecision, ApprovalRequest, CallbackChannel
from toolrig.approvals.model import Choice, Question, Reply
from toolrig.approvals.questions import elicitation_schema, replies_from, replies_from_form, reply_from
from toolrig.events import Event
from toolrig.rig import Rig

DB = {
    "question": "Which database?",
    "header": "Database",
    "options": [{"label": "PostgreSQL", "description": "the server"}, {"label": "SQLite"}],
}


def answering(*replies: Reply, asked: list[ApprovalRequest] | None = None) -> CallbackChannel:
    async def decide(request: ApprovalRequest) -> ApprovalDecision:
        if asked is not None:
            asked.append(request)
        return ApprovalDecision("allow_once", answers=replies, fingerprint=request.fingerprint)

    return CallbackChannel(decide)


def test_a_question_is_asked_through_the_rigs_channel_and_the_answer_comes_back(workspace: Path) -> None:
    asked: list[ApprovalRequest] = []
    events: list[Event] = []
    rig = Rig(workspace, approval_channel=answering(Reply(("SQLite",)), asked=asked))
    rig.events.subscribe(events.append)
    result = rig.call_sync("ask_user", {"questions": [DB]})
    assert result.output == {"answers": [{"selected": ["SQLite"], "other_text": None}], "skipped": False}
    [request] = asked
    assert request.kind == "question" and request.tool == "ask_user" and request.fingerprint
    assert request.questions[0].options == (Choice("PostgreSQL", "the server"), Choice("SQLite"))
    assert [e.type for e in events if e.type.startswith("approval")] == ["approval_request", "approval_resolved"]


def test_the_seed_spelling_is_accepted_for_questions_and_answers(workspace: Path) -> None:
    seed = {"question": "Pick", "options": ["a", "b", "c"], "allowMultipleOptions": True, "allowOtherText": True}
    asked: list[ApprovalRequest] = []
    rig = Rig(workspace, approval_channel=answering(Reply(("a", "c"), "and d"), asked=asked))
    result = rig.call_sync("ask_user", {"questions": [seed]})
    assert result.output["answers"] == [{"selected": ["a", "c"], "other_text": "and d"}]
    question = asked[0].questions[0]
    assert question.allow_multiple and question.allow_other_text and [c.label for c in question.options] == list("abc")
    assert reply_from({"selectedOption": "b"}, question) == Reply(("b",))
    assert reply_from({"selectedOptions": ["c", "a"], "otherText": "x"}, question) == Reply(("c", "a"), "x")


@pytest.mark.parametrize("approvals", [{"mode": "off"}, {"mode": "smart"}, {"mode": "smart", "fallback": "allow"}])
def test_nobody_to_ask_means_skipped_whatever_the_approval_settings(workspace: Path, approvals: Any) -> None:
    result = Rig(workspace, config={"approvals": approvals}).call_sync("ask_user", {"questions": [DB]})
    assert result.output == {"answers": [{"selected": None, "other_text": None}], "skipped": True}


def test_under_approvals_always_the_question_itself_needs_approval_and_no_channel_denies_it(workspace: Path) -> None:
    result = Rig(workspace, config={"approvals": {"mode": "always"}}).call_sync("ask_user", {"questions": [DB]})
    assert result.is_error and result.error_type == "denied"  # a clear refusal, never a wait


def test_no_answer_within_the_timeout_is_skipped_not_a_hang(workspace: Path) -> None:
    async def never(request: ApprovalRequest) -> ApprovalDecision:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    config = {"approvals": {"timeout_seconds": 0.2, "fallback": "allow"}}
    rig = Rig(workspace, config=config, approval_channel=CallbackChannel(never))

    async def ask() -> Any:
        with anyio.fail_after(30):  # the bound is the test's safety net; the 0.2 s timeout must answer first
            return await rig.call("ask_user", {"questions": [DB]})

    result = anyio.run(ask)
    assert result.output["skipped"] is True


def test_an_answer_bound_to_other_questions_is_refused(workspace: Path) -> None:
    async def forged(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision("allow_once", answers=(Reply(("SQLite",)),), fingerprint="0" * 32)

    result = Rig(workspace, approval_channel=CallbackChannel(forged)).call_sync("ask_user", {"questions": [DB]})
    assert result.output["skipped"] is True


def test_answers_that_do_not_fit_the_question_are_cut_down_to_what_it_allows(workspace: Path) -> None:
    hostile = Reply(("SQLite", "DROP TABLE", "PostgreSQL"), "typed although no free text is allowed")
    result = Rig(workspace, approval_channel=answering(hostile)).call_sync("ask_user", {"questions": [DB]})
    assert result.output["answers"] == [{"selected": ["SQLite"], "other_text": None}]  # one pick, a real option


def test_bad_questions_are_invalid_input_with_a_hint(workspace: Path) -> None:
    rig = Rig(workspace)
    for bad in ({"questions": []}, {"questions": [{"question": "x", "options": ["a", "a"]}]}, {"questions": "x"}):
        result = rig.call_sync("ask_user", bad)
        assert result.is_error and result.error_type == "invalid_input" and result.next_action_hint


labels = st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=5, unique=True)


@given(labels, st.booleans(), st.booleans(), st.lists(st.text(max_size=5), max_size=6), st.none() | st.text())
def test_any_answer_is_kept_only_as_far_as_its_question_allows(
    options: list[str], multiple: bool, other: bool, picked: list[str], text: str | None
) -> None:
    question = Question("q", options=tuple(Choice(o) for o in options), allow_multiple=multiple, allow_other_text=other)
    reply = reply_from({"selected": picked, "other_text": text}, question)
    assert set(reply.selected) <= set(options) and len(reply.selected) <= (len(options) if multiple else 1)
    assert reply.other_text is None or (other and reply.other_text.strip())
    assert replies_from([{"selected": picked}], [question, question]) is None  # one answer per question, or none


def test_the_elicitation_form_is_built_from_the_options_and_read_back() -> None:
    single = Question("Which?", "DB", (Choice("PostgreSQL"), Choice("SQLite")))
    several = Question("Which ones?", options=(Choice("a"), Choice("b")), allow_multiple=True, allow_other_text=True)
    free = Question("Anything else?")
    schema = elicitation_schema([single, several, free])
    props = schema["properties"]
    assert props["q1"]["oneOf"] == [
        {"const": "PostgreSQL", "title": "PostgreSQL"},
        {"const": "SQLite", "title": "SQLite"},
    ]
    assert props["q2"]["type"] == "array" and "q2_other" in props and props["q3_other"]["type"] == "string"
    replies = replies_from_form(
        {"q1": "SQLite", "q2": ["b", "zzz"], "q2_other": "c", "q3_other": "no"}, [single, several, free]
    )
    assert replies == (Reply(("SQLite",)), Reply(("b",), "c"), Reply((), "no"))
