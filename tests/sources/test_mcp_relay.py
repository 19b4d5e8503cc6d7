"""A server's own requests, relayed: against an official-SDK server that elicits, samples, lists roots and
changes its tool list mid-run (tests/support/mcp_relay_server.py), through a real Rig and its approvals."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from tests.support.mcp_peers import ROOT
from toolrig.approvals import ApprovalDecision, ApprovalRequest
from toolrig.approvals.model import Reply
from toolrig.context import Sample
from toolrig.rig import Rig
from toolrig.sampling import ModelSource
from toolrig.scope import CallScope

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.servers]


class Person:
    """The user at the run's approval and question channel: answers by a rule, remembering each request.

    ``replies`` fills forms (the form's values); without them the question channel is left unanswered,
    as by a person who only approves, and the yes/no approval decides.
    """

    def __init__(self, elicitation: bool = True, replies: list[Reply] | None = None) -> None:
        self.elicitation = elicitation
        self.replies = replies
        self.asked: list[ApprovalRequest] = []

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        self.asked.extend(requests)
        decisions = []
        for r in requests:
            if r.kind == "question":
                answers = tuple(self.replies) if self.replies is not None else None
                decisions.append(ApprovalDecision("allow_once", answers=answers))
            elif r.tool.endswith("/elicitation") and not self.elicitation:
                decisions.append(ApprovalDecision("deny"))
            else:
                decisions.append(ApprovalDecision("allow_once"))
        return decisions

    def questions(self) -> list[ApprovalRequest]:
        return [r for r in self.asked if r.tool == "relay/elicitation"]

    def forms(self) -> list[ApprovalRequest]:
        return [r for r in self.asked if r.kind == "question"]


def relay_config(mode: str = "always", **settings: Any) -> dict[str, Any]:
    command = [sys.executable, str(ROOT / "tests" / "support" / "mcp_relay_server.py")]
    server = {"command": command[0], "args": command[1:], **settings}
    return {"approvals": {"mode": mode}, "mcp_servers": {"relay": server}}


async def call(rig: Rig, tool: str, args: dict[str, Any] | None = None) -> Any:
    result = await rig.call(f"relay/{tool}", args or {})
    text = result.raise_for_error()["text"]
    return json.loads(text) if text.startswith(("{", "[")) else text


async def test_a_servers_question_reaches_the_user_and_yes_sends_the_forms_defaults(workspace: Path) -> None:
    person = Person()
    async with Rig(workspace, config=relay_config(), approval_channel=person) as rig:
        answer = await call(rig, "confirm")
    assert answer == {"action": "accept", "data": {"proceed": True, "label": "tidy"}}
    [question] = person.questions()
    assert "Delete the build directory?" in " ".join(question.subjects)


async def test_a_person_at_the_question_channel_fills_the_servers_own_form_with_typed_values(
    workspace: Path,
) -> None:
    person = Person(replies=[Reply(values={"proceed": False, "label": "neat"})])
    async with Rig(workspace, config=relay_config(), approval_channel=person) as rig:
        answer = await call(rig, "confirm")
    assert answer == {"action": "accept", "data": {"proceed": False, "label": "neat"}}
    [form] = person.forms()
    assert "Delete the build directory?" in form.questions[0].question
    fields = (form.questions[0].form or {})["properties"]
    assert fields["proceed"]["type"] == "boolean" and fields["proceed"]["default"] is True  # as the server wrote it
    assert person.questions() == []  # answered in the form: no yes/no approval on top


async def test_a_field_only_a_person_could_fill_is_asked_and_sent(workspace: Path) -> None:
    person = Person(replies=[Reply(values={"name": "Ada"})])
    async with Rig(workspace, config=relay_config(), approval_channel=person) as rig:
        answer = await call(rig, "ask_name")
    assert answer == {"action": "accept", "data": {"name": "Ada"}}


class FormFiller:
    """An MCP client's user: allows the call's own approval, answers the server's form with ``values``
    (None: declines it), and keeps every form shown."""

    def __init__(self, values: dict[str, Any] | None) -> None:
        self.values = values
        self.shown: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        schema: Any = params.requested_schema  # type: ignore[union-attr]
        form = schema if isinstance(schema, dict) else schema.model_dump()
        self.shown.append((params.message, form))
        if "decision" in form["properties"]:  # toolrig's approval of the call itself
            return ElicitResult(action="accept", content={"decision": "allow_once"})
        if self.values is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=self.values)


@pytest.mark.parametrize("mode", ["always", "off"])
@pytest.mark.parametrize(
    ("tool", "values", "expected"),
    [
        ("ask_name", {"name": "Ada"}, {"action": "accept", "data": {"name": "Ada"}}),
        (
            "confirm",
            {"proceed": False, "label": "neat"},
            {"action": "accept", "data": {"proceed": False, "label": "neat"}},
        ),
        ("ask_name", None, {"action": "decline", "data": None}),
        ("ask_name", {"name": 7}, {"action": "decline", "data": None}),  # checked against the form, whoever answers
    ],
)
async def test_under_mcp_serve_the_servers_own_form_is_shown_to_the_client_that_made_the_call(
    workspace: Path, mode: str, tool: str, values: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    # A relayed question named no call, so `toolrig mcp serve` found no client to show it to: the form was
    # never seen, a field only a person could fill was declined, and with approvals on a yes/no stood in.
    from mcp import Client

    from toolrig.adapters.mcp_server import McpToolServer

    person = FormFiller(values)
    server = McpToolServer(Rig(workspace, config=relay_config(mode=mode)))
    async with server.running(), Client(server.server, elicitation_callback=person) as client:
        result = await client.call_tool(f"relay/{tool}", {})
    assert not result.is_error, result
    assert json.loads(json.loads(result.content[0].text)["text"]) == expected  # what the server got
    message, form = person.shown[-1]
    assert message.startswith("The MCP server 'relay' asks: ")
    assert set(form["properties"]) == ({"name"} if tool == "ask_name" else {"proceed", "label"})  # as written
    assert len(person.shown) == (2 if mode == "always" else 1)  # no yes/no approval stands in for the form


@pytest.mark.parametrize("values", [{}, {"name": 7}, {"name": "Ada", "admin": True}])
async def test_an_answer_that_does_not_fit_the_servers_form_declines(workspace: Path, values: dict[str, Any]) -> None:
    person = Person(replies=[Reply(values=values)])  # left empty, the wrong type, a field the form has not
    async with Rig(workspace, config=relay_config(), approval_channel=person) as rig:
        answer = await call(rig, "ask_name")
    assert answer["action"] == "decline"


async def test_no_from_the_user_declines_the_question(workspace: Path) -> None:
    person = Person(elicitation=False)
    async with Rig(workspace, config=relay_config(), approval_channel=person) as rig:
        answer = await call(rig, "confirm")
    assert answer["action"] == "decline"


async def test_with_approvals_off_a_question_gets_its_defaults_like_any_approval_but_never_a_blank(
    workspace: Path,
) -> None:
    async with Rig(workspace, config=relay_config(mode="off")) as rig:
        answer = await call(rig, "confirm")
        blank = await call(rig, "ask_name")
    assert answer["action"] == "accept"
    assert blank["action"] == "decline"


async def test_a_form_with_a_blank_only_a_person_could_fill_is_declined_without_asking(workspace: Path) -> None:
    person = Person()
    async with Rig(workspace, config=relay_config(), approval_channel=person) as rig:
        answer = await call(rig, "ask_name")
    assert answer["action"] == "decline"
    assert person.questions() == []


async def test_a_server_asking_for_roots_gets_none_unless_the_config_names_them(workspace: Path) -> None:
    """Issue 33 item 5: the workspace went out as a root, and a filesystem server read its deny-globbed .env."""
    async with Rig(workspace, config=relay_config(mode="off")) as rig:
        result = await rig.call("relay/roots", {})
    assert result.is_error, result.output
    assert workspace.resolve().as_uri() not in str(result.output) + (result.message or "")


async def test_configured_roots_are_sent_and_dot_is_the_workspace(workspace: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    async with Rig(workspace, config=relay_config(mode="off", roots=[str(shared), "."])) as rig:
        assert await call(rig, "roots") == [shared.as_uri(), workspace.resolve().as_uri()]


async def test_sampling_is_refused_unless_the_config_enables_it(workspace: Path) -> None:
    async with Rig(workspace, config=relay_config(mode="off")) as rig:
        result = await rig.call("relay/summarize", {"text": "a long text"})
    assert result.is_error
    assert "sampling" in (result.message or "").lower()


async def test_sampling_goes_to_the_runs_model_capped_approved_and_budgeted(workspace: Path) -> None:
    seen: list[tuple[str | None, list[tuple[str, str]], int]] = []

    async def model(turns: list[tuple[str, str]], max_tokens: int, system: str | None) -> Sample:
        seen.append((system, turns, max_tokens))
        return Sample("short.", "the-runs-model")

    person = Person()
    config = relay_config(sampling={"max_requests": 1, "max_tokens": 50})
    scope = CallScope(models=ModelSource(run=model))  # the caller's run brings its model with its calls
    async with Rig(workspace, config=config, approval_channel=person) as rig:
        result = (await rig.call("relay/summarize", {"text": "a long text"}, scope=scope)).raise_for_error()
        second = await rig.call("relay/summarize", {"text": "again"}, scope=scope)
        without = await rig.call("relay/summarize", {"text": "no run here"})
    first = json.loads(result["text"])
    assert first == {"text": "short.", "model": "the-runs-model"}
    assert seen == [("Be brief.", [("user", "Summarize: a long text")], 50)]  # the server asked for 5000
    assert any("wants the model to answer" in " ".join(r.subjects) for r in person.questions())
    assert second.is_error and "budget" in (second.message or "")
    assert without.is_error and "no model" in (without.message or "")  # a call with no run brings no model


async def test_a_changed_tool_list_is_reread_and_checked_against_what_the_user_trusted(workspace: Path) -> None:
    async with Rig(workspace, config=relay_config(mode="off")) as rig:
        assert rig.mcp_servers is not None
        relay = rig.mcp_servers.servers["relay"].relay
        await call(rig, "confirm")  # started
        notice = relay.changed
        assert await call(rig, "change") == "changed"
        with anyio.fail_after(30):  # the notice travels apart from the call's answer, in no set order
            await notice.wait()
        changed = await rig.call("relay/roots", {})  # its description changed: blocked until trusted
        gone = await rig.call("relay/ask_name", {})
        still = await rig.call("relay/confirm", {})
    assert changed.is_error and changed.error_type == "denied"
    assert "toolrig mcp trust relay" in (changed.next_action_hint or "")
    assert gone.is_error and gone.error_type == "not_found"
    assert still.is_error is False
