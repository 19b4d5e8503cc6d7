from __future__ import annotations

import importlib
import json
from typing import Any

import anyio
import pytest

from tests.support import sample_tools
from tests.support.fake_llm import Call, FakeLLM, Text, Thinking, error, reply
from toolrig.agent import RunError, RunOptions, run_agent, stream_agent
from toolrig.events import Event

pytestmark = pytest.mark.anyio


def collect() -> tuple[list[Event], Any]:
    events: list[Event] = []
    return events, events.append


def tool_results(body: dict[str, Any], provider: str) -> list[tuple[str, dict[str, Any]]]:
    """(call id, parsed result) pairs the client sent back in its latest request."""
    if provider == "anthropic":
        last = body["messages"][-1]
        return [(b["tool_use_id"], json.loads(b["content"])) for b in last["content"] if b["type"] == "tool_result"]
    out = []
    for message in reversed(body["messages"]):
        if message["role"] != "tool":
            break
        out.append((message["tool_call_id"], json.loads(message["content"])))
    return out[::-1]


async def test_multi_turn_tool_use_reaches_the_answer(llm: FakeLLM, make_rig: Any, provider: str) -> None:
    llm.script(
        reply(Text("Let me add."), Call("call_1", "add", '{"a": 2', ', "b": 3}')),
        reply(Text("The sum is ", "5.")),
    )
    events, on_event = collect()
    result = await run_agent("What is 2 + 3?", rig=make_rig(), on_event=on_event)
    assert result.response == "The sum is 5."
    assert result.stop_reason == "completed" and result.turns == 2
    assert tool_results(llm.bodies()[1], provider) == [("call_1", {"is_error": False, "output": {"result": 5}})]
    assert [m.role for m in result.new_messages] == ["user", "assistant", "user", "assistant"]
    assert result.usage.input == 200 and result.usage.output == 40 and result.usage.calls == 2
    kinds = [e.type for e in events]
    assert kinds[0] == "init" and kinds[-1] == "done"
    assert "tool_call" in kinds and "tool_result" in kinds


async def test_events_come_in_order(llm: FakeLLM, make_rig: Any, provider: str) -> None:
    llm.script(
        reply(Thinking("Hmm, ", "adding."), Text("Adding."), Call("call_1", "add", '{"a": 1,', ' "b": 1}')),
        reply(Text("Two.")),
    )
    events, on_event = collect()
    result = await run_agent("1+1?", RunOptions(thinking="adaptive"), rig=make_rig(), on_event=on_event)
    assert result.response == "Two."
    summary = []
    for e in events:
        label = e.type
        if e.type in ("stream_text", "thinking_delta", "chunk"):
            label += f":{e.text}"  # type: ignore[union-attr]
        elif e.type == "thinking":
            label += f":{e.state}"  # type: ignore[union-attr]
        elif e.type == "tool_call_delta":
            label += f":{e.delta}"  # type: ignore[union-attr]
        elif e.type == "tool_result":
            label += f":{e.preview}"  # type: ignore[union-attr]
        summary.append(label)
    session = result.session_id
    assert events[0].type == "init" and events[0].session_id == session  # type: ignore[union-attr]
    assert summary[1:] == [
        "thinking:start",
        "thinking_delta:Hmm, ",
        "thinking_delta:adding.",
        "thinking:end",
        "stream_text:Adding.",
        'tool_call_delta:{"a": 1,',
        'tool_call_delta: "b": 1}',
        "tool_call",
        "usage",
        "chunk:Adding.",
        'tool_result:{"result":2}',
        "stream_text:Two.",
        "usage",
        "chunk:Two.",
        "done",
    ]


async def test_parallel_calls_run_concurrently_and_return_in_call_order(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    probe = sample_tools.reset_probe(parties=3)
    llm.script(
        reply(
            Call("c1", "rendezvous", '{"name": "one"}'),
            Call("c2", "rendezvous", '{"name": "two"}'),
            Call("c3", "rendezvous", '{"name": "three"}'),
        ),
        reply(Text("All met.")),
    )
    result = await run_agent("meet", rig=make_rig())
    assert result.response == "All met."
    # Each call waits for the other two: they can only all finish if they ran at the same time.
    assert sorted(probe.log[:3]) == ["start:one", "start:three", "start:two"]
    sent = tool_results(llm.bodies()[1], provider)
    assert [(cid, r["output"]["result"]) for cid, r in sent] == [("c1", "one"), ("c2", "two"), ("c3", "three")]


async def test_a_sequential_tool_is_a_barrier_between_its_neighbours(llm: FakeLLM, make_rig: Any) -> None:
    probe = sample_tools.reset_probe()
    llm.script(
        reply(
            Call("c1", "note", '{"name": "a"}'),
            Call("c2", "note", '{"name": "b"}'),
            Call("c3", "step", '{"name": "s"}'),
            Call("c4", "note", '{"name": "c"}'),
        ),
        reply(Text("ok")),
    )
    await run_agent("go", rig=make_rig())
    log = probe.log
    # a and b overlap (both start before either ends); s runs alone after both; c only after s.
    assert set(log[:2]) == {"note:start:a", "note:start:b"}
    assert log[4:6] == ["step:start:s", "step:end:s"]
    assert log[6:] == ["note:start:c", "note:end:c"]


async def test_malformed_arguments_become_an_error_the_model_fixes(llm: FakeLLM, make_rig: Any, provider: str) -> None:
    llm.script(
        reply(Call("c1", "add", '{"a": 1, "b":')),  # cut-off JSON
        reply(Call("c2", "add", '{"a": "one", "b": 2}')),  # invalid value
        reply(Call("c3", "add", '{"a": 1, "b": 2}')),
        reply(Text("3")),
    )
    events, on_event = collect()
    result = await run_agent("1+2", rig=make_rig(), on_event=on_event)
    assert result.response == "3" and result.stop_reason == "completed"
    bodies = llm.bodies()
    [(_, bad_json)] = tool_results(bodies[1], provider)
    assert bad_json["error_type"] == "invalid_input" and "not valid JSON" in bad_json["message"]
    [(_, bad_value)] = tool_results(bodies[2], provider)
    assert bad_value["error_type"] == "invalid_input" and "a" in bad_value["message"]
    [(_, good)] = tool_results(bodies[3], provider)
    assert good == {"is_error": False, "output": {"result": 3}}
    first_call = next(e for e in events if e.type == "tool_call")
    assert first_call.args == {"_invalid_json": '{"a": 1, "b":'}  # type: ignore[union-attr]


async def test_an_unknown_or_withheld_tool_is_an_error_result_not_a_crash(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    llm.script(
        reply(Call("c1", "launch_rockets", "{}"), Call("c2", "wipe", '{"target": "x"}')),
        reply(Text("I cannot.")),
    )
    probe = sample_tools.reset_probe()
    result = await run_agent("launch", RunOptions(tools_deny=["wipe"]), rig=make_rig())
    assert result.response == "I cannot."
    sent = dict(tool_results(llm.bodies()[1], provider))
    assert sent["c1"]["error_type"] == "unknown_tool" and "launch_rockets" in sent["c1"]["message"]
    # Refused by the one gate before its arguments are read (issue 11, 5): not run, and audited.
    assert sent["c2"]["error_type"] == "denied"
    assert probe.log == []
    offered = {t.get("name") or t["function"]["name"] for t in llm.bodies()[0]["tools"]}
    assert "wipe" not in offered and "add" in offered


async def test_a_terminal_tool_ends_the_run_with_its_output(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("Done:"), Call("c1", "final_answer", '{"answer": "42"}')))
    result = await run_agent("answer", rig=make_rig())
    assert result.stop_reason == "terminal"
    assert result.response == "42" and result.output == {"result": "42"}
    assert len(llm.requests) == 1


async def test_a_failed_terminal_call_goes_back_to_the_model(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Call("c1", "final_answer", "{}")), reply(Text("Sorry.")))
    result = await run_agent("answer", rig=make_rig())
    assert result.stop_reason == "completed" and result.response == "Sorry."


async def test_max_turns_ending_on_tool_results_asks_for_a_summary_without_tools(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    llm.script(
        reply(Call("c1", "add", '{"a": 1, "b": 1}')),
        reply(Call("c2", "add", '{"a": 2, "b": 2}')),
        reply(Text("Summary: added twice.")),
    )
    result = await run_agent("loop", RunOptions(max_turns=2), rig=make_rig())
    assert result.stop_reason == "max_turns" and result.response == "Summary: added twice."
    last = llm.bodies()[2]
    if provider == "anthropic":
        assert last["tool_choice"] == {"type": "none"}
        assert "used all 2 turns" in last["messages"][-1]["content"][-1]["text"]
    else:
        assert last["tool_choice"] == "none"
        assert last["messages"][-1]["role"] == "user" and "used all 2 turns" in last["messages"][-1]["content"]


async def test_max_turns_ending_on_text_makes_no_extra_call(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Call("c1", "add", '{"a": 1, "b": 1}')), reply(Text("2")))
    result = await run_agent("x", RunOptions(max_turns=2), rig=make_rig())
    assert result.stop_reason == "completed" and len(llm.requests) == 2


async def test_an_answer_cut_off_by_the_token_limit_is_not_a_completed_run(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    # Anthropic says stop_reason "max_tokens", OpenAI-compatible servers finish_reason "length".
    llm.script(reply(Text("The answer is four hund"), stop="max_tokens" if provider == "anthropic" else "length"))
    rig = make_rig()
    result = await run_agent("x", RunOptions(), rig=rig)
    assert result.stop_reason == "max_tokens" and result.response == "The answer is four hund"
    from toolrig.agent.session import SessionStore

    info = SessionStore.for_state_dir(rig.workspace.state_dir).info(result.session_id)
    assert info is not None and info.status == "max_tokens"


async def test_abort_mid_stream_keeps_the_text_so_far(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("Hel", "lo", " world"), hang_after=4))
    abort = anyio.Event()

    def on_event(event: Event) -> None:
        if event.type == "stream_text":
            abort.set()

    with anyio.fail_after(10):
        result = await run_agent("hi", RunOptions(abort=abort), rig=make_rig(), on_event=on_event)
    assert result.stop_reason == "aborted"
    assert result.response and "Hello world".startswith(result.response)
    assert result.new_messages[-1].role == "assistant" and result.new_messages[-1].text == result.response


async def test_abort_mid_tool_cancels_the_call_and_the_session_stays_valid(
    llm: FakeLLM, make_rig: Any, provider: str
) -> None:
    probe = sample_tools.reset_probe()
    rig = make_rig()
    llm.script(reply(Call("c1", "hang", "{}")))
    abort = anyio.Event()
    outcome: dict[str, Any] = {}

    async def run() -> None:
        outcome["result"] = await run_agent("wait", RunOptions(abort=abort), rig=rig)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            await probe.started.wait()
            abort.set()
    result = outcome["result"]
    assert result.stop_reason == "aborted"
    assert probe.log == ["hang:start", "hang:stopped"]
    # The next run in the session sends a valid history: the aborted call is answered as cancelled.
    llm.script(reply(Text("ok")))
    await run_agent("again", RunOptions(session_id=result.session_id), rig=rig)
    [(cid, answer)] = tool_results_before_prompt(llm.bodies()[-1], provider)
    assert cid == "c1" and answer["error_type"] == "cancelled"


def tool_results_before_prompt(body: dict[str, Any], provider: str) -> list[tuple[str, dict[str, Any]]]:
    if provider == "anthropic":
        last = body["messages"][-1]
        return [(b["tool_use_id"], json.loads(b["content"])) for b in last["content"] if b["type"] == "tool_result"]
    return [(m["tool_call_id"], json.loads(m["content"])) for m in body["messages"] if m["role"] == "tool"]


async def test_a_stalled_stream_times_out_as_a_run_error(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("a", "b"), hang_after=3))
    events, on_event = collect()
    with anyio.fail_after(15), pytest.raises(RunError) as caught:
        await run_agent("hi", rig=make_rig(request_timeout_seconds=1.0), on_event=on_event)
    assert caught.value.kind == "timeout"
    assert events[-1].type == "error" and events[-1].kind == "timeout"  # type: ignore[union-attr]


async def test_the_run_timeout_stops_a_run_that_takes_too_long(llm: FakeLLM, make_rig: Any, provider: str) -> None:
    # The provider's SDK is imported on first use: cold, that is seconds under load, and it would spend the run's
    # 1.5 s before the model's first reply whenever this test is the first of its process to use that SDK (the
    # order differs with each xdist worker). Imported here, the timeout times the run, not the import.
    importlib.import_module(provider)
    probe = sample_tools.reset_probe()
    llm.script(reply(Call("c1", "hang", "{}")))
    with anyio.fail_after(15), pytest.raises(RunError) as caught:
        await run_agent("wait", RunOptions(timeout=1.5), rig=make_rig())
    assert caught.value.kind == "timeout" and "1.5 seconds" in caught.value.message
    assert probe.log == ["hang:start", "hang:stopped"]


async def test_429_is_retried_by_the_sdk_then_succeeds(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(error(429, headers={"retry-after-ms": "5"}), reply(Text("finally")))
    result = await run_agent("hi", rig=make_rig(max_retries=2))
    assert result.response == "finally" and len(llm.requests) == 2


async def test_errors_after_the_retries_surface_as_a_clear_run_error(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(error(529, headers={"retry-after-ms": "5"}), error(529, headers={"retry-after-ms": "5"}))
    with pytest.raises(RunError) as caught:
        await run_agent("hi", rig=make_rig(max_retries=1))
    assert caught.value.kind == "overloaded" and "529" in caught.value.message


async def test_a_rate_limit_that_outlasts_the_retries_is_rate_limited(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(error(429, headers={"retry-after-ms": "5"}))
    with pytest.raises(RunError) as caught:
        await run_agent("hi", rig=make_rig(max_retries=0))
    assert caught.value.kind == "rate_limited"


async def test_a_budget_overrun_stops_the_run(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Call("c1", "add", '{"a": 1, "b": 1}'), usage=(1_000_000, 0, 0, 0)))
    price = {"input": 1.0, "output": 1.0}
    with pytest.raises(RunError) as caught:
        await run_agent("x", RunOptions(max_budget_usd=0.5), rig=make_rig(price=price))
    assert caught.value.kind == "budget" and "$1.0000" in caught.value.message


async def test_stream_agent_iterates_the_events_then_gives_the_result(llm: FakeLLM, make_rig: Any) -> None:
    llm.script(reply(Text("Hi ", "there")))
    async with stream_agent("hello", rig=make_rig()) as run:
        texts = [e.text async for e in run if e.type == "stream_text"]  # type: ignore[union-attr]
    assert texts == ["Hi ", "there"]
    assert run.result is not None and run.result.response == "Hi there"
