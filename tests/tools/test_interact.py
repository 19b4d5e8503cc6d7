from __future__ import annotations

from pathlib import Path

from toolrig.events import Event
from toolrig.rig import Rig
from toolrig.stores import Stores


def test_write_todos_replaces_the_list_keeps_it_with_the_session_and_emits_it(workspace: Path) -> None:
    events: list[Event] = []
    rig = Rig(workspace)
    rig.events.subscribe(events.append)
    first = [{"task": "Read the code", "status": "completed"}, {"task": "Fix the bug", "status": "in_progress"}]
    result = rig.call_sync("write_todos", {"todos": first})
    assert result.output["summary"] == "1 of 2 completed; in progress: Fix the bug"
    rig.call_sync("write_todos", {"todos": [{"task": "Fix the bug", "status": "completed"}]})
    kept = Stores(rig.workspace.state_dir).notes.get(None, "todos")
    assert kept == [{"task": "Fix the bug", "status": "completed"}]  # replaced, and readable from another handle
    assert [e.todos for e in events if e.type == "todos"] == [first, [{"task": "Fix the bug", "status": "completed"}]]


def test_more_than_one_task_in_progress_is_an_error_the_model_can_fix(workspace: Path) -> None:
    todos = [{"task": "a", "status": "in_progress"}, {"task": "b", "status": "in_progress"}]
    result = Rig(workspace).call_sync("write_todos", {"todos": todos})
    assert result.error_type == "invalid_input" and "at most one" in result.message
    assert result.next_action_hint and "whole list" in result.next_action_hint


def test_the_seed_spelling_task_and_completed_is_accepted(workspace: Path) -> None:
    todos = [{"task": "a", "completed": True}, {"task": "b", "completed": False}]
    result = Rig(workspace).call_sync("write_todos", {"todos": todos})
    assert [t["status"] for t in result.output["todos"]] == ["completed", "pending"]


def test_suggest_followups_records_two_to_six_and_takes_labelled_prompts(workspace: Path) -> None:
    rig = Rig(workspace)
    done = rig.call_sync("suggest_followups", {"followups": ["Run the tests", {"prompt": "Open a PR", "label": "PR"}]})
    assert done.output == {"recorded": 2}
    assert Stores(rig.workspace.state_dir).notes.get(None, "followups") == ["Run the tests", "PR"]
    assert rig.call_sync("suggest_followups", {"followups": ["only one"]}).error_type == "invalid_input"
    assert rig.call_sync("suggest_followups", {"followups": ["x"] * 7}).error_type == "invalid_input"
