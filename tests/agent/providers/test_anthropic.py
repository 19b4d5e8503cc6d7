from __future__ import annotations

from typing import Any

import pytest

from tests.support.fake_llm import Call, FakeLLM, Text, Thinking, reply
from toolrig.agent import RunError, RunOptions, run_agent
from toolrig.agent.messages import Message, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock
from toolrig.agent.providers.anthropic import wire_messages
from toolrig.events import Event, UsageEvent

pytestmark = pytest.mark.anyio


@pytest.fixture
def provider() -> str:
    return "anthropic"


async def test_requests_cache_the_system_prompt_the_tools_and_the_newest_turn(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("hi")))
    await run_agent("hello", RunOptions(system_prompt="Be brief.", effort="high", thinking="adaptive"), rig=make_rig())
    body = llm.bodies()[0]
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in t for t in body["tools"][:-1])
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]}
    ]
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "high"}
    assert body["stream"] is True and body["max_tokens"] == 16000
    assert {t["name"] for t in body["tools"]} >= {"add", "final_answer"}
    assert body["tools"][0]["input_schema"]["type"] == "object"


async def test_signed_thinking_is_sent_back_with_the_tool_turn(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(
        reply(Thinking("I should add.", signature="sig-1"), Call("toolu_1", "add", '{"a": 1, "b": 2}')),
        reply(Text("3")),
    )
    await run_agent("1+2", RunOptions(thinking="adaptive"), rig=make_rig())
    assistant = llm.bodies()[1]["messages"][1]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "I should add.", "signature": "sig-1"}
    assert assistant["content"][1] == {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}}


async def test_usage_counts_cache_reads_and_writes(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("ok"), usage=(10, 5, 1000, 200)))
    events: list[Event] = []
    result = await run_agent(
        "x",
        rig=make_rig(price={"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}),
        on_event=events.append,
    )
    [usage] = [e for e in events if isinstance(e, UsageEvent)]
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (10, 5, 1000, 200)
    assert usage.cost_usd == pytest.approx((10 * 3 + 5 * 15 + 1000 * 0.3 + 200 * 3.75) / 1e6)
    assert result.usage.cost_usd == pytest.approx(usage.cost_usd)
    body = llm.bodies()[0]
    assert "thinking" not in body and "output_config" not in body  # thinking off and no effort: not sent


async def test_an_overloaded_error_mid_stream_is_a_run_error(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("par", "tial"), error_after=4))
    with pytest.raises(RunError) as caught:
        await run_agent("x", rig=make_rig())
    assert caught.value.kind == "overloaded"


def test_history_is_replayed_in_the_messages_api_shape() -> None:
    history = [
        Message.user("list files"),
        Message(
            "assistant",
            [
                ThinkingBlock("from another provider", provider="openai"),
                TextBlock("Looking."),
                ToolCallBlock("call_9", "ls", "{not json"),
            ],
        ),
        Message("user", [TextBlock("(aborted)")]),
        Message("user", [ToolResultBlock("call_9", "ls", '{"is_error":true}', is_error=True), TextBlock("go on")]),
    ]
    wire = wire_messages(history)
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]  # adjacent user turns merged
    assert wire[1]["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "call_9", "name": "ls", "input": {}},  # unparseable arguments become {}
    ]
    kinds = [b["type"] for b in wire[2]["content"]]
    assert kinds == ["tool_result", "text", "text"]  # tool results first, as the API requires
    assert wire[2]["content"][0]["is_error"] is True
