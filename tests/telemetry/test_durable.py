"""A durable task run by a worker in another process continues the trace that queued it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.durable.test_scale_out import worker_process
from tests.support.durable import config, follow_prompt, tools, wait_for
from tests.support.fake_llm import FakeLLM
from tests.support.otlp import Receiver
from toolrig.durable.access import DurableAccess
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.telemetry import names


@pytest.fixture(scope="module")
def follower() -> Iterator[FakeLLM]:
    server = FakeLLM(responder=follow_prompt).start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def trusted(workspace: Path) -> None:
    from toolrig.config import set_trust

    set_trust(workspace)


@pytest.mark.slow  # a worker process (DBOS, the scripted model)
def test_a_task_run_by_a_worker_process_is_a_child_of_the_span_that_queued_it(
    workspace: Path, follower: FakeLLM, otlp: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker process turns telemetry on from the standard variables alone (its config has no section).
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    cfg = config(follower, dead_after_seconds=3)
    rig = Rig(workspace, config=cfg, registry=Registry(tools()))
    assert rig.telemetry is not None
    access = DurableAccess(rig.workspace.root, rig.config, rig.workspace.state_dir)
    with rig.telemetry.tracer.start_as_current_span("queue the work") as queued:
        task = access.add_task(prompt="append:traced", by="person")
    assert rig.telemetry.force_flush()
    with worker_process(workspace, access.records.url, follower):
        wait_for(lambda: (access.records.task(task["id"]) or {}).get("status") == "done", what="the task")
    # The worker exited (SIGTERM): its providers flushed at exit, before the process ended.
    context = queued.get_span_context()
    trace_id = context.trace_id.to_bytes(16, "big")
    spans = otlp.in_trace(trace_id)
    [task_span] = [s for s in spans if s.attributes.get(names.TASK_ID) == task["id"] and s.name == "toolrig.task task"]
    assert task_span.parent_span_id == context.span_id.to_bytes(8, "big")
    [run] = [s for s in spans if s.parent_span_id == task_span.span_id and s.name.startswith("invoke_agent ")]
    appended = [s for s in spans if s.parent_span_id == run.span_id and s.name == "execute_tool append_line"]
    assert len(appended) == 1 and appended[0].attributes[names.DECISION] == "allow"
    assert run.service == "toolrig" and task_span.start >= 0
    access.close()
    rig.close()
