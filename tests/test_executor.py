from __future__ import annotations

import dataclasses
import json
import logging
import math
import threading
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.support.interleave import Paused
from tests.support.sample_tools import WriteLater, all_tools
from tests.support.servers import HttpServer
from toolrig import Rig, ToolContext, tool
from toolrig.cancel import current_token
from toolrig.config import AgentConfig
from toolrig.errors import DefinitionError, ErrorType, ToolError, UsageError
from toolrig.executor import Extensions, Reserved, ToolCall
from toolrig.registry import Registry
from toolrig.result import ToolResult
from toolrig.sandbox.network import NetworkDenied

pytestmark = pytest.mark.anyio


def make_rig(root: Path, **config: object) -> Rig:
    registry = Registry.default(entry_points=False)
    for item in all_tools():
        registry.add(item)
    return Rig(root, config=config or {}, registry=registry)


@pytest.fixture
def srig(workspace: Path) -> Rig:
    return make_rig(workspace)


async def test_success_returns_the_validated_output(srig: Rig) -> None:
    result = await srig.call("echo", {"text": "hi"})
    assert result.model_dump(mode="json") == {"is_error": False, "output": {"text": "hi"}}
    assert result.meta.tool == "echo" and result.meta.call_id.startswith("call_")


async def test_sync_tools_run_in_a_worker_thread(srig: Rig) -> None:
    result = await srig.call("sync_echo", {"text": "hi"})
    assert not result.is_error
    assert "MainThread" not in result.output["text"]  # type: ignore[index]


async def test_invalid_input_names_every_bad_field(srig: Rig) -> None:
    result = await srig.call("shapes", {"tags": [1, {"a": 1}], "limit": "many", "colour": "red", "filter": {}})
    assert result.is_error and result.error_type == "invalid_input"
    message = result.message or ""
    for field in ("tags[1]", "limit", "colour", "filter.field", "filter.value"):
        assert f"'{field}'" in message, field
    assert "'colour' is not a parameter" in message
    assert "The parameters are: 'tags', 'filter', 'limit', 'mode'" in (result.next_action_hint or "")


async def test_arguments_that_are_not_json_or_not_an_object_are_invalid_input(srig: Rig) -> None:
    broken = await srig.call("echo", '{"text": ')
    assert broken.error_type == "invalid_input" and "not valid JSON" in (broken.message or "")
    listed = await srig.call("echo", "[1, 2]")
    assert listed.error_type == "invalid_input" and "must be a JSON object" in (listed.message or "")


async def test_a_tool_error_becomes_an_error_result(srig: Rig) -> None:
    result = await srig.call("refuse", {"text": "x"})
    assert result.model_dump(mode="json") == {
        "is_error": True,
        "error_type": "not_found",
        "message": "nothing called x",
        "next_action_hint": "look elsewhere",
    }


async def test_an_unexpected_exception_is_internal_and_logged_with_traceback(
    srig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="toolrig.executor"):
        result = await srig.call("boom", {"text": "x"})
    assert result.is_error and result.error_type == "internal"
    assert "ZeroDivisionError" in (result.message or "")
    record = next(r for r in caplog.records if "boom" in r.getMessage())
    assert record.exc_info is not None


async def test_a_sync_tool_declared_non_blocking_runs_on_the_event_loop_thread(workspace: Path) -> None:
    @tool(name="where", blocking=False)
    def where() -> int:
        """Say which thread ran the call."""
        return threading.get_ident()

    @tool(name="where_blocking")
    def where_blocking() -> int:
        """Say which thread ran the call."""
        return threading.get_ident()

    rig = Rig(workspace, config={}, registry=Registry([where, where_blocking]))
    inline = await rig.call("where", {})
    hopped = await rig.call("where_blocking", {})
    assert inline.output == {"result": threading.get_ident()}
    assert hopped.output != {"result": threading.get_ident()}


async def test_output_that_does_not_match_the_output_model_is_internal(srig: Rig) -> None:
    result = await srig.call("wrong_output", {"text": "x"})
    assert result.error_type == "internal" and "TextOut" in (result.message or "")


async def test_unknown_tool_lists_the_available_ones(srig: Rig) -> None:
    result = await srig.call("ecko", {})
    assert result.error_type == "unknown_tool"
    assert "echo" in (result.next_action_hint or "")


async def test_async_tool_timeout_is_reported(workspace: Path) -> None:
    rig = make_rig(workspace, limits={"timeout_seconds": 0.2})
    result = await rig.call("sleep_async", {"seconds": 30})
    assert result.error_type == "timeout" and result.retryable
    assert "0.2 seconds" in (result.message or "")


async def test_a_timed_out_sync_tool_does_not_write_after_its_result(workspace: Path) -> None:
    WriteLater.started.clear()
    WriteLater.finished.clear()
    WriteLater.outcome.clear()
    rig = make_rig(workspace)
    result = await rig.call("write_later", {"path": "late.txt", "delay": 30}, timeout_seconds=0.2)
    assert result.error_type == "timeout"
    # The worker thread is still running; wait for it to reach its write and be refused.
    with anyio.fail_after(10):
        await anyio.to_thread.run_sync(WriteLater.finished.wait)
    assert WriteLater.outcome == ["cancelled"]
    assert not (workspace / "late.txt").exists()
    assert not any(p.name.endswith(".toolrig-tmp") for p in workspace.iterdir())


async def test_a_sync_tool_within_its_time_does_write(srig: Rig, workspace: Path) -> None:
    WriteLater.outcome.clear()
    result = await srig.call("write_later", {"path": "on_time.txt", "delay": 0})
    assert not result.is_error
    assert (workspace / "on_time.txt").read_text() == "written"


async def test_cancelling_the_caller_cancels_the_call_and_propagates(srig: Rig) -> None:
    seen: list[ToolResult] = []

    async def audit(call: ToolCall, result: ToolResult) -> None:
        seen.append(result)

    srig.executor.extensions.audit.append(audit)
    with anyio.move_on_after(0.2) as scope:
        await srig.call("sleep_async", {"seconds": 30})
        pytest.fail("the call should have been cancelled")
    assert scope.cancelled_caught
    assert [r.error_type for r in seen] == ["cancelled"]


async def test_a_large_output_is_cut_and_kept_whole_for_paging(workspace: Path) -> None:
    rig = make_rig(workspace, output={"max_chars": 5_000})
    result = await rig.call("big", {"chars": 40_000, "items": 2})
    assert not result.is_error
    shown = json.dumps(result.output, separators=(",", ":"), ensure_ascii=False)
    assert len(shown) <= 5_000
    blobs = result.output["blobs"]  # type: ignore[index]
    assert len(blobs) == 2 and blobs[0].startswith("00000xx") and "characters cut" in blobs[0]
    handle = result.meta.full_output_handle
    assert handle and handle in result.notes[0] and "read_output" in result.notes[0]
    # Page through the saved output with the read_output tool and get every character back.
    pages, offset = [], 0
    while offset is not None:
        page = (await rig.call("read_output", {"handle": handle, "offset": offset, "limit": 30_000})).raise_for_error()
        pages.append(page["content"])
        offset = page["next_offset"]
    full = json.loads("".join(pages))
    assert full["blobs"][1] == "00001" + "x" * 40_000


async def test_many_small_items_are_cut_by_keeping_the_first_ones(workspace: Path) -> None:
    rig = make_rig(workspace, output={"max_chars": 2_000})
    result = await rig.call("big", {"chars": 10, "items": 1_000})
    blobs = result.output["blobs"]  # type: ignore[index]
    assert 0 < len(blobs) < 1_000 and blobs[0] == "00000" + "x" * 10
    assert "first" in result.notes[0]


async def test_read_output_refuses_handles_that_are_not_handles(srig: Rig) -> None:
    result = await srig.call("read_output", {"handle": "../../etc/passwd"})
    assert result.error_type == "invalid_input"
    missing = await srig.call("read_output", {"handle": "out_" + "0" * 16})
    assert missing.error_type == "not_found"


async def test_an_object_sent_as_a_json_string_is_decoded_and_said_so(srig: Rig) -> None:
    result = await srig.call("shapes", {"filter": '{"field": "a", "value": 3}'})
    assert result.output["seen"]["filter"] == {"field": "a", "value": 3}  # type: ignore[index]
    assert result.notes == ["'filter' was sent as a JSON string; it was decoded."]


async def test_a_single_value_where_a_list_is_expected_is_wrapped(srig: Rig) -> None:
    result = await srig.call("shapes", {"tags": "solo"})
    assert result.output["seen"]["tags"] == ["solo"]  # type: ignore[index]
    assert result.notes == ["'tags' expects a list; the single value was wrapped in one."]
    encoded = await srig.call("shapes", {"tags": '["a", "b"]'})
    assert encoded.output["seen"]["tags"] == ["a", "b"]  # type: ignore[index]


async def test_null_for_an_optional_field_means_its_default(srig: Rig) -> None:
    result = await srig.call("shapes", {"limit": None, "mode": None, "tags": None, "filter": None})
    assert result.output["seen"] == {"tags": [], "filter": None, "limit": 10, "mode": "fast"}  # type: ignore[index]
    assert result.notes == []


async def test_double_encoded_arguments_are_decoded(srig: Rig) -> None:
    result = await srig.call("echo", json.dumps(json.dumps({"text": "hi"})))
    assert result.output == {"text": "hi"}
    assert "encoded twice" in result.notes[0]


async def test_repairs_never_touch_strings_that_are_meant_as_strings(srig: Rig) -> None:
    result = await srig.call("echo", {"text": '{"looks": "like json"}'})
    assert result.output == {"text": '{"looks": "like json"}'} and result.notes == []


async def test_one_hundred_concurrent_calls_each_get_their_own_result(srig: Rig) -> None:
    calls = [("echo" if i % 2 else "sync_echo", {"text": f"n{i}"}) for i in range(100)]
    results = await srig.executor.invoke_many(calls)
    assert len(results) == 100
    for i, result in enumerate(results):
        assert not result.is_error
        assert result.output["text"].startswith(f"n{i}")  # type: ignore[index]
    assert len({r.meta.call_id for r in results}) == 100


async def test_extension_points_run_in_order_and_can_refuse(workspace: Path) -> None:
    from toolrig.errors import ErrorType, ToolError

    order: list[str] = []

    def gate(label: str, refuse: bool = False):  # type: ignore[no-untyped-def]
        async def check(call: ToolCall) -> None:
            order.append(label)
            if refuse and call.raw_args.get("text") == "stop":
                raise ToolError(ErrorType.DENIED, f"{label} says no")

        return check

    async def after(call: ToolCall, result: ToolResult) -> ToolResult:
        order.append("after_tool")
        return result

    async def audit(call: ToolCall, result: ToolResult) -> None:
        order.append(f"audit:{result.error_type or 'ok'}")

    extensions = Extensions(
        policy=[gate("policy")],
        rate_limit=[gate("rate_limit")],
        approval=[gate("approval", refuse=True)],
        before_tool=[gate("before_tool")],
        after_tool=[after],
        audit=[audit],
    )
    registry = Registry(all_tools())
    rig = Rig(workspace, config={}, registry=registry, extensions=extensions)
    assert not (await rig.call("echo", {"text": "go"})).is_error
    assert order == ["policy", "rate_limit", "approval", "before_tool", "after_tool", "audit:ok"]
    order.clear()
    refused = await rig.call("echo", {"text": "stop"})
    assert refused.error_type == "denied" and refused.message == "approval says no"
    assert order == ["policy", "rate_limit", "approval", "after_tool", "audit:denied"]


def test_call_sync_refuses_to_run_inside_an_event_loop(srig: Rig) -> None:
    from toolrig.errors import UsageError

    async def inside() -> None:
        with pytest.raises(UsageError, match=r"await rig\.call"):
            srig.call_sync("echo", {"text": "x"})

    anyio.run(inside)


# ------------------------------------------------------------------ the fast path: no scope for what cannot wait


@tool(name="deadline_seen")
async def deadline_seen() -> float:
    """Report the deadline the call runs under (no await: it cannot suspend)."""
    return anyio.current_effective_deadline()


@tool(name="deadline_seen_waiting")
async def deadline_seen_waiting(wait: float = 0.0) -> float:
    """Report the deadline the call runs under, after waiting when asked to."""
    if wait:
        await anyio.sleep(wait)
    return anyio.current_effective_deadline()


@tool(name="grouped_wait")
async def grouped_wait(seconds: float) -> str:
    """Wait inside a task group opened on the first step, before any await."""
    async with anyio.create_task_group() as group:
        group.start_soon(anyio.sleep, seconds)
    return "done"


def fast_path_rig(workspace: Path, timeout: float = 120.0) -> Rig:
    registry = Registry([deadline_seen, deadline_seen_waiting, grouped_wait])
    return Rig(workspace, config={"limits": {"timeout_seconds": timeout}}, registry=registry)


async def test_an_async_tool_that_cannot_suspend_runs_without_a_deadline_and_one_that_may_gets_one(
    workspace: Path,
) -> None:
    rig = fast_path_rig(workspace)
    assert deadline_seen.never_suspends and not deadline_seen_waiting.never_suspends
    assert (await rig.call("deadline_seen", {})).output == {"result": math.inf}
    # A tool with an await anywhere in its code gets its timeout even on a call that never reaches it.
    assert (await rig.call("deadline_seen_waiting", {})).output["result"] < math.inf  # type: ignore[index]


async def test_a_tool_that_awaits_only_on_some_calls_is_still_stopped_by_its_timeout(workspace: Path) -> None:
    rig = fast_path_rig(workspace, timeout=0.2)
    assert not (await rig.call("deadline_seen_waiting", {})).is_error
    result = await rig.call("deadline_seen_waiting", {"wait": 30})
    assert result.error_type == "timeout" and result.retryable


async def test_a_tool_that_opens_a_task_group_before_its_first_await_times_out_and_cancels_cleanly(
    workspace: Path,
) -> None:
    rig = fast_path_rig(workspace, timeout=0.2)
    timed_out = await rig.call("grouped_wait", {"seconds": 30})
    assert timed_out.error_type == "timeout"
    seen: list[ToolResult] = []

    async def audit(call: ToolCall, result: ToolResult) -> None:
        seen.append(result)

    rig.executor.extensions.audit.append(audit)
    with anyio.move_on_after(0.1) as scope:
        await rig.call("grouped_wait", {"seconds": 30}, timeout_seconds=60)
        pytest.fail("the call should have been cancelled")
    assert scope.cancelled_caught
    assert [r.error_type for r in seen] == ["cancelled"]
    assert (await rig.call("grouped_wait", {"seconds": 0})).output == {"result": "done"}


async def test_cancelling_the_caller_of_a_tool_that_cannot_suspend_lets_the_call_finish_and_record(
    workspace: Path,
) -> None:
    """Nothing can interrupt a one-step tool: a cancelled caller still gets its row, then the cancellation."""
    rig = fast_path_rig(workspace)
    seen: list[ToolResult] = []

    async def audit(call: ToolCall, result: ToolResult) -> None:
        seen.append(result)
        await anyio.sleep(0)  # the audit's own await is where the pending cancellation lands

    rig.executor.extensions.audit.append(audit)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await rig.call("deadline_seen", {})
    assert scope.cancelled_caught
    assert len(seen) == 1


async def test_gates_audit_sinks_and_after_hooks_may_answer_without_a_coroutine(workspace: Path) -> None:
    rig = fast_path_rig(workspace)
    order: list[str] = []

    def plain_gate(call: ToolCall) -> None:
        order.append(f"plain:{call.name}")
        if call.raw_args.get("wait") == 1:
            raise ToolError(ErrorType.DENIED, "Refused by policy: not on ones.")

    async def async_gate(call: ToolCall) -> None:
        order.append("async")

    def after(call: ToolCall, result: ToolResult) -> ToolResult:
        order.append("after" if call.ran else "after (not run)")
        return result.model_copy(update={"notes": [*result.notes, "seen after"]})

    def audit(call: ToolCall, result: ToolResult) -> None:
        order.append(f"audit:{result.error_type or 'ok'}")

    rig.executor.extensions.policy.append(plain_gate)
    rig.executor.extensions.before_tool.append(async_gate)
    rig.executor.extensions.after_tool.append(after)
    rig.executor.extensions.audit.append(audit)
    allowed = await rig.call("deadline_seen_waiting", {})
    assert allowed.notes == ["seen after"]
    refused = await rig.call("deadline_seen_waiting", {"wait": 1})
    assert refused.error_type == "denied" and refused.notes == ["seen after"]
    assert order == [
        "plain:deadline_seen_waiting",
        "async",
        "after",
        "audit:ok",
        "plain:deadline_seen_waiting",
        "after (not run)",
        "audit:denied",
    ]


async def test_a_tool_that_takes_its_context_gets_the_calls_own_and_one_that_does_not_gets_none_built(
    workspace: Path,
) -> None:
    @tool(name="who_calls")
    async def who_calls(ctx: ToolContext) -> str:
        """Name the call this context belongs to."""
        return f"{ctx.call_id}:{ctx.tool_name}:{ctx.agent_id}"

    @tool(name="no_context")
    async def no_context() -> int:
        """Take no context."""
        return 1

    assert who_calls.reads_context and not no_context.reads_context
    rig = Rig(workspace, config={}, registry=Registry([who_calls, no_context]))
    result = await rig.call("who_calls", {}, call_id="call_given", agent_id="someone")
    assert result.output == {"result": "call_given:who_calls:someone"}
    assert (await rig.call("no_context", {})).output == {"result": 1}


@pytest.mark.anyio
async def test_a_rig_without_its_own_http_gives_tools_the_guarded_client(
    workspace: Path, http_server: HttpServer
) -> None:
    # The default is built on first use (so a call that never reaches the network never imports it): it must
    # still be the guard, refusing loopback before a byte is sent.
    rig = Rig(workspace, config={})
    before = len(http_server.seen)
    async with rig.executor.http.client() as client:
        with pytest.raises(NetworkDenied, match="loopback"):
            await client.get(http_server.url("/http/never"))
    assert len(http_server.seen) == before


# ---------------------------------------------------------------------------------------------- the per-tool plan


async def test_gates_hooks_and_audit_sinks_added_after_a_tools_first_call_run_on_its_next_call(workspace: Path) -> None:
    """The executor plans a tool once, but never the gates: one configured at any time is passed by every call."""
    rig = fast_path_rig(workspace)
    assert (await rig.call("deadline_seen", {})).output == {"result": math.inf}  # planned, nothing extra
    order: list[str] = []

    def policy(call: ToolCall) -> None:
        order.append("policy")

    def rate_limit(call: ToolCall) -> None:
        order.append("rate_limit")

    def approval(call: ToolCall) -> None:
        order.append("approval")

    def before(call: ToolCall) -> None:
        order.append("before_tool")
        raise ToolError(ErrorType.DENIED, "Refused by policy: added late.")

    def after(call: ToolCall, result: ToolResult) -> ToolResult:
        order.append("after_tool")
        return result

    def audit(call: ToolCall, result: ToolResult) -> None:
        order.append(f"audit:{result.error_type}")

    extensions = rig.executor.extensions
    extensions.policy.append(policy)
    extensions.rate_limit.append(rate_limit)
    extensions.approval.append(approval)
    extensions.before_tool.append(before)
    extensions.after_tool.append(after)
    extensions.audit.append(audit)
    refused = await rig.call("deadline_seen", {})
    assert refused.error_type == "denied" and refused.message == "Refused by policy: added late."
    assert order == ["policy", "rate_limit", "approval", "before_tool", "after_tool", "audit:denied"]


async def test_a_view_brought_after_a_tools_first_call_decides_that_call(workspace: Path) -> None:
    rig = fast_path_rig(workspace)
    assert not (await rig.call("deadline_seen", {})).is_error
    # The policy gate answers "no rule names this tool" from the policy's own plan; a call that brings its own
    # view is decided by that view's plan, and the plan kept for everyone else is left as it was.
    late = rig.agent_view().child("late", AgentConfig.model_validate({"tools": ["deadline_seen_waiting"]}))
    refused = await rig.executor.invoke("deadline_seen", {}, agent_id="late", agent=late)
    assert refused.error_type == "denied"
    assert not (await rig.call("deadline_seen", {})).is_error


async def test_a_different_tool_under_a_name_already_called_is_run_with_its_own_models(workspace: Path) -> None:
    @tool(name="measure")
    async def measure_text(text: str) -> int:
        """Count characters."""
        return len(text)

    @tool(name="measure")
    async def measure_number(value: int) -> str:
        """Spell a number."""
        return f"#{value}"

    rig = Rig(workspace, config={}, registry=Registry([measure_text]))
    assert (await rig.call("measure", {"text": "four"})).output == {"result": 4}
    rig.executor.registry = Registry([measure_number])
    assert (await rig.call("measure", {"value": 7})).output == {"result": "#7"}
    assert (await rig.call("measure", {"text": "four"})).error_type == "invalid_input"


@tool(name="token_one_step")
async def token_one_step() -> bool:
    """Whether a cancellation token is bound while this one-step tool runs."""
    return current_token() is not None


@tool(name="token_may_wait")
async def token_may_wait(wait: float = 0.0) -> bool:
    """Whether a cancellation token is bound while this tool, which may wait, runs."""
    if wait:
        await anyio.sleep(wait)
    return current_token() is not None


@tool(name="token_in_thread")
def token_in_thread() -> bool:
    """Whether a cancellation token is bound in the worker thread running this tool."""
    return current_token() is not None


@tool(name="token_from_context")
async def token_from_context(ctx: ToolContext) -> bool:
    """Whether the context of this one-step tool carries a live, uncancelled token."""
    return ctx.cancel is not None and not ctx.cancel.cancelled and current_token() is ctx.cancel


async def test_every_tool_that_could_observe_a_cancellation_gets_a_token_and_a_one_step_tool_needs_none(
    workspace: Path,
) -> None:
    """A timeout or the caller's cancellation can only reach a tool that waits or runs in a thread: those
    (and any tool that reads its context) get the call's token; a one-step tool without a context cannot
    be stopped midway, so nothing is bound for it and ``check_cancelled()`` there is a no-op."""
    rig = Rig(
        workspace,
        config={},
        registry=Registry([token_one_step, token_may_wait, token_in_thread, token_from_context]),
    )
    assert (await rig.call("token_may_wait", {})).output == {"result": True}
    assert (await rig.call("token_in_thread", {})).output == {"result": True}
    assert (await rig.call("token_from_context", {})).output == {"result": True}
    assert (await rig.call("token_one_step", {})).output == {"result": False}
    assert current_token() is None  # nothing leaks into the caller's context


def test_a_call_started_by_the_executor_is_the_call_its_dataclass_would_build() -> None:
    started = ToolCall.start("echo", "call_1", "mcp", "agent", "parent", "session", 12.5, None)
    built = ToolCall(
        name="echo",
        tool=None,
        raw_args={},
        call_id="call_1",
        origin="mcp",
        agent_id="agent",
        parent_agent_id="parent",
        session_id="session",
        started=12.5,
    )
    assert started == built
    for item in dataclasses.fields(ToolCall):  # every field set, so a field added later cannot be missed here
        assert getattr(started, item.name) == getattr(built, item.name), item.name
    other = ToolCall.start("echo", "call_2", "mcp", None, None, None, 0.0, None)
    assert other.notes is not started.notes and other.subjects is not started.subjects


# ------------------------------------------------------- @tool functions called directly, plain results not rebuilt


@tool(name="gives_int")
async def gives_int(value: Any) -> int:
    """Return what it is given, declared as an integer."""
    return value  # type: ignore[no-any-return]


@tool(name="gives_float")
def gives_float(value: Any) -> float:
    """Return what it is given, declared as a float (sync: through a worker thread)."""
    return value  # type: ignore[no-any-return]


@tool(name="gives_str", blocking=False)
def gives_str(value: Any) -> str:
    """Return what it is given, declared as text (sync, on the loop)."""
    return value  # type: ignore[no-any-return]


@tool(name="gives_bool")
async def gives_bool(value: Any, wait: float = 0.0) -> bool:
    """Return what it is given, declared as a boolean (it may wait: under a timeout scope)."""
    if wait:
        await anyio.sleep(wait)
    return value  # type: ignore[no-any-return]


_PLAIN_TOOLS = [gives_int, gives_float, gives_str, gives_bool]


def _twins() -> list[Any]:
    """The same functions under ``twin_`` names, with the shortcut off: the output model built, validated, dumped."""
    twins = []
    for original in _PLAIN_TOOLS:
        twin = tool(name=f"twin_{original.name}", blocking=original.blocking)(original.fn)
        twin.plain_result = None
        twins.append(twin)
    return twins


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from([t.name for t in _PLAIN_TOOLS]),
    value=st.one_of(
        st.integers(),
        st.integers(min_value=10**4300, max_value=10**4400),  # past Python's str() limit: sent as digits
        st.floats(),  # nan, inf and -0.0 included
        st.text(),
        st.booleans(),
        st.none(),
        st.lists(st.integers(), max_size=2),
    ),
)
def test_a_value_of_exactly_the_declared_type_gives_the_result_the_output_model_would(
    workspace: Path, name: str, value: Any
) -> None:
    rig = Rig(workspace, config={"audit": {"enabled": False}}, registry=Registry([*_PLAIN_TOOLS, *_twins()]))
    result = rig.call_sync(name, {"value": value})
    expected = rig.call_sync(f"twin_{name}", {"value": value})
    assert (result.is_error, result.error_type) == (expected.is_error, expected.error_type)
    if not result.is_error:
        assert result.to_json() == expected.to_json()  # as a model sees it (nan is not equal to itself)
        assert type(result.output["result"]) is type(expected.output["result"])  # type: ignore[index]
        assert result.notes == expected.notes and result.meta.output_bytes == expected.meta.output_bytes


async def test_a_value_not_of_exactly_the_declared_type_is_still_validated(workspace: Path) -> None:
    rig = Rig(workspace, config={}, registry=Registry(_PLAIN_TOOLS))
    assert (await rig.call("gives_int", {"value": "7"})).output == {"result": 7}  # lax mode: "7" is 7
    assert (await rig.call("gives_float", {"value": 2})).output == {"result": 2.0}
    assert type((await rig.call("gives_float", {"value": 2})).output["result"]) is float  # type: ignore[index]
    refused = await rig.call("gives_int", {"value": "seven"})
    assert refused.error_type == "internal" and "gives_int" in (refused.message or "")
    assert (await rig.call("gives_bool", {"value": True, "wait": 0.001})).output == {"result": True}


async def test_a_tool_declared_to_return_none_gives_an_empty_output(workspace: Path) -> None:
    @tool(name="nothing_sync")
    def nothing_sync() -> None:
        """Do nothing, in a worker thread."""

    @tool(name="nothing_async")
    async def nothing_async() -> None:
        """Do nothing."""

    rig = Rig(workspace, config={}, registry=Registry([nothing_sync, nothing_async]))
    for name in ("nothing_sync", "nothing_async"):
        result = await rig.call(name, {})
        assert result.model_dump(mode="json") == {"is_error": False, "output": {}}, name


async def test_a_subclass_with_its_own_execute_and_a_function_taking_its_context_run_through_execute(
    workspace: Path,
) -> None:
    from toolrig.definition import FunctionTool

    class Doubled(FunctionTool):
        def execute(self, input: Any, ctx: ToolContext) -> Any:
            return self.wrap(self.fn(**input.__dict__) * 2)

    def seven() -> int:
        """Seven."""
        return 7

    @tool(name="tool_name_seen")
    async def tool_name_seen(ctx: ToolContext) -> str:
        """The name the context gives."""
        return ctx.tool_name

    doubled = Doubled(seven, name="doubled")
    assert not doubled.calls_fn_directly and tool_name_seen.calls_fn_directly is False
    rig = Rig(workspace, config={}, registry=Registry([doubled, tool_name_seen]))
    assert (await rig.call("doubled", {})).output == {"result": 14}
    assert (await rig.call("tool_name_seen", {})).output == {"result": "tool_name_seen"}


@pytest.mark.parametrize("timeout", [-1, -2.5, 0, math.nan, -math.inf])
async def test_a_deadline_that_is_no_time_is_refused_before_the_call_not_waited_on_forever(
    workspace: Path, timeout: float
) -> None:
    # -1 reached Lock.acquire(timeout=-1) for a sync tool: the loop blocked for the tool's whole run, untimed.
    def nap(seconds: float) -> float:
        """Sleep, then say how long."""
        return seconds

    rig = Rig(workspace, tools=[tool(nap)])
    with pytest.raises(UsageError, match="positive number of seconds"):
        await rig.call("nap", {"seconds": 0}, timeout_seconds=timeout)
    with pytest.raises(DefinitionError, match="positive number of seconds"):
        tool(timeout_seconds=timeout)(nap)
    assert not (await rig.call("nap", {"seconds": 0}, timeout_seconds=0.5)).is_error  # a real one still runs


# ------------------------------------------------------- members that wait outside an extension point until woken


def test_a_reserved_member_wakes_into_the_place_it_was_given() -> None:
    def first(call: ToolCall, result: ToolResult) -> None:
        return None

    def later(call: ToolCall, result: ToolResult) -> None:
        return None

    def mine(call: ToolCall, result: ToolResult) -> None:
        return None

    extensions = Extensions(audit=[first])
    sinks = extensions.audit
    place = extensions.reserve("audit", mine, awake=False)
    assert extensions.audit == [first]
    place.wake()
    place.wake()  # once only
    assert extensions.audit == [first, mine] and extensions.audit is sinks  # nothing joined after it: in place
    extensions = Extensions(audit=[first])
    place = extensions.reserve("audit", mine, awake=False)
    extensions.audit.append(later)
    place.wake()
    assert extensions.audit == [first, mine, later]  # where it would have been, had it been awake all along
    assert Extensions().reserve("audit", mine, awake=True).awake


async def test_a_member_woken_while_a_call_waits_in_its_list_neither_reruns_nor_skips_that_calls_steps(
    workspace: Path,
) -> None:
    """A call suspended in a gate keeps walking the list it began; the next call walks the woken member too."""
    rig = fast_path_rig(workspace)
    order: list[str] = []
    entered, release = anyio.Event(), anyio.Event()

    def dormant(call: ToolCall) -> None:
        order.append(f"dormant:{call.call_id}")

    async def waits(call: ToolCall) -> None:
        order.append(f"waits:{call.call_id}")
        if call.call_id == "first":
            entered.set()
            await release.wait()

    extensions = rig.executor.extensions
    place = extensions.reserve("before_tool", dormant, awake=False)
    extensions.before_tool.append(waits)
    async with anyio.create_task_group() as group:
        group.start_soon(partial(rig.call, "deadline_seen", {}, call_id="first"))
        await entered.wait()
        place.wake()
        release.set()
    assert not (await rig.call("deadline_seen", {}, call_id="second")).is_error
    assert [o for o in order if o.endswith("first")] == ["waits:first"]
    assert [o for o in order if o.endswith("second")] == ["dormant:second", "waits:second"]


async def test_a_gate_that_waits_hands_the_rest_of_the_walk_on_in_order(workspace: Path) -> None:
    rig = fast_path_rig(workspace)
    order: list[str] = []

    def plain(label: str) -> Any:
        def gate(call: ToolCall) -> None:
            order.append(label)

        return gate

    def waiting(label: str) -> Any:
        async def gate(call: ToolCall) -> None:
            await anyio.lowlevel.checkpoint()
            order.append(label)

        return gate

    extensions = rig.executor.extensions
    extensions.policy.extend([waiting("policy-1"), plain("policy-2")])
    extensions.rate_limit.append(plain("rate"))
    extensions.approval.extend([plain("approval-1"), waiting("approval-2"), plain("approval-3")])
    extensions.before_tool.append(waiting("before"))
    assert not (await rig.call("deadline_seen", {})).is_error
    walked = ["policy-1", "policy-2", "rate", "approval-1", "approval-2", "approval-3", "before"]
    assert order == walked
    order.clear()
    _, refusal = await rig.executor.decide("deadline_seen", {})
    assert refusal is None and order == walked


def test_two_threads_waking_one_member_at_once_put_it_in_its_list_once() -> None:
    """Two event loops (two threads) can meet the first "ask" together: the member joins once, not twice.

    Twice would be two audit rows for one call, two rate-limit tokens, or every hook run twice.
    """

    def sink(call: ToolCall, result: ToolResult) -> None:
        return None

    extensions = Extensions()
    place = extensions.reserve("audit", sink, awake=False)
    # The first thread stops right after its own check that the member is not awake yet...
    with Paused(place.wake, Reserved.wake.__code__, "line", nth=2):
        place.wake()  # ...and the second wakes it all the way meanwhile.
    assert extensions.audit == [sink]


class _Listing(BaseModel):
    names: list[str]
    meta: dict[str, Any]


_SHARED_LISTING = _Listing(names=["a"], meta={"k": "v"})


@tool(name="same_listing")
def same_listing() -> _Listing:
    """Return one and the same model instance on every call (a cache)."""
    return _SHARED_LISTING


async def test_results_built_from_the_template_share_no_mutable_part_across_calls(workspace: Path) -> None:
    """Each result's output, notes, content, meta and set of fields are its own: changing one changes no other."""
    rig = Rig(workspace, config={"audit": {"enabled": False}}, registry=Registry([same_listing, deadline_seen]))
    first, second = await rig.call("same_listing", {}), await rig.call("same_listing", {})
    assert first.output == second.output == {"names": ["a"], "meta": {"k": "v"}}
    for part in ("output", "notes", "content", "meta"):
        assert getattr(first, part) is not getattr(second, part), part
    assert first.output["names"] is not second.output["names"]  # type: ignore[index]
    first.output["names"].append("b")  # type: ignore[index]  # a consumer editing what it got
    first.notes.append("mine")
    assert second.output == {"names": ["a"], "meta": {"k": "v"}} and second.notes == []
    assert _SHARED_LISTING.names == ["a"]  # nor the tool's own object
    copied = first.model_copy(update={"next_action_hint": "changed"})
    third = await rig.call("deadline_seen", {})
    assert copied.model_fields_set >= {"next_action_hint"}
    assert third.model_dump(exclude_unset=True).keys() == {"is_error", "output"}  # no field set by another result


def test_a_started_call_reads_every_field_as_declared() -> None:
    """``ToolCall.start`` skips the fields a class default answers: every field must still read as declared."""
    call = ToolCall.start("t", "c1", "python", None, None, None, 0.0, None)
    fresh = ToolCall("t", None, {}, "c1", "python", started=0.0)
    for item in dataclasses.fields(ToolCall):
        assert getattr(call, item.name) == getattr(fresh, item.name), item.name
    other = ToolCall.start("t", "c2", "python", None, None, None, 0.0, None)
    assert call.subjects is not other.subjects and call.notes is not other.notes and call.raw_args is not other.raw_args
