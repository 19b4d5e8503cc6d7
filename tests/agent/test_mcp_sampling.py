"""A remote MCP server's sampling request answered by the run's own model (the providers' real SDKs against
the scripted wire-protocol server), through a real official-SDK MCP server (tests/sources/mcp_relay_server.py)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.adapters.mcp_peers import ROOT
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig.agent import run_agent

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.servers]


def relay(**settings: Any) -> dict[str, Any]:
    command = [sys.executable, str(ROOT / "tests" / "sources" / "mcp_relay_server.py")]
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
