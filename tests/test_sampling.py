"""A tool asks a model through ``ctx.sample``: under ``toolrig mcp serve`` the official client's sampling callback
answers (sampling/createMessage), approved and capped; a client without sampling, or no model at all, is a clear
error result. (In an agent run the run's model answers: tests/agent/test_mcp_sampling.py.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.context import ClientRequestContext
from mcp.types import (
    INVALID_REQUEST,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    TextContent,
)

from toolrig import Tool, ToolContext, ToolInput, ToolOutput
from toolrig.rig import Rig
from toolrig.sampling import MAX_PER_CALL, MAX_TOKENS

pytestmark = pytest.mark.anyio


class AskIn(ToolInput):
    prompt: str
    max_tokens: int = 100
    times: int = 1


class Answered(ToolOutput):
    text: str
    model: str
    stop_reason: str


class AskModel(Tool[AskIn, Answered]):
    name = "ask_model"
    group = "test"
    description = "Asks the model a question."
    read_only = True

    async def execute(self, input: AskIn, ctx: ToolContext) -> Answered:
        for _ in range(input.times):
            sample = await ctx.sample(
                [("user", input.prompt), ("assistant", "Let me think."), ("user", "Go on.")],
                max_tokens=input.max_tokens,
                system="Be brief.",
            )
        return Answered(text=sample.text, model=sample.model, stop_reason=sample.stop_reason)


@asynccontextmanager
async def serving(workspace: Path, config: dict[str, Any] | None = None, **client: Any) -> AsyncIterator[Any]:
    """The official client (2025-era, so the server may send it requests mid-call) on our in-process server."""
    from mcp import Client

    from toolrig.adapters.mcp_server import McpToolServer

    server = McpToolServer(Rig(workspace, config=config or {}, tools=[AskModel()]))
    async with server.running(), Client(server.server, mode="legacy", **client) as connected:
        yield connected


def body(result: Any) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(result.content[0].text)
    return loaded


def the_client_model(seen: list[CreateMessageRequestParams]) -> Any:
    async def sample(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        seen.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="Forty-two."), model="client-model"
        )

    return sample


async def test_a_tools_sampling_request_goes_to_the_mcp_client_that_made_the_call(workspace: Path) -> None:
    seen: list[CreateMessageRequestParams] = []
    async with serving(workspace, sampling_callback=the_client_model(seen)) as client:
        result = await client.call_tool("ask_model", {"prompt": "What is six times seven?"})
    assert result.is_error is False, result.content
    assert result.structured_content == {"text": "Forty-two.", "model": "client-model", "stop_reason": "endTurn"}
    [params] = seen
    assert [(m.role, m.content.text) for m in params.messages] == [  # type: ignore[union-attr]
        ("user", "What is six times seven?"),
        ("assistant", "Let me think."),
        ("user", "Go on."),
    ]
    assert params.max_tokens == 100 and params.system_prompt == "Be brief."


async def test_a_client_without_sampling_gets_an_error_result_the_model_can_act_on(workspace: Path) -> None:
    async with serving(workspace) as client:
        result = await client.call_tool("ask_model", {"prompt": "Hello?"})
    assert result.is_error is True
    error = body(result)
    assert error["error_type"] == "unavailable"
    assert "does not support sampling" in error["message"]
    assert error["next_action_hint"]


async def test_a_client_that_refuses_to_sample_is_the_tools_error_with_the_clients_reason(workspace: Path) -> None:
    async def refuse(context: ClientRequestContext, params: CreateMessageRequestParams) -> ErrorData:
        return ErrorData(code=INVALID_REQUEST, message="the user rejected the sampling request")

    async with serving(workspace, sampling_callback=refuse) as client:
        result = await client.call_tool("ask_model", {"prompt": "Hello?"})
    assert result.is_error is True
    assert "the user rejected the sampling request" in body(result)["message"]


async def test_sampling_is_approved_first_and_a_refusal_never_reaches_the_model(workspace: Path) -> None:
    seen: list[CreateMessageRequestParams] = []
    asked: list[str] = []
    answers = iter(["allow_once", "deny"])  # the call itself, then its sampling request

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"decision": next(answers)})

    config = {"approvals": {"mode": "always"}}
    async with serving(
        workspace, config, sampling_callback=the_client_model(seen), elicitation_callback=person
    ) as client:
        result = await client.call_tool("ask_model", {"prompt": "Summarize the secrets."})
    assert result.is_error is True
    assert body(result)["error_type"] == "denied"
    assert seen == []
    assert "ask_model/sampling" in asked[1] and "Go on." in asked[1]


async def test_a_call_asks_a_model_a_bounded_number_of_times_for_a_bounded_answer(workspace: Path) -> None:
    seen: list[CreateMessageRequestParams] = []
    async with serving(workspace, sampling_callback=the_client_model(seen)) as client:
        too_long = await client.call_tool("ask_model", {"prompt": "Write a book.", "max_tokens": MAX_TOKENS + 1})
        too_many = await client.call_tool("ask_model", {"prompt": "Again.", "times": MAX_PER_CALL + 1})
        fine = await client.call_tool("ask_model", {"prompt": "Once more.", "times": MAX_PER_CALL})
    assert body(too_long)["error_type"] == "invalid_input"
    assert body(too_many)["error_type"] == "rate_limited"
    assert fine.is_error is False
    assert len(seen) == 2 * MAX_PER_CALL


async def test_with_no_client_and_no_agent_run_there_is_no_model_to_ask(workspace: Path) -> None:
    async with Rig(workspace, config={}, tools=[AskModel()]) as rig:
        result = await rig.call("ask_model", {"prompt": "Hello?"})
    assert result.is_error and result.error_type == "unavailable"
    assert "No model can be asked here" in (result.message or "")
