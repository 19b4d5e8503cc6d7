"""Durable-test helpers: a line-appending tool, a scripted model that follows a task's prompt, waiting."""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.fake_llm import Call, FakeLLM, Reply, Text, reply
from tests.support.sample_tools import AppendLine, Gate
from toolrig.durable.access import DurableAccess
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.tools import cron as cron_tools
from toolrig.tools import tasks as task_tools
from toolrig.workers import runner
from toolrig.workers.worker import Worker


def tools() -> list[Any]:
    from toolrig.tools.interact import TOOLS as INTERACT

    return [AppendLine(), Gate(), *INTERACT, *cron_tools.TOOLS, *task_tools.TOOLS]


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def follow_prompt(body: dict[str, Any]) -> Reply:
    """The model a durable test talks to, answering from the conversation so concurrent runs can share it.

    Prompt ``append:X`` -> calls append_line(X), then complete_task. ``answer:X`` -> answers X. ``wait:ID`` ->
    wait_task(for_task=ID), and once resumed complete_task. ``fail:X`` -> fail_task(X).
    ``ask:`` -> ask_user, then complete_task; ``todos:`` -> write_todos and suggest_followups, then complete_task.
    """
    messages = body["messages"]
    first = _text_of(messages[0])
    resumed = any("You are resuming this task" in _text_of(m) for m in messages)
    turn = sum(1 for m in messages if m["role"] == "assistant")
    cid = f"call-{turn}-{zlib.crc32(first.encode()):08x}"
    if "answer:" in first:
        return reply(Text(first.split("answer:", 1)[1].split('"')[0]))
    if "fail:" in first:
        return reply(Call(cid, "fail_task", json.dumps({"reason": first.split("fail:", 1)[1].split('"')[0]})))
    if "wait:" in first and not resumed:
        return reply(Call(cid, "wait_task", json.dumps({"for_task": first.split("wait:", 1)[1].split('"')[0]})))
    if "append:" in first and turn == 0 and not resumed:
        line = first.split("append:", 1)[1].split('"')[0].split(" ")[0]
        return reply(Call(cid, "append_line", json.dumps({"line": line})))
    if "ask:" in first and turn == 0 and not resumed:  # ask_user in a scheduled task (approvals' test)
        return reply(Call(cid, "ask_user", json.dumps({"questions": [{"question": "Which one?", "options": ["a"]}]})))
    if "ask:" in first and turn == 1:
        said = _text_of(messages[-1]).replace("\\", "").replace(" ", "")
        skipped = '"skipped":true' in said
        return reply(Call(cid, "complete_task", json.dumps({"summary": f"asked; skipped={skipped}"})))
    if "todos:" in first and turn == 0 and not resumed:  # write_todos and suggest_followups in a task
        todos = {"todos": [{"task": "look", "status": "completed"}, {"task": "report", "status": "in_progress"}]}
        followups = {"followups": ["look again", "report twice"]}
        return reply(
            Call(f"{cid}-todos", "write_todos", json.dumps(todos)),
            Call(f"{cid}-next", "suggest_followups", json.dumps(followups)),
        )
    if " gate" in first and turn == 1 and not resumed:
        return reply(Call(cid, "gate", "{}"))
    return reply(Call(cid, "complete_task", json.dumps({"summary": f"finished after {turn} turns"})))


def config(llm: FakeLLM, **workers: Any) -> dict[str, Any]:
    return {
        "llm": {
            "provider": "anthropic",
            "model": "claude-test",
            "base_url": llm.anthropic_url,
            "api_key": "test-key",
            "max_retries": 0,
            "request_timeout_seconds": 20,
        },
        "workers": {"poll_seconds": 0.05, "dead_after_seconds": 5, **workers},
    }


def install_rig(cfg: dict[str, Any]) -> None:
    runner.set_rig_factory(lambda root, agent: Rig(root, config=cfg, registry=Registry(tools()), agent=agent))


def access_for(root: Path, cfg: dict[str, Any]) -> DurableAccess:
    rig = Rig(root, config=cfg, registry=Registry(tools()))
    return DurableAccess(rig.workspace.root, rig.config, rig.workspace.state_dir, runner=runner.run_inline)


@contextmanager
def running_worker(access: DurableAccess, concurrency: int = 4) -> Iterator[Worker]:
    worker = Worker(access, concurrency=concurrency)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), name="durable-worker", daemon=True)
    thread.start()
    try:
        assert worker.ready.wait(60), "the worker did not start"
        yield worker
    finally:
        stop.set()
        thread.join(60)


def wait_for(predicate: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
    """Poll the database until ``predicate`` is truthy; a bounded wait, not a sleep-and-hope."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        pause.wait(0.05)
