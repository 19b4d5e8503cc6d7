"""A tool's image reaches the model through the real provider SDKs (scripted servers speak their wire format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.conftest import agent_config
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.media_tools import Snapshot, tiny_png
from toolrig.agent import run_agent
from toolrig.agent.messages import messages_from_json, messages_to_json
from toolrig.content import ImagePart
from toolrig.registry import Registry
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio
PNG = ImagePart.of(tiny_png(), "image/png").data


async def test_an_image_a_tool_returns_is_shown_to_the_model(llm: FakeLLM, workspace: Path, provider: str) -> None:
    llm.script(reply(Call("call_1", "snapshot", '{"kinds": ["image"]}')), reply(Text("A red square.")))
    rig = Rig(workspace, config=agent_config(llm, provider), registry=Registry([Snapshot()]))
    result = await run_agent("What is in the picture?", rig=rig)
    assert result.response == "A red square."
    messages = llm.bodies()[1]["messages"]
    if provider == "anthropic":
        (block,) = [b for b in messages[-1]["content"] if b["type"] == "tool_result"]
        assert json.loads(block["content"][0]["text"])["output"] == {"attached": ["image"]}
        assert block["content"][1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
        }
    else:
        # Chat completions tool messages hold text only: the image follows in a user message.
        tool, user = messages[-2], messages[-1]
        assert tool["role"] == "tool" and json.loads(tool["content"])["output"] == {"attached": ["image"]}
        assert user["role"] == "user" and user["content"][0]["type"] == "text"
        assert user["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    stored = messages_from_json(messages_to_json(result.new_messages))
    assert stored[2].tool_results[0].media[0]["data"] == PNG  # sessions keep the image with its result


async def test_an_image_read_before_a_pause_reaches_the_model_after_the_resume(
    llm: FakeLLM, workspace: Path, provider: str
) -> None:
    from toolrig.agent import RunOptions, RunState, resume_run
    from toolrig.tools.interact import AskUser

    ask = json.dumps({"questions": [{"question": "Crop it?", "options": ["yes", "no"]}]})
    llm.script(reply(Call("call_1", "snapshot", '{"kinds": ["image"]}'), Call("call_2", "ask_user", ask)))
    rig = Rig(workspace, config=agent_config(llm, provider), registry=Registry([Snapshot(), AskUser()]))
    paused = await run_agent("Look, then ask", RunOptions(approvals="pause"), rig=rig)
    assert paused.stop_reason == "paused" and paused.state is not None
    state = RunState.from_json(paused.state.to_json())  # the state a new process reads back
    llm.script(reply(Text("Cropped.")))
    result = await resume_run(state, rig=rig, answers={"call_2": [{"selected": ["yes"]}]})
    assert result.response == "Cropped."
    sent = json.dumps(llm.bodies()[-1]["messages"])
    assert PNG in sent


async def test_media_a_state_file_carries_is_checked_and_what_does_not_validate_is_dropped() -> None:
    hostile = {"type": "image", "data": "not base64!", "media_type": "image/png"}
    good = {"type": "image", "data": PNG, "media_type": "image/png"}
    raw = {"role": "user", "content": [{"type": "tool_result", "call_id": "c", "name": "t", "content": "{}"}]}
    raw["content"][0]["media"] = [hostile, good]
    [message] = messages_from_json([raw])
    assert [part["data"] for part in message.tool_results[0].media] == [PNG]
