from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import agent_config
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig.agent import RunOptions, run_agent
from toolrig.definition import tool
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


@tool(group="weather", read_only=True)
def forecast(city: str) -> str:
    """Tomorrow's weather forecast for a city.

    Args:
        city: The city to forecast.
    """
    return f"sunny in {city}"


def sent_tools(body: dict[str, Any]) -> set[str]:
    return {t["name"] if "name" in t else t["function"]["name"] for t in body.get("tools", [])}


def make(workspace: Path, llm: FakeLLM, provider: str, deferred: bool) -> Rig:
    config = {
        **agent_config(llm, provider),
        "tools": {"allow": ["read_files", "tool_search", "tool_info", "forecast"], "deferred": deferred},
        "approvals": {"mode": "off"},
    }
    return Rig(workspace, config, tools=[forecast])


async def test_a_deferred_tool_is_shown_the_turn_after_tool_search_finds_it(
    workspace: Path, llm: FakeLLM, provider: str
) -> None:
    llm.script(
        reply(Call("c1", "tool_search", '{"query": "weather forecast"}')),
        reply(Call("c2", "forecast", '{"city": "Oslo"}')),
        reply(Text("Sunny.")),
    )
    with make(workspace, llm, provider, deferred=True) as rig:
        result = await run_agent("weather in Oslo?", RunOptions(), rig=rig)
    first, second, third = (sent_tools(b) for b in llm.bodies())
    assert first == {"read_files", "tool_search", "tool_info"}
    assert "forecast" in second and "forecast" in third
    assert result.response == "Sunny."
    assert "sunny in Oslo" in str(llm.bodies()[2])


async def test_without_deferral_every_tool_is_sent_from_the_start(workspace: Path, llm: FakeLLM, provider: str) -> None:
    llm.script(reply(Text("hi")))
    with make(workspace, llm, provider, deferred=False) as rig:
        await run_agent("hi", RunOptions(), rig=rig)
    assert sent_tools(llm.bodies()[0]) == {"read_files", "tool_search", "tool_info", "forecast"}
