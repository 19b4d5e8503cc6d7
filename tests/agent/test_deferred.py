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
        **agent_config(llm, provider, tools="all"),  # tools.deferred alone, without llm.tools' search core
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


# ------------------------------------------------------------------ the default: a core set plus tool_search


def default_rig(workspace: Path, llm: FakeLLM, provider: str) -> Rig:
    """The built-in catalog under the default ``llm.tools`` (auto), on a model with a large context."""
    return Rig(workspace, {**agent_config(llm, provider), "approvals": {"mode": "off"}})


async def test_by_default_a_large_model_is_sent_the_search_core_and_finds_and_calls_the_rest(
    workspace: Path, llm: FakeLLM, provider: str
) -> None:
    from toolrig.agent.toolset import SEARCH_CORE

    llm.script(
        reply(Call("c1", "tool_search", '{"query": "evaluate an arithmetic expression"}')),
        reply(Call("c2", "calculate", '{"expression": "6 * 7"}')),
        reply(Text("42.")),
    )
    with default_rig(workspace, llm, provider) as rig:
        result = await run_agent("what is 6 * 7?", RunOptions(), rig=rig)
        terminal = {t.name for t in rig.registry.list() if t.terminal}
    first, second, _ = (sent_tools(b) for b in llm.bodies())
    assert first == (set(SEARCH_CORE) | terminal) & {t.name for t in rig.registry.list()}
    assert "calculate" not in first and "calculate" in second
    assert result.response == "42."
    assert '"output":{"result":42}' in str(llm.bodies()[2])
    # The model is told what it can look up, by name, without the schemas' cost.
    assert "calculate" in str(llm.bodies()[0].get("system", "")) + str(llm.bodies()[0].get("messages", ""))


async def test_a_deferred_tool_is_callable_before_any_lookup(workspace: Path, llm: FakeLLM, provider: str) -> None:
    llm.script(reply(Call("c1", "calculate", '{"expression": "1 + 1"}')), reply(Text("2")))
    with default_rig(workspace, llm, provider) as rig:
        await run_agent("1 + 1?", RunOptions(), rig=rig)
    assert "calculate" not in sent_tools(llm.bodies()[0])
    assert '"is_error":false,"output":{"result":2}' in str(llm.bodies()[1])


def test_a_lookup_answering_under_a_profile_reveals_the_tool_behind_the_face() -> None:
    from toolrig.agent.deferred import DeferredTools, deferred_note
    from toolrig.profiles import get_profile
    from toolrig.registry import Registry
    from toolrig.result import ToolResult

    tools = Registry.default(entry_points=False).list()
    deferred = DeferredTools(tools, (), ("read_files", "tool_search", "tool_info"))
    claude = get_profile("claude")
    assert "WebFetch" in deferred_note(deferred, claude) and "fetch_url" not in deferred_note(deferred, claude)
    assert deferred.reveal("tool_info", ToolResult.ok({"name": "WebFetch"}))
    assert "fetch_url" in {t.name for t in deferred.visible()}
    assert not deferred.reveal("tool_info", ToolResult.ok({"name": "NoSuchTool"}))
