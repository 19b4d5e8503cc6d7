"""Governance over the built-in tools that act on the world: run_command, fetch_url, send_email."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.conftest import Call
from tests.policy.conftest import last_row
from toolrig import Rig, tool
from toolrig.approvals.model import ApprovalDecision, ApprovalRequest
from toolrig.config import AgentConfig, Config
from toolrig.executor import ToolCall
from toolrig.policy.audit import AuditLog
from toolrig.policy.ratelimit import RateLimiter
from toolrig.policy.rules import Policy
from toolrig.registry import Registry

POLICY = """\
tools:
  rules:
    - {tool: run_command, subject: "rm *", verdict: deny}
    - {tool: fetch_url, subject: "*://*.internal/*", verdict: deny, reason: internal hosts stay internal}
    - {tool: send_email, subject: "*@evil.io", verdict: deny}
approvals:
  mode: always
  allow: ["run_command:echo *", "run_command:pwd"]
"""


def test_an_allowed_command_really_runs(consumer: Call, user_config: Callable[[str], Path], workspace: Path) -> None:
    user_config(POLICY)
    result = consumer("run_command", {"command": "echo governed && pwd"})
    assert not result["is_error"], result
    assert result["output"]["stdout"] == f"governed\n{workspace.resolve()}\n"
    row = last_row(workspace)
    assert row.rule == "approvals.allow[0] (run_command:echo *), approvals.allow[1] (run_command:pwd)"
    assert row.subjects == ["echo governed && pwd"]


def test_a_denied_part_stops_the_whole_command_before_it_starts(
    consumer: Call, user_config: Callable[[str], Path], workspace: Path
) -> None:
    user_config(POLICY)
    (workspace / "keep.txt").write_text("x")
    result = consumer("run_command", {"command": "echo hi && sudo rm -f keep.txt"})
    assert result["error_type"] == "denied" and "tools.rules[0]" in result["message"]
    assert (workspace / "keep.txt").exists()
    result = consumer("run_command", {"command": "echo hi; touch made.txt"})  # not covered: asks, nobody answers
    assert result["error_type"] == "denied" and not (workspace / "made.txt").exists()


def test_urls_and_recipients_are_judged_before_any_connection(
    consumer: Call, user_config: Callable[[str], Path], workspace: Path
) -> None:
    user_config(POLICY)
    result = consumer("fetch_url", {"url": "https://db.internal/rows"})
    assert result["message"] == "Refused by policy: internal hosts stay internal."
    result = consumer("send_email", {"to": ["Boss <BOSS@EVIL.IO>"], "subject": "hi", "body": "x"})
    assert result["error_type"] == "denied" and last_row(workspace).rule == "tools.rules[2]"


# ---------------------------------------------- gates that join the calls' path when something is configured
# With nothing configured, the rate-limit and approval gates and the audit sink wait outside the executor's
# extension points (a call does not walk them). Each test configures one after the rig has served calls
# and shows the next call goes through it, and that `policy explain` (Executor.decide) still agrees.


def _counting_rig(workspace: Path) -> tuple[Rig, list[str]]:
    ran: list[str] = []

    @tool(name="note_down")
    async def note_down(text: str) -> str:
        """Remember a text."""
        ran.append(text)
        return text

    rig = Rig(workspace, config={"audit": {"enabled": False}}, registry=Registry([note_down]))
    return rig, ran


@pytest.mark.anyio
async def test_nothing_configured_leaves_the_approval_and_audit_steps_off_the_path(workspace: Path) -> None:
    rig, _ = _counting_rig(workspace)
    assert not (await rig.call("note_down", {"text": "a"})).is_error
    ext = rig.extensions
    assert ext.policy == [rig.governance.check_policy]
    assert ext.rate_limit == [rig.governance.check_rate]  # a caller's view may bring limits of its own
    assert ext.approval == [] and ext.audit == []


@pytest.mark.anyio
def _as(rig: Rig, label: str, profile: dict[str, Any]) -> dict[str, Any]:
    """Executor options for a call that brings its own view (as a subagent's run does): nothing is registered."""
    return {"agent_id": label, "agent": rig.agent_view().child(label, AgentConfig.model_validate(profile))}


@pytest.mark.anyio
async def test_a_rate_limit_a_callers_view_brings_holds_for_its_calls_only(workspace: Path) -> None:
    rig, ran = _counting_rig(workspace)
    assert not (await rig.call("note_down", {"text": "a"})).is_error
    late = _as(rig, "late", {"rate_limit": "1/hour"})
    assert not (await rig.executor.invoke("note_down", {"text": "b"}, **late)).is_error
    limited = await rig.executor.invoke("note_down", {"text": "c"}, **late)
    assert limited.error_type == "rate_limited" and "agents.late.rate_limit" in (limited.message or "")
    assert ran == ["a", "b"]
    assert not (await rig.call("note_down", {"text": "d"})).is_error  # the limit is the agent's only
    rig.close()


@pytest.mark.anyio
async def test_a_limiter_set_after_calls_is_walked_by_the_next_call(workspace: Path) -> None:
    rig, ran = _counting_rig(workspace)
    assert not (await rig.call("note_down", {"text": "a"})).is_error
    config = Config.model_validate({"rate_limits": {"note_down": "1/hour"}})
    rig.governance.limiter = RateLimiter(config, workspace / ".toolrig")
    assert not (await rig.call("note_down", {"text": "b"})).is_error
    assert (await rig.call("note_down", {"text": "c"})).error_type == "rate_limited"
    assert ran == ["a", "b"]
    rig.close()


class _Asked:
    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.requests: list[ApprovalRequest] = []

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        self.requests.extend(requests)
        return [ApprovalDecision(self.verdict) for _ in requests]  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_approvals_turned_on_for_an_agent_after_calls_ask_from_its_next_call(workspace: Path) -> None:
    rig, ran = _counting_rig(workspace)
    assert not (await rig.call("note_down", {"text": "a"})).is_error
    asked = _Asked("deny")
    careful = _as(rig, "careful", {"approvals": {"mode": "always"}})
    refused = await rig.executor.invoke("note_down", {"text": "b"}, channel=asked, **careful)
    assert refused.error_type == "denied"
    assert [r.tool for r in asked.requests] == ["note_down"] and ran == ["a"]
    # `policy explain` walks the same gate: it reports the ask, and asks nobody.
    call, result = await rig.executor.decide("note_down", {"text": "c"}, **careful)
    assert (call.verdict, call.decided_by, result) == ("ask", "agents.careful.approvals.mode", None)
    assert len(asked.requests) == 1 and rig.governance.broker._arriving == set()


@pytest.mark.anyio
async def test_approvals_turned_on_with_nobody_to_ask_fall_back_from_the_next_call(workspace: Path) -> None:
    """No channel: the first "ask" itself puts the approval gate on the path, before that call reaches it."""
    rig, ran = _counting_rig(workspace)
    assert not (await rig.call("note_down", {"text": "a"})).is_error
    careful = _as(rig, "careful", {"approvals": {"mode": "always"}})
    explained, _ = await rig.executor.decide("note_down", {"text": "b"}, **careful)
    refused = await rig.executor.invoke("note_down", {"text": "b"}, **careful)
    assert refused.error_type == "denied" and ran == ["a"]  # approvals.fallback: deny
    again, _ = await rig.executor.decide("note_down", {"text": "b"}, **careful)
    assert (
        (explained.verdict, explained.decided_by)
        == (again.verdict, again.decided_by)
        == (
            "ask",
            "agents.careful.approvals.mode",
        )
    )


@pytest.mark.anyio
async def test_a_channel_a_call_brings_hears_every_call_leave_the_way_to_approval(workspace: Path) -> None:
    """The broker counts calls between the policy and the approval step (to batch what they ask): a call
    refused on the way (by a rate limit) is told to it by the audit sink, which the channel put on the path."""
    rig, _ = _counting_rig(workspace)
    busy = _as(rig, "busy", {"rate_limit": "1/hour"})
    assert not (await rig.call("note_down", {"text": "a"})).is_error
    busy["channel"] = _Asked("allow_once")  # the caller's channel, passed with its calls
    assert not (await rig.executor.invoke("note_down", {"text": "b"}, **busy)).is_error
    assert rig.governance.broker._arriving == set()
    assert (await rig.executor.invoke("note_down", {"text": "c"}, **busy)).error_type == "rate_limited"
    assert rig.governance.broker._arriving == set()
    rig.close()


@pytest.mark.anyio
async def test_an_audit_on_from_the_start_records_every_call_and_off_records_none(workspace: Path) -> None:
    off, _ = _counting_rig(workspace)
    assert not (await off.call("note_down", {"text": "a"})).is_error
    assert not (workspace / ".toolrig" / "audit.db").exists()
    on = Rig(workspace, config={}, registry=off.catalog)
    assert on.extensions.audit == [on.governance.record]
    await on.call("note_down", {"text": "b"})
    await on.call("nope", {})
    assert [row.tool for row in AuditLog(workspace / ".toolrig").query(limit=None)] == ["note_down", "nope"]
    on.close()


@pytest.mark.anyio
async def test_a_policy_put_in_place_after_calls_decides_the_next_call_and_its_explanation(workspace: Path) -> None:
    """The policy gate answers from its policy's plans: a policy replaced after calls is the one asked after."""
    rig, ran = _counting_rig(workspace)
    assert not (await rig.call("note_down", {"text": "a"})).is_error  # planned: no rule names it, settled "allow"
    stricter = Config.model_validate({"tools": {"rules": [{"tool": "note_down", "verdict": "deny"}]}})
    rig.governance.policy = Policy(stricter, rig.workspace)
    refused = await rig.call("note_down", {"text": "b"})
    assert refused.error_type == "denied" and ran == ["a"]
    call, result = await rig.executor.decide("note_down", {"text": "c"})
    assert (call.verdict, call.decided_by) == ("deny", "tools.rules[0]") and result is not None
    asking = Config.model_validate({"approvals": {"mode": "always"}})
    rig.governance.policy = Policy(asking, rig.workspace)  # and an "ask" from it puts the approval gate on the path
    assert (await rig.call("note_down", {"text": "d"})).error_type == "denied" and ran == ["a"]  # fallback: deny


@pytest.mark.anyio
@pytest.mark.parametrize("waits", [False, True], ids=["plain", "async"])
@pytest.mark.parametrize("watched", [False, True], ids=["alone", "approval-watched"])
async def test_a_gate_added_after_calls_that_answers_ask_is_asked(workspace: Path, waits: bool, watched: bool) -> None:
    """Any gate before the approval point may set ``verdict = "ask"`` (architecture.md); the call is asked."""
    rig, ran = _counting_rig(workspace)
    seen: list[str] = []
    if watched:  # another member at the approval point (it only looks): the approval gate is still needed
        rig.extensions.approval.append(lambda call: seen.append(call.verdict))
    assert not (await rig.call("note_down", {"text": "a"})).is_error
    assert rig.governance.check_approval not in rig.extensions.approval  # nothing asked yet: it waits

    def ask_for_secrets(call: ToolCall) -> None:
        if "secret" in call.raw_args.get("text", ""):
            call.verdict, call.decided_by, call.verdict_reason = "ask", "my.gate", "it mentions a secret"

    async def ask_later(call: ToolCall) -> None:
        await anyio.lowlevel.checkpoint()
        ask_for_secrets(call)

    rig.extensions.rate_limit.append(ask_later if waits else ask_for_secrets)
    refused = await rig.call("note_down", {"text": "the secret"})  # nobody to ask: approvals.fallback (deny)
    assert refused.error_type == "denied" and ran == ["a"]
    asked = _Asked("allow_once")
    assert not (await rig.call("note_down", {"text": "another secret"}, channel=asked)).is_error
    assert [r.reason for r in asked.requests] == ["it mentions a secret"] and ran == ["a", "another secret"]


@pytest.mark.anyio
async def test_a_tool_hidden_from_a_view_a_call_brings_is_refused_before_its_arguments_are_read(
    workspace: Path,
) -> None:
    """A subagent's view hides tools as a configured agent's does: its schema never shows."""
    rig, ran = _counting_rig(workspace)  # no agents configured
    assert not (await rig.call("note_down", {"text": "a"})).is_error
    child = _as(rig, "child", {"tools": []})
    for args in ({"text": "b"}, {"wrong": 1}, "not json"):
        refused = await rig.executor.invoke("note_down", args, **child)
        assert refused.error_type == "denied", refused
        assert "text" not in (refused.message or "") + (refused.next_action_hint or "")
    call, result = await rig.executor.decide("note_down", {"wrong": 1}, **child)
    assert result is not None and (call.verdict, call.decided_by) == ("deny", "agents.child.tools")
    assert ran == ["a"]


@pytest.mark.anyio
@pytest.mark.parametrize("on_at_build", [True, False])
async def test_the_audit_setting_is_the_one_the_rig_was_built_with(workspace: Path, on_at_build: bool) -> None:
    """The audit, as every governance setting, is read from the config when the rig is built: flipping the
    config object afterwards neither turns it off for some calls (it was read per call) nor on for none."""
    config = {"audit": {"enabled": on_at_build}}
    rig = Rig(workspace, config=config, registry=_counting_rig(workspace)[0].catalog)
    rig.config.audit.enabled = not on_at_build
    await rig.call("note_down", {"text": "a"})
    audit_file = workspace / ".toolrig" / "audit.db"
    rows = AuditLog(workspace / ".toolrig").query(limit=None) if audit_file.exists() else []
    assert [row.tool for row in rows] == (["note_down"] if on_at_build else [])
    rig.close()


@pytest.mark.anyio
async def test_the_approval_mode_is_the_one_the_rig_was_built_with_for_every_tool(workspace: Path) -> None:
    """Flipping ``approvals.mode`` on the config object after build changed the verdict of the tools not yet
    called and kept it for the others (their plans were cached): one rule for all, the built one."""

    @tool(name="other_note")
    async def other_note(text: str) -> str:
        """Remember another text."""
        return text

    first, _ = _counting_rig(workspace)
    rig = Rig(workspace, config={"audit": {"enabled": False}}, registry=Registry([*first.catalog.list(), other_note]))
    assert not (await rig.call("note_down", {"text": "a"})).is_error  # planned under "off"
    rig.config.approvals.mode = "always"
    for name in ("note_down", "other_note"):  # planned before the flip, and not
        assert not (await rig.call(name, {"text": "b"})).is_error
        call, _ = await rig.executor.decide(name, {"text": "c"})
        assert (call.verdict, call.decided_by) == ("allow", "approvals.mode")
