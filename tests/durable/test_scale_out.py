"""Several worker processes on one real PostgreSQL: every task once, recovery after kill -9, one run per firing."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.durable import access_for, config, wait_for
from tests.support.fake_llm import FakeLLM
from tests.support.sample_tools import OUT
from toolrig.durable.access import DurableAccess

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def worker_process(root: Path, url: str, llm: FakeLLM, concurrency: int = 4) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.worker_main", str(root), url, llm.anthropic_url, str(concurrency)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        env=env,
    )
    ready = threading.Event()

    def watch() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("READY"):
                ready.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert ready.wait(120), "the worker process did not start"
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture
def pg_access(workspace: Path, postgres: Any, llm: FakeLLM) -> DurableAccess:
    return access_for(workspace, config(llm, database_url=postgres.new_database(), dead_after_seconds=3))


def lines(workspace: Path) -> list[str]:
    path = workspace / OUT
    return path.read_text().splitlines() if path.exists() else []


def all_ended(access: DurableAccess, ids: list[str]) -> bool:
    done = access.records.tasks(status="done", limit=100_000)
    failed = access.records.tasks(status="failed", limit=100_000)
    return len({t["id"] for t in done + failed} & set(ids)) == len(ids)


def test_three_workers_run_300_queued_tasks_exactly_once(
    pg_access: DurableAccess, workspace: Path, llm: FakeLLM
) -> None:
    url = pg_access.records.url
    ids = [pg_access.task_book.add(prompt=f"append:task{i:03d}", by="person")["id"] for i in range(300)]
    with ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(worker_process(workspace, url, llm))
        wait_for(lambda: all_ended(pg_access, ids), timeout=240, what="300 tasks")
    written = lines(workspace)
    assert len(written) == 300
    assert sorted(written) == sorted(f"task{i:03d}" for i in range(300))
    assert all(pg_access.records.task(i)["status"] == "done" for i in ids)
    workers = {pg_access.records.task(i)["worker"] for i in ids}
    assert len(workers) >= 2  # the work was shared


def test_a_killed_workers_tasks_finish_on_the_others_without_repeating_a_completed_call(
    pg_access: DurableAccess, workspace: Path, llm: FakeLLM
) -> None:
    url = pg_access.records.url
    ids = [pg_access.task_book.add(prompt=f"append:held{i} gate", by="person")["id"] for i in range(4)]
    with worker_process(workspace, url, llm, concurrency=4) as doomed:
        # Each task appended its line (a completed call) and now waits at the gate.
        wait_for(lambda: len(lines(workspace)) == 4, what="the four appends")
        # Wait until each gate call is recorded as started (not merely asked for by the model): only then is
        # its outcome unknown at the kill.
        wait_for(
            lambda: all(
                any(k.startswith("tool-call-1") for k in _keys(pg_access, t["workflow_id"] or ""))
                for t in map(pg_access.records.task, ids)
            ),
            what="the gate calls",
        )
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(30)
    (workspace / "release").write_text("go")
    with ExitStack() as stack:
        for _ in range(2):
            stack.enter_context(worker_process(workspace, url, llm))
        wait_for(lambda: all_ended(pg_access, ids), timeout=120, what="the recovered tasks")
    assert sorted(lines(workspace)) == sorted(f"held{i}" for i in range(4))  # no append repeated
    for task_id in ids:
        task = pg_access.records.task(task_id)
        assert task["status"] == "done"
        assert task["attempt"] == 1  # the same attempt, resumed from its journal
        gate = [k for k in _keys(pg_access, task["workflow_id"]) if k.startswith("tool-call-1")]
        _, payload = pg_access.records.step(task["workflow_id"], gate[0])
        assert payload["is_error"] and "unknown" in payload["message"]  # the interrupted call, reported


def test_a_schedule_firing_every_second_runs_once_per_firing_with_three_workers(
    pg_access: DurableAccess, workspace: Path, llm: FakeLLM
) -> None:
    url = pg_access.records.url
    with ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(worker_process(workspace, url, llm))
        job = pg_access.job_book.add(name="tick", schedule="1s", prompt="append:tick", by="person")
        wait_for(lambda: len(pg_access.records.tasks(job_id=job["id"])) >= 6, timeout=60, what="six firings")
        pg_access.job_book.remove(job["id"], by="person")
        wait_for(lambda: pg_access.records.count_open_for_job(job["id"]) == 0, what="the last runs")
    firings = sorted(pg_access.records.tasks(job_id=job["id"]), key=lambda t: t["fire_time"])
    times = [t["fire_time"] for t in firings]
    assert len(times) == len(set(times))  # no firing recorded twice
    assert all(b - a == 1 for a, b in itertools.pairwise(times))  # and none lost between
    done = [t for t in firings if t["status"] == "done"]
    assert len(lines(workspace)) == len(done)  # exactly one run for each firing that ran
    assert all(t["status"] in ("done", "skipped") for t in firings)


def _keys(access: DurableAccess, run_id: str) -> list[str]:
    from toolrig.durable.store import steps

    with access.records.tx() as c:
        return [r.key for r in c.execute(steps.select().where(steps.c.run_id == run_id))]


_ = time
