from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.fake_llm import Call, FakeLLM, Text, Thinking, reply
from toolrig.agent import RunOptions, run_agent
from toolrig.agent.messages import Message, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock
from toolrig.agent.providers.base import ProviderSettings
from toolrig.agent.providers.openai import OpenAIProvider, wire_messages
from toolrig.events import Event, ThinkingDeltaEvent, UsageEvent

pytestmark = pytest.mark.anyio


@pytest.fixture
def provider() -> str:
    return "openai"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def test_interleaved_tool_call_fragments_are_joined_by_index(llm: FakeLLM, make_rig: Any) -> None:
    raw = [
        chunk({"role": "assistant"}),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a": '}}
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 10'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '1, "b": 2}'}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": ', "b": 20}'}}]}),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]
    llm.script(reply(raw=raw), reply(Text("3 and 30")))
    result = await run_agent("add", rig=make_rig())
    assert result.response == "3 and 30"
    sent = [
        (m["tool_call_id"], json.loads(m["content"])["output"]["result"])
        for m in llm.bodies()[1]["messages"]
        if m["role"] == "tool"
    ]
    assert sent == [("call_a", 3), ("call_b", 30)]


async def test_a_server_that_omits_call_ids_still_gets_answers(llm: FakeLLM, make_rig: Any) -> None:
    raw = [
        chunk(
            {
                "role": "assistant",
                "tool_calls": [{"index": 0, "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}],
            }
        ),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]
    llm.script(reply(raw=raw), reply(Text("2")))
    await run_agent("add", rig=make_rig())
    messages = llm.bodies()[1]["messages"]
    call_id = messages[-2]["tool_calls"][0]["id"]
    assert call_id and messages[-1]["tool_call_id"] == call_id


async def test_reasoning_content_streams_as_thinking_and_is_not_sent_back(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Thinking("Let me ", "see."), Call("c1", "add", '{"a": 1, "b": 1}')), reply(Text("2")))
    events: list[Event] = []
    await run_agent("1+1", rig=make_rig(), on_event=events.append)
    assert [e.text for e in events if isinstance(e, ThinkingDeltaEvent)] == ["Let me ", "see."]
    assistant = llm.bodies()[1]["messages"][2]
    assert assistant == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}}],
    }


async def test_requests_carry_usage_effort_and_parallel_calls(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("ok"), usage=(60, 7, 40, 0)))
    events: list[Event] = []
    await run_agent("x", RunOptions(effort="low", system_prompt="Sys."), rig=make_rig(), on_event=events.append)
    body = llm.bodies()[0]
    assert body["stream_options"] == {"include_usage": True} and body["reasoning_effort"] == "low"
    assert body["parallel_tool_calls"] is True and body["tool_choice"] == "auto"
    assert body["messages"][0] == {"role": "system", "content": "Sys."}
    assert all("strict" not in t["function"] for t in body["tools"])  # a local endpoint: no strict mode
    [usage] = [e for e in events if isinstance(e, UsageEvent)]
    assert (usage.input, usage.cache_read, usage.output) == (60, 40, 7)  # input excludes the cached part


async def test_strict_schemas_are_sent_when_asked_for(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("ok")))
    await run_agent("x", rig=make_rig(strict=True))
    tools = {t["function"]["name"]: t["function"] for t in llm.bodies()[0]["tools"]}
    assert tools["add"]["strict"] is True
    assert tools["add"]["parameters"]["additionalProperties"] is False


def test_strict_mode_defaults_on_only_for_the_openai_endpoint() -> None:
    def strict(base_url: str | None) -> bool | None:
        return OpenAIProvider(ProviderSettings("openai", "m", "k", base_url=base_url)).strict

    assert strict(None) is None  # None = strict wherever the schema allows it
    assert strict("https://api.openai.com/v1") is None
    assert strict("http://localhost:11434/v1") is False


def test_history_is_replayed_as_chat_messages() -> None:
    history = [
        Message.user("hi"),
        Message(
            "assistant",
            [
                ThinkingBlock("t", signature="s", provider="anthropic"),
                TextBlock("Checking."),
                ToolCallBlock("toolu_1", "ls", ""),
            ],
        ),
        Message("user", [ToolResultBlock("toolu_1", "ls", '{"is_error":false,"output":{}}'), TextBlock("and now?")]),
    ]
    assert wire_messages("S", history) == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": '{"is_error":false,"output":{}}'},
        {"role": "user", "content": "and now?"},
    ]
