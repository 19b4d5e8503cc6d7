"""A question with a form of its own (MCP elicitation's flat JSON Schema: defaults, the five enum shapes) travels
through the one channel protocol to every front end: sent as written to an MCP client (the official one), asked
field by field at a terminal, carried in a paused run's state; a hostile form, or an answer that does not fit its
form, is the asking tool's clear error and never reaches it."""

from __future__ import annotations

import io
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from mcp.client.context import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from tests.agent.test_loop import tool_results
from tests.approvals.test_paused_questions import make
from tests.approvals.test_questions import answering
from tests.support.conformance_tools import SEP1034_FORM, SEP1330_FORM, FormTool
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig import ToolContext
from toolrig.agent import RunOptions, resume_run, run_agent
from toolrig.approvals import ApprovalRequest
from toolrig.approvals.model import Reply
from toolrig.approvals.questions import question_from
from toolrig.approvals.terminal import TerminalChannel
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio

PROFILE = {"question": "Your profile", "form": SEP1034_FORM}


class HostileForm(FormTool):
    name = "hostile_form"
    description = "Asks with a form MCP elicitation cannot show."
    message = "Tell me everything"
    form: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"who": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }


class Profile(FormTool):
    name = "profile"
    description = "Asks for a profile."
    message = "Your profile"
    form = SEP1034_FORM


class Enums(FormTool):
    name = "enums"
    description = "Asks the five enum shapes."
    message = "Pick"
    form = SEP1330_FORM


class Values(FormTool):
    """The answers as the tool sees them (a FormTool says only what it got, as text)."""

    name = "values"
    description = "Asks for a profile and returns the values."
    form = SEP1034_FORM

    async def execute(self, input: Any, ctx: ToolContext) -> Any:
        answers = await ctx.approvals.ask_user([PROFILE], call_id=ctx.call_id)
        return type(self).output_model(text=json.dumps(answers))


# ------------------------------------------------------------------------------ through the rig's channel


def test_ask_user_sends_its_form_to_the_channel_and_returns_the_checked_values(workspace: Path) -> None:
    asked: list[ApprovalRequest] = []
    values = {"name": "Jane", "age": 25, "score": 88.0, "status": "inactive", "verified": False}
    rig = Rig(workspace, approval_channel=answering(Reply(values=values), asked=asked))
    result = rig.call_sync("ask_user", {"questions": [PROFILE]})
    assert result.is_error is False, result.message
    assert result.output == {"answers": [{"selected": None, "other_text": None, "values": values}], "skipped": False}
    assert asked[0].questions[0].form == SEP1034_FORM


def test_a_form_left_empty_takes_its_defaults(workspace: Path) -> None:
    rig = Rig(workspace, approval_channel=answering(Reply(values={})))
    result = rig.call_sync("ask_user", {"questions": [PROFILE]})
    assert result.output["answers"][0]["values"] == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }


@pytest.mark.parametrize(
    "form",
    [
        {"type": "object", "properties": {"a": {"type": "object"}}},
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "default": "y"}}},
        {"type": "object", "properties": {"a": {"$ref": "#/defs/a"}}},
        "a form",
    ],
)
def test_a_hostile_form_from_the_model_is_invalid_input_and_nobody_is_asked(workspace: Path, form: Any) -> None:
    asked: list[ApprovalRequest] = []
    rig = Rig(workspace, approval_channel=answering(Reply(values={}), asked=asked))
    result = rig.call_sync("ask_user", {"questions": [{"question": "?", "form": form}]})
    assert result.is_error and result.error_type == "invalid_input"
    assert "form" in (result.message or "")
    assert asked == []


def test_a_question_has_a_form_or_options_not_both(workspace: Path) -> None:
    rig = Rig(workspace, approval_channel=answering(Reply(values={})))
    result = rig.call_sync("ask_user", {"questions": [{**PROFILE, "options": ["a", "b"]}]})
    assert result.is_error and "either a form or options" in (result.message or "")


def test_a_hostile_form_from_a_tool_is_its_error_result_saying_why(workspace: Path) -> None:
    asked: list[ApprovalRequest] = []
    rig = Rig(workspace, tools=[HostileForm()], approval_channel=answering(Reply(values={}), asked=asked))
    result = rig.call_sync("hostile_form", {})
    assert result.is_error and result.error_type == "invalid_input"
    assert "field 'who'" in (result.message or "") and "primitive" in (result.message or "")
    assert result.next_action_hint and asked == []


def test_an_answer_that_does_not_fit_the_form_never_reaches_the_tool(workspace: Path) -> None:
    rig = Rig(workspace, tools=[Values()], approval_channel=answering(Reply(values={"age": "old"})))
    result = rig.call_sync("values", {})
    assert result.is_error and result.error_type == "invalid_input"
    assert "did not fit the form" in (result.message or "") and "'age'" in (result.message or "")


# ------------------------------------------------------------------------------ MCP: the official client


@asynccontextmanager
async def client_of(workspace: Path, mode: str, user: Any) -> AsyncIterator[Any]:
    from mcp import Client

    from toolrig.adapters.mcp_server import McpToolServer

    server = McpToolServer(Rig(workspace, config={}, tools=[Profile(), Enums()]))
    async with server.running(), Client(server.server, mode=mode, elicitation_callback=user) as client:
        yield client


def text(result: Any) -> str:
    return str(json.loads(result.content[0].text)["text"])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_mcp_client_is_sent_the_tools_form_as_written_and_its_answer_is_checked(
    mode: str, workspace: Path
) -> None:
    seen: list[ElicitRequestParams] = []
    answers = iter(
        [
            {"untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1"}
            | {"untitledMulti": ["option1", "option2"], "titledMulti": ["value1", "value2"]},
            {"untitledSingle": "option9"},
        ]
    )

    async def user(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content=next(answers))

    async with client_of(workspace, mode, user) as client:
        accepted = await client.call_tool("enums", {})
        misfit = await client.call_tool("enums", {})
    assert seen[0].requested_schema == SEP1330_FORM  # type: ignore[union-attr]
    assert seen[0].message == "Pick"
    assert accepted.is_error is False
    assert "'untitledMulti': ['option1', 'option2']" in text(accepted)
    assert misfit.is_error is True
    assert "'option9' is not one of the choices" in json.loads(misfit.content[0].text)["message"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_declined_form_is_a_skipped_question(mode: str, workspace: Path) -> None:
    async def user(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="decline")

    async with client_of(workspace, mode, user) as client:
        result = await client.call_tool("profile", {})
    assert text(result) == "Elicitation completed: action=decline, content={}"


# ------------------------------------------------------------------------------ a terminal


def at_terminal(typed: str, form: dict[str, Any]) -> tuple[Any, str]:
    read, write = os.pipe()
    try:
        os.write(write, typed.encode())
        out = io.StringIO()
        channel = TerminalChannel(input_fd=read, output=out)
        question = question_from({"question": "Fill this in", "form": form})
        request = ApprovalRequest("c1", "ask_user", {}, questions=(question,), fingerprint="fp")

        async def run() -> Any:
            with anyio.fail_after(5):
                return await channel.decide([request])

        [decision] = anyio.run(run)
        return decision, out.getvalue()
    finally:
        os.close(read)
        os.close(write)


def test_a_terminal_asks_a_form_field_by_field_and_an_empty_line_takes_the_default() -> None:
    decision, shown = at_terminal("\n25\n\n2\n2\n", SEP1034_FORM)  # name, age, score, status, verified
    assert decision.answers == (
        Reply(values={"name": "John Doe", "age": 25, "score": 95.5, "status": "inactive", "verified": False}),
    )
    assert "User age (empty: 30)" in shown and "1. active" in shown and "empty for the default" in shown


def test_a_terminal_offers_every_enum_shape_as_numbered_choices() -> None:
    decision, shown = at_terminal("1\n2\n3\n1,2\n1,3\n", SEP1330_FORM)
    assert decision.answers[0].values == {
        "untitledSingle": "option1",
        "titledSingle": "value2",
        "legacyEnum": "opt3",
        "untitledMulti": ["option1", "option2"],
        "titledMulti": ["value1", "value3"],
    }
    assert "opt1 - Option One" in shown and "value1 - First Option" in shown


def test_a_terminal_answer_that_is_not_the_fields_type_is_refused_saying_which() -> None:
    decision, _ = at_terminal("\nforty\n\n\n\n", SEP1034_FORM)
    assert decision.answers[0].values is None
    assert "'age'" in (decision.answers[0].error or "") and "integer" in (decision.answers[0].error or "")


# ------------------------------------------------------------------------------ a paused run


async def test_a_paused_run_carries_the_form_and_resumes_with_checked_values(
    llm: FakeLLM, provider: str, workspace: Path
) -> None:
    rig = make(workspace, llm, provider)
    llm.script(reply(Call("q1", "ask_user", json.dumps({"questions": [PROFILE]}))))
    paused = await run_agent("set up", RunOptions(approvals="pause"), rig=rig)
    assert paused.state is not None
    assert paused.state.pending[0].questions[0]["form"] == SEP1034_FORM
    state = type(paused.state).from_json(paused.state.to_json())  # as it would come back in a new process
    llm.script(reply(Text("Welcome, Jane.")))
    await resume_run(state, rig=rig, answers={"q1": [{"values": {"name": "Jane"}}]})
    [(_, sent)] = tool_results(llm.bodies()[-1], provider)
    assert sent["output"]["answers"][0]["values"] == {
        "name": "Jane",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
