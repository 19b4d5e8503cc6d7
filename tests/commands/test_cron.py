"""``toolrig cron`` and ``toolrig tasks``: the person's side of jobs and tasks (no worker needed)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from toolrig.commands.cron import command as cron
from toolrig.commands.tasks import command as tasks


def invoke(group: object, *args: str, root: Path) -> tuple[int, str]:
    result = CliRunner().invoke(group, [*args, "--root", str(root)])  # type: ignore[arg-type]
    return result.exit_code, result.output


def test_a_person_adds_lists_renews_and_removes_a_job(workspace: Path) -> None:
    code, out = invoke(
        cron, "add", "standup", "0 9 * * 1-5", "Post the summary", "--tz", "Europe/Paris", "--json", root=workspace
    )
    assert code == 0, out
    job = json.loads(out)
    assert job["schedule"] == "0 9 * * 1-5 Europe/Paris"
    assert job["expires"] is None  # a person's job does not expire
    code, out = invoke(cron, "list", "--json", root=workspace)
    assert [j["id"] for j in json.loads(out)] == [job["id"]]
    assert invoke(cron, "renew", job["id"], root=workspace)[0] == 0
    code, out = invoke(cron, "history", job["id"], "--json", root=workspace)
    assert code == 0 and json.loads(out) == []
    assert invoke(cron, "remove", job["id"], root=workspace)[0] == 0
    assert json.loads(invoke(cron, "list", "--json", root=workspace)[1]) == []


def test_cron_add_prints_the_new_id_as_tasks_add_does(workspace: Path) -> None:
    code, out = invoke(cron, "add", "standup", "15m", "Post the summary", root=workspace)
    assert code == 0 and out.startswith("j-") and out.strip() == out.splitlines()[0], out
    code, listed = invoke(cron, "list", "--json", root=workspace)
    assert [j["id"] for j in json.loads(listed)] == [out.strip()]


def test_a_bad_schedule_or_time_exits_two_like_a_usage_error(workspace: Path) -> None:
    code, out = invoke(cron, "add", "x", "sometimes", "p", root=workspace)
    assert code == 2 and "Accepted forms" in out and "Traceback" not in out
    assert CliRunner().invoke(cron, ["next", "sometimes", "--from", "2026-01-01T00:00"]).exit_code == 2


def test_cron_errors_exit_non_zero_with_a_message(workspace: Path) -> None:
    code, out = invoke(cron, "remove", "j-nope", root=workspace)
    assert code == 1 and "No job" in out


def test_tasks_add_list_show_and_cancel(workspace: Path) -> None:
    code, out = invoke(tasks, "add", "do a thing", "--after", "+1h", root=workspace)
    assert code == 0, out
    task_id = out.strip()
    code, out = invoke(tasks, "list", "--json", root=workspace)
    assert [t["id"] for t in json.loads(out)] == [task_id]
    not_before = json.loads(out)[0]["not_before"]
    code, out = invoke(tasks, "list", root=workspace)
    header, row = out.splitlines()
    assert header.split()[:3] == ["id", "status", "runs"] and f"queued  at {not_before}" in row, out
    code, out = invoke(tasks, "show", task_id, root=workspace)
    assert json.loads(out)["status"] == "queued"
    assert invoke(tasks, "cancel", task_id, root=workspace)[0] == 0
    code, out = invoke(tasks, "cancel", task_id, root=workspace)
    assert code == 1 and "already ended" in out
    code, out = invoke(tasks, "approve", task_id, root=workspace)
    assert code == 1 and "not waiting for an approval" in out


def test_tasks_add_refuses_a_bad_time(workspace: Path) -> None:
    code, out = invoke(tasks, "add", "x", "--after", "tomorrowish", root=workspace)
    assert code == 2 and "not a time" in out


def test_a_state_file_a_repository_committed_as_a_symlink_is_refused_with_a_message(
    workspace: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.sqlite"
    (workspace / ".toolrig").mkdir(exist_ok=True)
    (workspace / ".toolrig" / "durable.sqlite").symlink_to(victim)
    for group, args in ((cron, ("list",)), (tasks, ("list",)), (tasks, ("add", "p"))):
        code, out = invoke(group, *args, root=workspace)
        assert code == 1 and "symlink" in out and "Traceback" not in out, out
    assert not victim.exists()
