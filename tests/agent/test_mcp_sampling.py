"""Sampling answered by the run's own model (the providers' real SDKs against the scripted wire-protocol server):
a remote MCP server's request, through a real official-SDK MCP server (tests/support/mcp_relay_server.py), and
a tool's ``ctx.sample``; either way its tokens are the run's, counted in its usage and its budget."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.agent.test_loop import tool_results
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.mcp_peers import ROOT
from tests.test_sampling import AskModel
from toolrig.agent import RunOptions, run_agent
from toolrig.agent.errors import RunError

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.servers]


def relay(**settings: Any) -> dict[str, Any]:
    command = [sys.executable, str(ROOT / "tests" / "support" / "mcp_relay_server.py")]
    server = {"command": command[0], "args": command[1:], **settings}
    return {"approvals": {"mode": "off"}, "mcp_servers": {"relay": server}}


async def test_a_servers_sampling_request_is_answered_by_the_runs_model_without_tools_and_capped(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    llm.script(
        reply(Call("call_1", "relay__summarize", '{"text": "a long text"}')),
        reply(Text("short.")),  # the answer to the server's sampling request
        reply(Text("Done.")),
    )
    rig = make_rig(config=relay(sampling={"max_tokens": 50}))
    async with rig:
        result = await run_agent("Summarize it with the relay tool.", rig=rig)
    assert result.response == "Done."
    sampling = llm.bodies()[1]
    assert sampling.get("max_tokens", sampling.get("max_completion_tokens")) == 50  # the server asked for 5000
    assert not sampling.get("tools")
    assert "Summarize: a long text" in json.dumps(sampling)
    assert "Be brief." in json.dumps(sampling)
    assert "short." in json.dumps(llm.bodies()[2])  # the tool result the model saw carries the sampled text
    assert (result.usage.input, result.usage.output) == (300, 60)  # three model calls: the sampling one counts


async def test_a_tools_sampling_is_answered_by_the_runs_model_and_its_tokens_are_the_runs(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    llm.script(
        reply(Call("call_1", "ask_model", '{"prompt": "What is six times seven?"}')),
        reply(Text("Forty-two."), usage=(1000, 500, 0, 0)),  # the tool's sampling request
        reply(Text("It is 42.")),
    )
    price = {"input": 1.0, "output": 2.0}
    result = await run_agent("Ask the model.", rig=make_rig(price=price, rig_options={"tools": [AskModel()]}))
    assert result.response == "It is 42."
    sampling = llm.bodies()[1]
    assert not sampling.get("tools")
    assert sampling.get("max_tokens", sampling.get("max_completion_tokens")) == 100
    assert "What is six times seven?" in json.dumps(sampling) and "Be brief." in json.dumps(sampling)
    [(_, sent)] = tool_results(llm.bodies()[2], provider)
    assert sent["output"]["text"] == "Forty-two."
    assert (result.usage.input, result.usage.output) == (1200, 540)
    assert result.usage.cost_usd == pytest.approx((1200 * 1.0 + 540 * 2.0) / 1_000_000)


async def test_sampling_that_spends_the_budget_stops_the_run_before_another_model_call(
    llm: FakeLLM, make_rig: Any
) -> None:
    llm.script(
        reply(Call("call_1", "ask_model", '{"prompt": "Write a lot.", "times": 2}')),
        reply(Text("A lot."), usage=(1_000_000, 0, 0, 0)),  # the first sampling request spends $1
    )
    rig = make_rig(price={"input": 1.0, "output": 1.0}, rig_options={"tools": [AskModel()]})
    with pytest.raises(RunError) as caught:
        await run_agent("Ask twice.", RunOptions(max_budget_usd=0.5), rig=rig)
    assert caught.value.kind == "budget" and "$1.0001" in caught.value.message
    assert len(llm.bodies()) == 2  # the second sampling request and the next turn were refused
