from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.support.governed_tools import governed_tools
from tests.support.sample_tools import all_tools
from toolrig.policy.audit import AuditLog
from toolrig.registry import Registry
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


def log_of(workspace: Path) -> AuditLog:
    return AuditLog(workspace / ".toolrig")


def make_rig(workspace: Path, config: dict | None = None, **options: object) -> Rig:
    return Rig(workspace, config=config or {}, registry=Registry([*all_tools(), *governed_tools()]), **options)  # type: ignore[arg-type]


async def test_a_row_holds_who_what_why_and_how_it_ended(workspace: Path) -> None:
    rig = make_rig(workspace, {"agents": {"scout": {}}}, agent="scout")
    result = await rig.call("echo", {"text": "hi"}, session_id="s-1", parent_agent_id="lead", origin="mcp")
    (row,) = log_of(workspace).query()
    assert (row.session, row.agent, row.parent_agent, row.origin) == ("s-1", "scout", "lead", "mcp")
    assert (row.tool, row.call_id, row.args, row.subjects) == ("echo", result.meta.call_id, {"text": "hi"}, [])
    assert (row.decision, row.rule, row.approval) == ("allow", "approvals.mode", "")
    assert (row.is_error, row.error_type, row.output_bytes) == (False, None, result.meta.output_bytes)
    assert row.duration_ms == pytest.approx(result.meta.duration_ms, abs=0.01) and row.ts > 0
    assert row.to_json()["time"].endswith("Z")


async def test_calls_that_never_ran_are_recorded_too(workspace: Path) -> None:
    rig = make_rig(workspace)
    await rig.call("echo", {"txt": "typo"})
    await rig.call("no_such_tool", {})
    with anyio.move_on_after(0.05):
        await rig.call("sleep_async", {"seconds": 30})
    rows = log_of(workspace).query()
    assert [(r.tool, r.decision, r.error_type) for r in rows] == [
        ("echo", "error", "invalid_input"),
        ("no_such_tool", "error", "unknown_tool"),
        ("sleep_async", "allow", "cancelled"),
    ]
    assert rows[0].args == {"txt": "typo"}


async def test_two_hundred_concurrent_calls_make_two_hundred_rows(workspace: Path) -> None:
    rig = make_rig(workspace)
    ids: list[str] = []

    async def one(i: int) -> None:
        result = await rig.call("echo", {"text": str(i)})
        ids.append(result.meta.call_id)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for i in range(200):
                group.start_soon(one, i)
    rows = log_of(workspace).query(limit=None)
    assert len(rows) == 200 and sorted(r.call_id for r in rows) == sorted(ids)
    assert sorted(int(r.args["text"]) for r in rows) == list(range(200))


async def test_secrets_in_arguments_never_reach_the_log(workspace: Path) -> None:
    rig = make_rig(workspace)
    await rig.call("mail", {"to": ["a@example.com"], "subject": "key sk-ant-api03-abcdefghijklmnop", "api_key": "k1"})
    await rig.call("shell", {"command": "curl -H 'Authorization: Bearer s3cr3t-token' https://x.io"})
    text = (workspace / ".toolrig" / "audit.db").read_bytes()
    for secret in (b"abcdefghijklmnop", b'k1"', b"s3cr3t-token"):
        assert secret not in text
    mail, shell = log_of(workspace).query()
    assert mail.args["api_key"] == "[REDACTED]" and mail.args["subject"] == "key [REDACTED]"
    assert shell.subjects == ["curl -H 'Authorization: [REDACTED]' https://x.io"]


async def test_audit_can_be_switched_off(workspace: Path) -> None:
    rig = make_rig(workspace, {"audit": {"enabled": False}})
    await rig.call("echo", {"text": "x"})
    assert not (workspace / ".toolrig" / "audit.db").exists()


async def test_a_call_whose_row_cannot_be_written_withholds_its_output(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Was "never fails the call" (hostile review D6): the output left with no row behind it.
    (workspace / ".toolrig" / "audit.db").mkdir(parents=True)  # cannot be opened as a database
    rig = make_rig(workspace)
    with caplog.at_level(logging.WARNING, logger="toolrig.executor"):
        result = await rig.call("echo", {"text": "secret-x"})
    assert result.is_error and "audit" in result.message
    assert "secret-x" not in result.to_json()
    # The state walk refuses a database that is not a regular file: the refusal is logged and named.
    assert any("audit sink" in r.getMessage() for r in caplog.records)
    assert result.error_type == "denied" and "not what toolrig put there" in result.message


CRASHER = """
import sys
from toolrig import Rig
rig = Rig(sys.argv[1], config={})
n = 0
while True:
    rig.call_sync("calculate", {"expression": "1"})
    n += 1
    print(n, flush=True)  # acknowledged: the call returned, so its row is committed
"""


def test_a_crash_loses_no_acknowledged_row(workspace: Path) -> None:
    acknowledged = 0
    with subprocess.Popen([sys.executable, "-c", CRASHER, str(workspace)], stdout=subprocess.PIPE, text=True) as worker:
        assert worker.stdout is not None
        try:
            while acknowledged < 40:
                line = worker.stdout.readline()
                assert line, "the worker stopped before it was killed"
                acknowledged = int(line)
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
        finally:
            if worker.poll() is None:
                worker.kill()
    assert worker.returncode == -signal.SIGKILL
    assert log_of(workspace).count() >= acknowledged


async def test_a_new_log_writes_small_pages_and_an_older_log_keeps_its_own(workspace: Path, tmp_path: Path) -> None:
    import sqlite3

    from toolrig.policy.audit import MIGRATIONS

    older = tmp_path / "older"
    (older / ".toolrig").mkdir(parents=True)
    made = sqlite3.connect(older / ".toolrig" / "audit.db")  # an earlier toolrig's log: 4 KiB pages
    made.execute("PRAGMA journal_mode = WAL")
    for statement in MIGRATIONS:
        made.execute(statement)
    made.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
    made.commit()
    made.close()
    for root, page_size in ((workspace, 1024), (older, 4096)):
        rig = make_rig(root)
        for text in ("one", "two"):
            assert not (await rig.call("echo", {"text": text})).is_error
        await rig.aclose()
        log = log_of(root)
        assert [row.args for row in log.query()] == [{"text": "one"}, {"text": "two"}]
        assert log.db.read(lambda conn: conn.execute("PRAGMA page_size").fetchone()[0]) == page_size
        log.close()


def test_a_column_shows_text_no_utf8_carries_as_the_model_was_shown_it() -> None:
    """A file name's undecodable byte (``\\udcff``, from ``os.fsdecode``) reads ``\\xff`` in the row, as shown."""
    import json

    from toolrig.policy.audit import _json
    from toolrig.shaping import escape_surrogates

    value = {"path": "a\udcffb", "lone": ["\ud800"], 3: "x"}
    column = json.loads(_json(value))
    assert column == {"path": "a\\xffb", "lone": ["\\ud800"], "3": "x"}
    assert column["path"] == escape_surrogates(value)["path"]
