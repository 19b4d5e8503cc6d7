"""Tasks: queued agent runs and their life (queued -> running -> done | failed | waiting | paused | cancelled).

A task is a row; each attempt at running it is one engine workflow whose id is ``<task>#<attempt>``. Waiting
(``wait_task``) and paused (an approval a scheduled run cannot ask for) tasks go back to ``queued`` when
their time comes, the task they wait for ends, or a person approves; the next attempt continues the same
session. The same record serves a subagent's background child (``parent_id``) so one ``wait_task`` can wait
for either.
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from toolrig.durable.api import DurableError
from toolrig.durable.store import ENDED, Records

MAX_PROMPT = 100_000
VIEW_PROMPT = 200


def parse_time(text: str, now: float) -> float:
    """An ISO 8601 time (naive is UTC) or '+20m' / '+2h' / '+30s'; a DurableError otherwise."""
    from toolrig.durable.schedule import MAX_AHEAD, OutOfRange, ScheduleError, check_instant, parse_schedule

    cleaned = text.strip()
    moment = datetime.fromtimestamp(now, UTC)
    try:
        if cleaned.startswith("+") and cleaned.endswith("s") and cleaned[1:-1].isdigit():
            digits, beyond = cleaned[1:-1], int(MAX_AHEAD.total_seconds()) + 1
            seconds = min(int(digits), beyond) if len(digits) <= 12 else beyond  # no overflow before the check
            return check_instant(moment + timedelta(seconds=seconds), moment, text).timestamp()
        schedule = parse_schedule(cleaned, now=moment)
    except OutOfRange as exc:
        raise DurableError("invalid", str(exc), "Give a time after 1970 and at most 100 years from now.") from None
    except ScheduleError:
        schedule = None
    if schedule is None or schedule.at is None:
        raise DurableError(
            "invalid",
            f"{text!r} is not a time.",
            "Give an ISO 8601 time such as '2026-05-01T09:00' (naive means UTC) or '+30s', '+20m', '+2h'.",
        )
    return schedule.at.timestamp()


def view(task: dict[str, Any], *, full: bool = False) -> dict[str, Any]:
    def iso(ts: float | None) -> str | None:
        try:
            return datetime.fromtimestamp(ts, UTC).isoformat() if ts else None
        except (OverflowError, ValueError, OSError):  # a row stored before times were bounded: shown, not fatal
            return f"out of range ({ts!r})"

    prompt = task["prompt"]
    out = {
        "id": task["id"],
        "kind": task["kind"],
        "status": task["status"],
        "agent": task["agent"],
        "job_id": task["job_id"],
        "parent_id": task["parent_id"],
        "created": iso(task["created_at"]),
        "not_before": iso(task["not_before"]),
        "wait_for": task["wait_for"],
        "attempt": task["attempt"],
        "worker": task["worker"],
        "started": iso(task["started_at"]),
        "ended": iso(task["ended_at"]),
        "result": task["result"],
        "session_id": task["session_id"],
        "prompt": prompt if full or len(prompt) <= VIEW_PROMPT else prompt[: VIEW_PROMPT - 1] + "…",
        "resumes": _resumes(task),
    }
    if full and task["state"]:
        state = json.loads(task["state"])
        out["pending_approvals"] = [
            {"call_id": p["call_id"], "tool": p["tool"], "reason": p.get("reason", "")}
            for p in state.get("pending", [])
        ]
    return out


def _resumes(task: dict[str, Any]) -> str | None:
    """What a run of the task carries on from besides its prompt: a saved run state, approvals already given.

    Its next attempt goes on from them, not from the prompt: a person reviewing the list (a database a
    repository committed, before ``toolrig trust``) must see that the prompt is not all that runs.
    """
    state, decisions = task.get("state"), task.get("decisions")
    if not state and not decisions:
        return None
    what = "saved run, not the prompt" if state else "the prompt"
    if not decisions:
        return what
    try:
        given = f"{len(json.loads(decisions))} approval(s)"
    except (ValueError, TypeError):  # a row no toolrig wrote: shown, not fatal
        given = "approvals"
    return f"{what}; {given} given"


class TaskBook:
    def __init__(self, records: Records) -> None:
        self.records = records

    def add(
        self,
        *,
        prompt: str,
        by: str,
        agent: str | None = None,
        after: str | None = None,
        parent_id: str | None = None,
        retries: int = 0,
        now: float | None = None,
    ) -> dict[str, Any]:
        now = time.time() if now is None else now
        if not prompt.strip() or len(prompt) > MAX_PROMPT:
            raise DurableError("invalid", f"A task needs a prompt of 1 to {MAX_PROMPT} characters.")
        not_before = parse_time(after, now) if after else now
        task = {
            "id": "t-" + secrets.token_hex(6),
            "kind": "task",
            "parent_id": parent_id,
            "prompt": prompt,
            "agent": agent,
            "status": "queued",
            "created_at": now,
            "not_before": not_before,
            "attempt": 1,
            "retries_left": retries,
            "created_by": by,
        }
        self.records.insert_task(task)
        return task

    def get(self, task_id: str) -> dict[str, Any]:
        task = self.records.task(task_id) if isinstance(task_id, str) and len(task_id) <= 120 else None
        if task is None:
            raise DurableError("not_found", f"No task with id {task_id!r}.", "See `toolrig tasks list` for task ids.")
        return task

    def cancel(self, task_id: str, now: float | None = None) -> dict[str, Any]:
        """Cancel a task that has not ended; a running attempt stops at its next step."""
        task = self.get(task_id)
        if task["status"] in ENDED:
            raise DurableError("invalid", f"Task {task_id} has already ended ({task['status']}).")
        ended = time.time() if now is None else now
        if not self.records.set_task(task_id, where_status=(task["status"],), status="cancelled", ended_at=ended):
            raise DurableError("unavailable", f"Task {task_id} changed while cancelling; try again.")
        return self.get(task_id)

    def approve(self, task_id: str, *, deny: bool = False, note: str = "") -> dict[str, Any]:
        """Answer every approval a paused run waits for, and queue its next attempt."""
        task = self.get(task_id)
        if task["status"] != "paused" or not task["state"]:
            raise DurableError("invalid", f"Task {task_id} is not waiting for an approval (status {task['status']}).")
        state = json.loads(task["state"])
        decisions = {
            p["call_id"]: {"allow": not deny, "note": note}
            for p in state.get("pending", [])
            if p.get("needs_approval", True)
        }
        ok = self.records.set_task(
            task_id,
            where_status=("paused",),
            status="queued",
            decisions=json.dumps(decisions),
            attempt=task["attempt"] + 1,
            not_before=time.time(),
            workflow_id=None,
        )
        if not ok:
            raise DurableError("unavailable", f"Task {task_id} changed while approving; try again.")
        return self.get(task_id)

    def release_waiting(self, now: float | None = None) -> list[str]:
        """Queue the next attempt of waiting tasks whose time came or whose awaited task ended."""
        now = time.time() if now is None else now
        released = []
        for task in self.records.waiting_tasks():
            ready = task["not_before"] <= now if task["wait_for"] is None else self._ended(task["wait_for"])
            if ready and self.records.set_task(
                task["id"],
                where_status=("waiting",),
                status="queued",
                attempt=task["attempt"] + 1,
                not_before=now,
                workflow_id=None,
            ):
                released.append(task["id"])
        return released

    def _ended(self, task_id: str) -> bool:
        other = self.records.task(task_id)
        return other is None or other["status"] in ENDED
