"""Sampling answered by the run's own model (the providers' real SDKs against the scripted wire-protocol server):
a remote MCP server's request, through a real official-SDK MCP server (tests/support/mcp_relay_server.py), and
a tool's ``ctx.sample``; either way its tokens are the run's, counted in its usage and its budget."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pytest

from tests.agent.test_loop import tool_results
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.mcp_peers import ROOT
from tests.test_sampling import AskModel
from toolrig import tool
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


async def test_a_servers_sampling_during_one_runs_call_is_answered_by_that_runs_model_while_another_runs(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    """Two runs on one Rig and one server connection, with different models: run B starts (and samples) while
    run A waits in a call; A's own sampling request then goes to A's model. It went to the model of the run
    that started last: the model was set on the shared servers per run (issue 32)."""
    a_waits, b_done = anyio.Event(), anyio.Event()

    @tool
    async def checkpoint() -> str:
        """Wait until the other run is done."""
        a_waits.set()
        await b_done.wait()
        return "checkpoint passed"

    def responder(body: dict[str, Any]) -> Any:
        model, said = str(body.get("model")), json.dumps(body.get("messages"))
        if not body.get("tools"):  # the server's sampling request: answered by whichever model was asked
            return reply(Text(f"sampled by {model}"))
        if "sampled by" in said or 'is_error\\":true' in said:  # the summary came back (or failed): the answer
            return reply(Text(f"{model} done"))
        if model == "model-a" and "checkpoint passed" not in said:
            return reply(Call("call_a1", "checkpoint", "{}"))
        return reply(Call(f"call_{model}", "relay__summarize", '{"text": "a long text"}'))

    llm.responder = responder
    rig = make_rig(config=relay(sampling={"max_tokens": 50}), rig_options={"tools": [checkpoint]})
    results: dict[str, Any] = {}

    async def run(name: str) -> None:
        results[name] = await run_agent(f"Run {name}.", RunOptions(model=name), rig=rig)

    try:
        async with rig, anyio.create_task_group() as runs:
            runs.start_soon(run, "model-a")
            with anyio.fail_after(60):
                await a_waits.wait()
            await run("model-b")
            b_done.set()
    finally:
        llm.responder = None
    assert (results["model-a"].response, results["model-b"].response) == ("model-a done", "model-b done")
    # B sampled first (while A waited), then A: each request went to the model of the run whose call it was.
    assert [body["model"] for body in llm.bodies() if not body.get("tools")] == ["model-b", "model-a"]
    for name, other in (("model-a", "model-b"), ("model-b", "model-a")):
        [last] = [b for b in llm.bodies() if b.get("tools") and b["model"] == name and "sampled by" in json.dumps(b)]
        assert f"sampled by {name}" in json.dumps(last) and f"sampled by {other}" not in json.dumps(last)
