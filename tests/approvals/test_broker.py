from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.governed_tools import Shell, governed_tools
from tests.support.sample_tools import TextIn, TextOut
from toolrig import Tool, ToolContext
from toolrig.approvals import ApprovalDecision, ApprovalRequest, fingerprint
from toolrig.events import ApprovalRequestEvent, ApprovalResolvedEvent, Event
from toolrig.policy.audit import AuditLog
from toolrig.registry import Registry
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio

Answer = Callable[[ApprovalRequest], ApprovalDecision]


class Desk:
    """A real approval channel for programs: answers by a rule and remembers every batch it was shown."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.answer = answer or (lambda request: ApprovalDecision("allow_once"))
        self.batches: list[list[ApprovalRequest]] = []
        self.asked = anyio.Event()

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        self.batches.append(list(requests))
        self.asked.set()
        return [self.answer(request) for request in requests]


class Silent:
    """A channel that never answers (a person who walked away)."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.calls = 0

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        self.calls += 1
        self.asked.set()
        await anyio.Event().wait()
        raise AssertionError("unreachable")


def make_rig(workspace: Path, channel: Any = None, config: Any = None, **approvals: Any) -> Rig:
    settings = config if config is not None else {"approvals": {"mode": "always", **approvals}}
    return Rig(workspace, config=settings, registry=Registry(governed_tools()), approval_channel=channel)


def rows(workspace: Path) -> list[Any]:
    log = AuditLog(workspace / ".toolrig")
    try:
        return log.query()
    finally:
        log.close()


@pytest.fixture(autouse=True)
def clear_shell_log() -> None:
    Shell.log.clear()


async def test_allow_once_runs_the_call_and_asks_again_next_time(workspace: Path) -> None:
    desk = Desk()
    rig = make_rig(workspace, desk)
    for _ in range(2):
        assert not (await rig.call("shell", {"command": "make"})).is_error
    assert len(desk.batches) == 2 and Shell.log == ["make", "make"]
    request = desk.batches[0][0]
    assert request.tool == "shell" and request.subjects == ("make",)
    assert request.fingerprint == fingerprint("shell", {"command": "make"})
    assert request.suggested == ("shell:make",) and "always" in request.reason
    assert [r.approval for r in rows(workspace)] == ["allow_once", "allow_once"]


async def test_deny_with_a_reason_stops_the_call_and_the_model_reads_the_reason(workspace: Path) -> None:
    rig = make_rig(workspace, Desk(lambda r: ApprovalDecision("deny", "use the staging database")))
    result = await rig.call("shell", {"command": "psql prod"})
    assert result.error_type == "denied"
    assert result.message == "The user did not approve this call: use the staging database"
    assert Shell.log == []
    row = rows(workspace)[-1]
    assert (row.decision, row.approval, row.error_type) == ("deny", "deny", "denied")


async def test_allow_always_saves_the_pattern_keeping_the_file_and_stops_asking(
    workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("# my settings\napprovals:\n  mode: always  # ask for everything\n  allow:\n    - calculate\n")
    desk = Desk(lambda r: ApprovalDecision("allow_always"))
    rig = Rig(workspace, config=config, registry=Registry(governed_tools()), approval_channel=desk)
    assert not (await rig.call("shell", {"command": "git status"})).is_error
    assert not (await rig.call("shell", {"command": "git status"})).is_error
    assert len(desk.batches) == 1  # the second call was allowed by the saved pattern
    text = config.read_text()
    assert text.startswith("# my settings\n") and "# ask for everything" in text
    assert "- shell:git status" in text and "- calculate" in text
    again = Rig(workspace, config=config, registry=Registry(governed_tools()), approval_channel=desk)
    assert not (await again.call("shell", {"command": "git status"})).is_error
    assert len(desk.batches) == 1
    assert (await again.call("shell", {"command": "git status && rm -rf /"})).is_error is False
    assert len(desk.batches) == 2  # a different command still asks


async def test_allow_always_for_an_agent_goes_to_that_agents_allowlist(workspace: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("approvals: {mode: always}\nagents:\n  builder: {}\n")
    desk = Desk(lambda r: ApprovalDecision("allow_always", patterns=("shell:make *",)))
    rig = Rig(workspace, config=config, agent="builder", registry=Registry(governed_tools()), approval_channel=desk)
    assert not (await rig.call("shell", {"command": "make all"})).is_error
    assert not (await rig.call("shell", {"command": "make test"})).is_error
    assert len(desk.batches) == 1
    text = config.read_text()
    assert "builder:\n    approvals:\n      allow:\n      - shell:make *" in text
    other = Rig(workspace, config=config, registry=Registry(governed_tools()), approval_channel=desk)
    await other.call("shell", {"command": "make all"})
    assert len(desk.batches) == 2  # another agent is not covered by the builder's answer


@pytest.mark.parametrize(("fallback", "ran"), [("deny", False), ("allow", True)])
async def test_an_unanswered_request_times_out_to_the_fallback(workspace: Path, fallback: str, ran: bool) -> None:
    silent = Silent()
    rig = make_rig(workspace, silent, timeout_seconds=0.05, fallback=fallback)
    with anyio.fail_after(5):
        result = await rig.call("shell", {"command": "deploy"})
    assert result.is_error is not ran and (Shell.log == ["deploy"]) is ran
    if not ran:
        assert result.message == (
            "The call needed approval and was refused: no answer came within 0.05 seconds; "
            "approvals.fallback denies it."
        )
    assert rows(workspace)[-1].approval == f"timeout:{fallback}"


async def test_parallel_calls_that_ask_at_once_are_one_batch(workspace: Path) -> None:
    desk = Desk(
        lambda r: ApprovalDecision("deny", "no") if "rm" in r.args["command"] else ApprovalDecision("allow_once")
    )
    rig = make_rig(workspace, desk, config={"approvals": {"mode": "smart"}})
    calls = [
        ("shell", {"command": "ls"}),
        ("peek", {"paths": []}),
        ("shell", {"command": "rm x"}),
        ("shell", {"command": "pwd"}),
    ]
    with anyio.fail_after(5):
        results = await rig.executor.invoke_many(calls)
    assert [len(b) for b in desk.batches] == [3]  # the read-only peek did not ask
    assert [r.args["command"] for r in desk.batches[0]] == ["ls", "rm x", "pwd"]
    assert [r.is_error for r in results] == [False, False, True, False]
    assert sorted(Shell.log) == ["ls", "pwd"]


async def test_a_front_end_can_hold_a_batch_open_while_it_starts_calls(workspace: Path) -> None:
    desk = Desk()
    rig = make_rig(workspace, desk)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            with rig.governance.broker.collecting():
                group.start_soon(rig.call, "shell", {"command": "one"})
                for _ in range(20):  # the first call reaches its approval step and waits for the batch
                    await anyio.lowlevel.checkpoint()
                assert desk.batches == []
                group.start_soon(rig.call, "shell", {"command": "two"})
                for _ in range(20):
                    await anyio.lowlevel.checkpoint()
    assert [[r.args["command"] for r in b] for b in desk.batches] == [["one", "two"]]


async def test_when_the_leading_call_is_cancelled_the_others_are_asked_again(workspace: Path) -> None:
    class FirstHangs(Desk):
        async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
            self.batches.append(list(requests))
            self.asked.set()
            if len(self.batches) == 1:
                await anyio.Event().wait()
            return [ApprovalDecision("allow_once") for _ in requests]

    desk = FirstHangs()
    rig = make_rig(workspace, desk)
    outcome: dict[str, Any] = {}

    async def leader(scope: anyio.CancelScope) -> None:
        with scope:
            outcome["a"] = await rig.call("shell", {"command": "a"})

    async def follower() -> None:
        outcome["b"] = await rig.call("shell", {"command": "b"})

    scope = anyio.CancelScope()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(leader, scope)
            group.start_soon(follower)
            await desk.asked.wait()
            scope.cancel()
    assert "a" not in outcome and not outcome["b"].is_error
    assert [[r.args["command"] for r in b] for b in desk.batches] == [["a", "b"], ["b"]]
    assert {r.args["command"]: r.decision for r in rows(workspace)} == {"a": "ask", "b": "allow"}


async def test_a_grant_approves_exactly_one_call_with_those_arguments(workspace: Path) -> None:
    desk = Desk(lambda r: ApprovalDecision("deny", "asked"))
    rig = make_rig(workspace, desk)
    key = rig.grant("shell", {"command": "make"})
    assert key == fingerprint("shell", {"command": "make"})
    assert (await rig.call("shell", {"command": "make install"})).is_error  # other arguments: asked, denied
    assert not (await rig.call("shell", {"command": "make"})).is_error
    assert (await rig.call("shell", {"command": "make"})).is_error  # used up
    assert [r.approval for r in rows(workspace)] == ["deny", "grant", "deny"]
    assert Shell.log == ["make"]


async def test_an_answer_bound_to_other_arguments_approves_nothing(workspace: Path) -> None:
    stale = fingerprint("shell", {"command": "ls"})
    rig = make_rig(workspace, Desk(lambda r: ApprovalDecision("allow_once", fingerprint=stale)))
    result = await rig.call("shell", {"command": "rm -rf /"})
    assert result.is_error and "other arguments" in (result.message or "")
    assert Shell.log == [] and rows(workspace)[-1].approval == "deny:fingerprint"


async def test_approval_events_go_to_the_rig_and_to_the_callers_sink(workspace: Path) -> None:
    rig = make_rig(workspace, Desk(lambda r: ApprovalDecision("deny", "not now")))
    bus: list[Event] = []
    rig.events.subscribe(bus.append)

    class Sink:
        def __init__(self) -> None:
            self.seen: list[Event] = []

        def emit(self, event: Event) -> None:
            self.seen.append(event)

    await rig.call("shell", {"command": "ls"})
    sink = Sink()
    await rig.call("shell", {"command": "pwd"}, events=sink)
    request, resolved = [e for e in bus if e.type.startswith("approval")]
    assert isinstance(request, ApprovalRequestEvent) and request.args == {"command": "ls"}
    assert request.subjects == ["ls"] and request.reason
    assert isinstance(resolved, ApprovalResolvedEvent) and resolved.decision == "deny" and resolved.reason == "not now"
    assert request.id == resolved.id
    assert [e.type for e in sink.seen] == ["approval_request", "approval_resolved"]


async def test_a_broken_channel_falls_back_and_is_logged(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
            raise RuntimeError("ui crashed")

    class Short:
        async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
            return []

    with caplog.at_level(logging.ERROR, logger="toolrig.approvals.broker"):
        assert (await make_rig(workspace, Broken()).call("shell", {"command": "ls"})).is_error
        assert (await make_rig(workspace, Short()).call("shell", {"command": "ls"})).is_error
    assert [r.approval for r in rows(workspace)] == ["channel_error:deny", "channel_error:deny"]
    assert any("ui crashed" in (r.exc_text or "") for r in caplog.records)
    assert any("answered 0 of 1" in r.getMessage() for r in caplog.records)


class AskFirst(Tool[TextIn, TextOut]):
    name = "ask_first"
    group = "governed"
    description = "Asks the user before doing something extra."

    async def execute(self, input: TextIn, ctx: ToolContext) -> TextOut:
        ok = await ctx.approvals.ask(self.name, input.text, "wants to go further")
        return TextOut(text="went further" if ok else "stayed")


async def test_a_tool_can_ask_mid_call_through_the_same_channel(workspace: Path) -> None:
    desk = Desk(lambda r: ApprovalDecision("deny"))
    rules = {"tools": {"rules": [{"tool": "ask_first", "verdict": "allow"}]}}
    off = Rig(workspace, config=rules, registry=Registry([AskFirst()]), approval_channel=desk)
    assert (await off.call("ask_first", {"text": "x"})).output == {"text": "went further"}  # mode off: yes
    on = Rig(
        workspace,
        config={**rules, "approvals": {"mode": "smart"}},
        registry=Registry([AskFirst()]),
        approval_channel=desk,
    )
    assert (await on.call("ask_first", {"text": "deep"})).output == {"text": "stayed"}
    assert [r.subjects for b in desk.batches for r in b] == [("deep",)]


async def test_a_caller_waiting_on_its_person_does_not_hold_back_another_callers_question(workspace: Path) -> None:
    """Two runs on one Rig (a gateway's), each with its own channel: B is asked while A's person is still away.

    The broker led one batch at a time for the whole Rig, so B's question waited until A's was answered.
    """
    away, desk = Silent(), Desk()
    rig = make_rig(workspace)
    outcome: dict[str, Any] = {}
    b_done = anyio.Event()

    async def caller(name: str, channel: Any) -> None:
        outcome[name] = await rig.call("shell", {"command": name}, channel=channel)
        b_done.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(caller, "a", away)
            await away.asked.wait()
            group.start_soon(caller, "b", desk)
            await b_done.wait()
            group.cancel_scope.cancel()
    assert not outcome["b"].is_error and "a" not in outcome
    assert [[r.args["command"] for r in b] for b in desk.batches] == [["b"]]
    assert Shell.log == ["b"]
