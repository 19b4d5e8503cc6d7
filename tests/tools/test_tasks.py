"""The task tools: queueing from a run, and the terminal tools' refusals outside a task's run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.tools import tasks as task_tools

pytestmark = pytest.mark.anyio


@pytest.fixture
def rig(workspace: Path) -> Rig:
    return Rig(workspace, config={}, registry=Registry(task_tools.TOOLS))


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("complete_task", {"summary": "done"}),
        ("fail_task", {"reason": "no"}),
        ("wait_task", {"until": "+5m"}),
    ],
)
async def test_terminal_tools_outside_a_task_run_get_a_clear_error(rig: Rig, tool: str, args: dict[str, Any]) -> None:
    result = await rig.call(tool, args)
    assert result.is_error
    assert result.error_type == "invalid_input"
    assert "has no task" in (result.message or "")


async def test_the_tasks_tool_queues_a_task_and_shows_it(rig: Rig) -> None:
    added = await rig.call("tasks", {"action": "add", "prompt": "do it later", "after": "+1h"})
    assert not added.is_error, added
    task_id = added.output["task"]["id"]
    shown = await rig.call("tasks", {"action": "show", "id": task_id})
    assert shown.output["task"]["status"] == "queued"


@pytest.mark.parametrize(
    "args",
    [
        {"action": "add"},
        {"action": "add", "prompt": "x", "after": "next week"},
        {"action": "show"},
        {"action": "show", "id": "t-missing"},
    ],
)
async def test_bad_task_calls_get_clear_errors(rig: Rig, args: dict[str, Any]) -> None:
    result = await rig.call("tasks", args)
    assert result.is_error
    assert result.error_type in ("invalid_input", "not_found")


async def test_wait_task_in_a_task_run_checks_its_arguments(rig: Rig) -> None:
    assert rig.executor.durable is not None
    bound = rig.executor.durable.bound("t-self")  # type: ignore[attr-defined]
    rig.executor.durable = bound
    both = await rig.call("wait_task", {"until": "+5m", "for_task": "t-other"})
    assert both.is_error and both.error_type == "invalid_input"
    neither = await rig.call("wait_task", {})
    assert neither.is_error and neither.error_type == "invalid_input"
    itself = await rig.call("wait_task", {"for_task": "t-self"})
    assert itself.is_error
    unknown = await rig.call("wait_task", {"for_task": "t-nobody"})
    assert unknown.is_error and unknown.error_type == "not_found"
    bad_time = await rig.call("wait_task", {"until": "soonish"})
    assert bad_time.is_error and bad_time.error_type == "invalid_input"
    ok = await rig.call("wait_task", {"until": "+5m"})
    assert not ok.is_error and ok.output["task_status"] == "waiting"


async def test_a_task_queued_by_an_agent_runs_under_that_agents_profile(workspace: Path) -> None:
    rig = Rig(
        workspace,
        config={"agents": {"helper": {"tools": ["tasks"]}}},
        registry=Registry(task_tools.TOOLS),
        agent="helper",
    )
    added = await rig.call("tasks", {"action": "add", "prompt": "later"})
    assert not added.is_error, added
    assert rig.executor.durable is not None
    task = rig.executor.durable.tasks.task(added.output["task"]["id"])
    assert task is not None and task["agent"] == "helper"


@pytest.mark.parametrize(
    "after", ["+99999999999999999999s", "+999999999h", "9999-12-31T23:59:59-23:59", "+" + "9" * 5000 + "s"]
)
async def test_a_task_time_no_date_can_hold_is_refused_and_nothing_is_stored(rig: Rig, after: str) -> None:
    from toolrig.durable.tasks import parse_time

    result = await rig.call("tasks", {"action": "add", "prompt": "later", "after": after[:64]})
    assert result.is_error and result.error_type == "invalid_input", result
    assert result.next_action_hint
    assert rig.executor.durable is not None
    assert rig.executor.durable.records.tasks(status=None, limit=10) == []  # type: ignore[attr-defined]
    from toolrig.durable.api import DurableError

    with pytest.raises(DurableError):
        parse_time(after, 1_790_000_000.0)  # the CLI's path (`toolrig tasks add --after`), no length limit


@pytest.mark.parametrize("until", ["+9999999d", "9999-12-31T23:59:59-23:59"])
async def test_wait_task_until_a_time_no_date_can_hold_is_invalid_input(rig: Rig, until: str) -> None:
    assert rig.executor.durable is not None
    rig.executor.durable = rig.executor.durable.bound("t-self")  # type: ignore[attr-defined]
    result = await rig.call("wait_task", {"until": until})
    assert result.is_error and result.error_type == "invalid_input", result


def test_a_task_row_with_an_unrepresentable_time_is_still_shown() -> None:
    from toolrig.durable.tasks import view

    row = {
        "id": "t-1",
        "kind": "task",
        "status": "queued",
        "agent": None,
        "job_id": None,
        "parent_id": None,
        "created_at": 1.0,
        "not_before": 1e20,
        "wait_for": None,
        "attempt": 0,
        "prompt": "p",
        "worker": None,
        "started_at": None,
        "ended_at": None,
        "result": None,
        "session_id": None,
    }
    shown = view(row)
    assert "out of range" in str(shown["not_before"])


def open_files_under(path: Path) -> list[str]:
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = fd.readlink()
        except OSError:
            continue
        if target.is_relative_to(path):
            found.append(target.name)
    return found


async def test_closing_a_rig_lets_go_of_the_tasks_database_and_another_rig_on_it_goes_on(workspace: Path) -> None:
    """A host that opens rigs on many workspaces kept every workspace's pooled connections for its whole life."""
    state = workspace / ".toolrig"
    first, second = (Rig(workspace, config={}, registry=Registry(task_tools.TOOLS)) for _ in range(2))
    added = [await rig.call("tasks", {"action": "add", "prompt": "later", "after": "+1h"}) for rig in (first, second)]
    ids = [result.output["task"]["id"] for result in added]
    assert "durable.sqlite" in open_files_under(state)
    first.close()
    shown = await second.call("tasks", {"action": "show", "id": ids[0]})  # the engine is shared: still open for it
    assert not shown.is_error and shown.output["task"]["status"] == "queued", shown
    second.close()
    assert [name for name in open_files_under(state) if name.startswith("durable")] == []
    again = await first.call("tasks", {"action": "show", "id": ids[1]})  # a closed rig opens it again on use
    assert not again.is_error and again.output["task"]["status"] == "queued", again
    first.close()


async def test_a_model_reads_and_waits_only_for_tasks_of_its_own_agent(workspace: Path) -> None:
    """Another agent's task is that profile's work: its result was readable by id (tasks show, wait_task), and a
    firing's id can be worked out from its job's name and time. Not found, as a missing id is."""
    config = {"agents": {"reader": {"tools": ["tasks", "wait_task"]}, "reporter": {"tools": ["tasks", "wait_task"]}}}
    reporter, reader = (
        Rig(workspace, config=config, registry=Registry(task_tools.TOOLS), agent=name)
        for name in ("reporter", "reader")
    )
    added = await reporter.call("tasks", {"action": "add", "prompt": "payroll"})
    task_id = added.output["task"]["id"]
    assert reporter.executor.durable is not None
    reporter.executor.durable.tasks.records.set_task(task_id, status="done", result="SECRET")  # as a worker would
    own = await reporter.call("tasks", {"action": "show", "id": task_id})
    assert own.output["task"]["result"] == "SECRET"
    missing = await reader.call("tasks", {"action": "show", "id": "t-000000000000"})
    other = await reader.call("tasks", {"action": "show", "id": task_id})
    assert other.error_type == missing.error_type == "not_found", other
    assert other.message == missing.message.replace("t-000000000000", task_id)  # nothing tells the two apart
    waited = await reader.call("wait_task", {"task_ids": [task_id], "timeout_seconds": 1})
    assert waited.error_type == "not_found" and "SECRET" not in waited.to_json(), waited
    mine = await reporter.call("wait_task", {"task_ids": [task_id], "timeout_seconds": 1})
    assert not mine.is_error and mine.output["ended"][0]["output"] == "SECRET", mine
    for rig in (reporter, reader):
        rig.close()


@pytest.mark.parametrize(
    ("tool", "args", "outcome"),
    [
        ("complete_task", {"summary": "done"}, "invalid_input"),  # past the gate: refused only for having no task
        ("fail_task", {"reason": "no"}, "invalid_input"),
        ("write_todos", {"todos": [{"task": "a", "status": "in_progress"}]}, None),
        ("suggest_followups", {"followups": ["one", "two"]}, None),
    ],
)
async def test_tools_that_report_only_on_their_own_run_need_no_approval_in_smart_mode(
    workspace: Path, tool: str, args: dict[str, Any], outcome: str | None
) -> None:
    """A queued task under `approvals: {mode: smart}` paused again at complete_task: a report is no side effect."""
    rig = Rig(workspace, config={"approvals": {"mode": "smart", "fallback": "deny"}})
    result = await rig.call(tool, args)
    assert result.error_type == outcome, result
    control = await rig.call("tasks", {"action": "add", "prompt": "later"})
    assert control.error_type == "denied"  # the same gate still asks (here: refuses) for what changes things
