from __future__ import annotations

from typing import Any

import pytest

from tests.support.fake_llm import FakeLLM, Text, reply
from toolrig import Rig
from toolrig.agent import RunOptions, run_agent
from toolrig.agent.context import context_window, tool_list_tokens, tool_list_warning

pytestmark = pytest.mark.anyio


def test_known_models_have_a_window_and_config_wins() -> None:
    assert context_window("claude-sonnet-4-5") == 200_000
    assert context_window("openrouter/anthropic/claude-haiku-4-5") == 200_000
    assert context_window("qwen2.5-0.5b-instruct") is None
    assert context_window("qwen2.5-0.5b-instruct", 8192) == 8192


def test_the_whole_catalog_swamps_a_small_context_but_not_a_large_one(workspace: Any) -> None:
    tools = Rig(workspace).registry.list()
    cost = tool_list_tokens(tools)
    assert cost > 2_000  # the catalog is thousands of tokens: the reason for the warning
    warning = tool_list_warning("smollm2", tools, 8192)
    assert warning is not None and "more than half" in warning and f"{cost:,}" in warning
    assert tool_list_warning("claude-sonnet-4-5", tools) is None
    assert tool_list_warning("unknown-local-model", tools) is None  # no known window: nothing to judge


async def test_a_run_warns_when_its_tools_take_more_than_half_the_context(
    llm: FakeLLM, make_rig: Any, caplog: pytest.LogCaptureFixture
) -> None:
    llm.script(reply(Text("hi")))
    await run_agent("x", RunOptions(), rig=make_rig(context_window=50))
    assert "more than half" in caplog.text and "50-token context" in caplog.text
