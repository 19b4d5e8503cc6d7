"""A worker's tasks share what it keeps (one Rig per agent, one provider), each reaching only its own task;
a worker starts no more attempts than its slots; an attempt writes one transaction per step; a cancel stops it
at its next step."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import sqlalchemy as sa

from tests.durable.test_worker import ended, lines
from tests.support.durable import running_worker, tools, wait_for
from toolrig.durable.access import DurableAccess
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.workers import runner
from toolrig.workers.runner import run_attempt


def _counting_factory(cfg: dict[str, Any], built: list[str | None]) -> None:
    def factory(root: Path, agent: str | None) -> Rig:
        built.append(agent)
        return Rig(root, config=cfg, registry=Registry(tools()), agent=agent)

    runner.set_rig_factory(factory)


def test_a_workers_tasks_share_one_rig_until_a_config_file_changes(
    access: DurableAccess, workspace: Path, cfg: dict[str, Any]
) -> None:
    built: list[str | None] = []
    _counting_factory(cfg, built)
    with running_worker(access, concurrency=3):
        first = [access.task_book.add(prompt=f"append:a{i}", by="person")["id"] for i in range(5)]
        wait_for(lambda: ended(access, *first), what="the first tasks")
        assert built == [None]  # five tasks, three at once: one Rig
        (workspace / ".toolrig" / "config.yaml").write_text("workers:\n  concurrency: 2\n")
        second = access.task_book.add(prompt="append:b", by="person")["id"]
        wait_for(lambda: ended(access, second), what="the task after the change")
    assert built == [None, None]
    assert all(access.records.task(t)["result"] == "finished after 1 turns" for t in [*first, second])
    # Each run's complete_task ended its own task, though the runs shared one Rig.
    assert sorted(lines(workspace)) == sorted([*(f"a{i}" for i in range(5)), "b"])


def test_a_worker_starts_no_more_attempts_than_its_concurrency(access: DurableAccess, workspace: Path) -> None:
    ids = [access.task_book.add(prompt=f"append:g{i} gate", by="person")["id"] for i in range(4)]
    with running_worker(access, concurrency=2):
        wait_for(lambda: len(lines(workspace)) >= 2, what="two runs at the gate")
        statuses = sorted(access.records.task(t)["status"] for t in ids)
        assert statuses == ["queued", "queued", "running", "running"]  # the rest not even claimed
        (workspace / "release").write_text("go")
        wait_for(lambda: ended(access, *ids), what="all four")
    spans = [(access.records.task(t)["started_at"], access.records.task(t)["ended_at"]) for t in ids]
    most = max(sum(1 for s, e in spans if s <= moment < e) for moment, _ in spans)
    assert most == 2
    assert all(access.records.task(t)["status"] == "done" for t in ids)


def test_a_cancel_while_a_tool_runs_stops_the_attempt_before_its_next_model_turn(
    access: DurableAccess, workspace: Path
) -> None:
    task_id = access.task_book.add(prompt="append:c gate", by="person")["id"]
    with running_worker(access, concurrency=1) as worker:
        wait_for(lambda: _keys(access, task_id) >= {"turn-1"}, what="the gate call")
        access.task_book.cancel(task_id)
        (workspace / "release").write_text("go")
        wait_for(lambda: worker.engine.capacity() == 1, what="the attempt to end")
    task = access.records.task(task_id)
    assert task["status"] == "cancelled"
    assert "turn-2" not in _keys(access, task_id)  # the model was not asked again after the cancel
    assert lines(workspace) == ["c"]


def test_an_attempt_writes_one_transaction_per_step(access: DurableAccess, workspace: Path) -> None:
    """append:x is turn 0, append_line, turn 1, complete_task: each tool call two writes, each turn one (the
    second turn also reads the task once, since a tool ran before it), the attempt's opening and its end."""
    task_id = access.task_book.add(prompt="append:x", by="person")["id"]
    workflow_id = f"{task_id}#1"
    access.records.set_task(task_id, status="submitted", workflow_id=workflow_id)
    commits = itertools.count()
    listener = lambda conn: next(commits)  # noqa: E731
    sa.event.listen(access.records.engine, "commit", listener)
    try:
        task = anyio.run(run_attempt, access, task_id, workflow_id, "counted")
    finally:
        sa.event.remove(access.records.engine, "commit", listener)
    assert task is not None and task["status"] == "done"
    assert next(commits) <= 1 + 1 + 2 + 2 + 2 + 1  # open, turn 0, append, turn 1 (+ check), complete, end


def _keys(access: DurableAccess, task_id: str) -> set[str]:
    task = access.records.task(task_id)
    return set(access.records.steps_of(task["workflow_id"] or "")) if task else set()
