from __future__ import annotations

from typing import Any

import pytest

from tests.support.fake_llm import FakeLLM, Text, reply
from toolrig.agent import run_agent
from toolrig.agent.context import tool_list_tokens
from toolrig.agent.toolset import CORE_TOOLS, shown_tools
from toolrig.registry import Registry


def catalog() -> list[Any]:
    return Registry.default(entry_points=False).list()


def names(tools: list[Any]) -> set[str]:
    return {t.name for t in tools}


def test_core_is_a_compact_set_that_still_reads_searches_edits_and_runs() -> None:
    tools = catalog()
    core = shown_tools(tools, "core", model="local-model")
    assert names(core) >= set(CORE_TOOLS)
    assert all(t.name in CORE_TOOLS or t.terminal for t in core)
    assert tool_list_tokens(core) * 3 < tool_list_tokens(tools)  # measured: docs/mcp-client.md


@pytest.mark.parametrize(
    ("model", "window", "expected_core"),
    [
        ("local-model", 8_192, True),  # a small local model: core
        ("local-model", 32_768, True),
        ("local-model", 131_072, False),
        ("local-model", None, False),  # unknown size: everything (the context warning still speaks up)
        ("claude-sonnet-4-5", None, False),
    ],
)
def test_auto_shows_the_core_set_only_to_models_with_a_small_known_context(
    model: str, window: int | None, expected_core: bool
) -> None:
    tools = catalog()
    shown = shown_tools(tools, "auto", model=model, configured_window=window)
    assert (names(shown) == names(shown_tools(tools, "core", model=model))) is expected_core
    assert expected_core or len(shown) == len(tools)


def test_a_list_of_globs_and_an_agents_own_list_decide_instead() -> None:
    tools = catalog()
    assert names(shown_tools(tools, ["read_*", "glob"], model="m")) >= {"read_files", "read_subtree", "glob"}
    assert "run_command" not in names(shown_tools(tools, ["read_*"], model="m"))
    assert len(shown_tools(tools, "core", model="m", agent_lists_tools=True)) == len(tools)


def test_terminal_tools_stay_so_a_task_run_can_still_end() -> None:
    shown = shown_tools(catalog(), ["read_files"], model="m")
    assert {"complete_task", "fail_task"} <= names(shown)


@pytest.mark.anyio
async def test_a_run_on_a_small_model_sends_only_the_core_tools(llm: FakeLLM, make_rig: Any, provider: str) -> None:
    llm.script(reply(Text("hi")))
    rig = make_rig(context_window=8_192, tools="core")
    await run_agent("hello", rig=rig)
    sent = llm.bodies()[0]["tools"]
    sent_names = {t.get("name") or t["function"]["name"] for t in sent}
    others = sent_names - set(CORE_TOOLS)
    assert all(rig.registry.get(name).terminal for name in others)
    assert len(rig.registry.list()) > len(sent_names)
