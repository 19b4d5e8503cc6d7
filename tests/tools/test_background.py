"""Background commands: started by run_command in a run that owns them, read, stopped, and never left behind."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.background_session import Session
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.procs import alive as _alive
from tests.support.procs import token as _token
from toolrig.agent import run_agent
from toolrig.rig import Rig
from toolrig.sandbox.background import BackgroundJobs, JobLimits

pytestmark = pytest.mark.anyio


def _config(**run_command: Any) -> dict[str, Any]:
    return {"tool_config": {"run_command": run_command}} if run_command else {}


@pytest.fixture
async def session(workspace: Path) -> AsyncIterator[Session]:
    with Rig(workspace) as rig:
        async with BackgroundJobs.open(JobLimits(keep_chars=20_000)) as jobs:
            yield Session(rig, jobs)


async def test_output_is_read_incrementally_while_the_command_runs(session: Session, workspace: Path) -> None:
    command = "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second"
    started = await session.ok("run_command", command=command, background=True)
    job = started["background_id"]
    assert started["exit_code"] is None and job == "bg1"
    with anyio.fail_after(30):
        first = await session.ok("command_output", id=job, wait_seconds=30)
    assert first["stdout"] == "first\n" and first["status"] == "running"
    (workspace / "go").write_text("")
    seen = ""
    with anyio.fail_after(30):
        while True:
            read = await session.ok("command_output", id=job, wait_seconds=30)
            seen += read["stdout"]
            if read["status"] != "running" and not read["more"]:
                break
    assert seen == "second\n" and read["status"] == "exited" and read["exit_code"] == 0


async def test_a_flood_of_output_stays_bounded(session: Session) -> None:
    started = await session.ok("run_command", command="head -c 3000000 /dev/zero | tr '\\0' x", background=True)
    with anyio.fail_after(60):
        await session.jobs.get(started["background_id"]).done.wait()
    read = await session.ok("command_output", id=started["background_id"])
    assert read["status"] == "exited" and read["dropped_chars"] >= 3_000_000 - 20_000 - 65_536
    assert len(read["stdout"]) <= 20_000 + 65_536


async def test_ten_at_the_limit_and_the_eleventh_refused_then_none_left(workspace: Path) -> None:
    token = _token()
    with Rig(workspace) as rig:
        async with BackgroundJobs.open() as jobs:
            session = Session(rig, jobs)
            for number in range(1, 11):
                await session.ok("run_command", command=f"echo ready; sleep {token}", background=True)
                with anyio.fail_after(30):
                    assert (await session.ok("command_output", id=f"bg{number}", wait_seconds=30))["stdout"]
            refused = await session.call("run_command", command=f"sleep {token}", background=True)
            assert refused["is_error"] and refused["error_type"] == "rate_limited"
            assert "(10)" in refused["message"]
            listed = await session.ok("list_commands")
            assert [c["status"] for c in listed["commands"]] == ["running"] * 10
            stopped = await session.ok("stop_command", id="bg3")
            assert stopped["status"] == "stopped"
            await session.ok("run_command", command=f"sleep {token}", background=True)  # room again
            assert len(_alive(token)) >= 9  # the nine still running (the new one may not have started yet)
        assert _alive(token) == []  # the owner ended: every command and all it started are gone


async def test_a_denied_command_is_refused_in_the_background_too(workspace: Path) -> None:
    with Rig(workspace, config=_config(deny=["curl *"])) as rig:
        async with BackgroundJobs.open() as jobs:
            refused = await Session(rig, jobs).call("run_command", command="curl http://x", background=True)
            assert refused["is_error"] and refused["error_type"] == "denied" and jobs.rows() == []


def test_a_caller_that_cannot_own_it_is_refused_with_a_clear_message(workspace: Path) -> None:
    with Rig(workspace) as rig:
        result = rig.call_sync("run_command", {"command": "sleep 5", "background": True})
    assert result.is_error and result.error_type is not None and result.error_type.value == "unavailable"
    assert "one-shot `toolrig call`" in result.message


async def test_a_server_started_in_one_call_is_reached_by_a_later_one_and_stopped_by_a_third(workspace: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Confined (bwrap, guarded network): the session's commands share one network namespace (sandbox/session.py).
    with Rig(workspace) as rig:
        async with BackgroundJobs.open() as jobs:
            session = Session(rig, jobs)
            # python3 from PATH, not this test's interpreter: a venv under the host's /tmp is not in a command's view
            server = f"python3 -u -m http.server --bind 127.0.0.1 {port}"
            job = (await session.ok("run_command", command=server, background=True))["background_id"]
            with anyio.fail_after(30):
                while "Serving HTTP" not in (await session.ok("command_output", id=job, wait_seconds=30))["stdout"]:
                    pass
            fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/').status)\""
            reached = await session.ok("run_command", command=fetch)
            assert reached["stdout"].strip() == "200"
            stopped = await session.ok("stop_command", id=job)
            assert stopped["status"] == "stopped"
            refused = await session.ok("run_command", command=fetch)
            assert refused["exit_code"] != 0


async def test_an_agent_run_s_background_commands_end_with_the_run(workspace: Path, llm: FakeLLM) -> None:
    token = _token()
    args = json.dumps({"command": f"echo ready; sleep {token}", "background": True})
    read = json.dumps({"id": "bg1", "wait_seconds": 30})
    llm.script(
        reply(Text("starting"), Call("c1", "run_command", args)),
        reply(Text("reading"), Call("c2", "command_output", read)),
        reply(Text("done")),
    )
    config = {
        "llm": {"provider": "anthropic", "model": "m", "base_url": llm.anthropic_url, "api_key": "k", "max_retries": 0}
    }
    with Rig(workspace, config=config) as rig:
        result = await run_agent("start a server", rig=rig)
        audit = rig.governance.audit
        assert audit is not None
        rows = [r for r in audit.query(tool="run_command") if r.rule == "background"]
    assert [(r.call_id, r.approval, r.error_type) for r in rows] == [
        ("c1", "background bg1 stopped (the run or session that owned it ended)", "stopped")
    ]
    assert result.response == "done"
    assert "ready" in json.dumps(llm.bodies()[2])  # it ran: the model read its output
    assert _alive(token) == []


_OWNER = """
import sys, anyio
from toolrig.rig import Rig
from toolrig.sandbox.background import BackgroundJobs
from toolrig.scope import CallScope

async def main():
    with Rig(sys.argv[1]) as rig:
        async with BackgroundJobs.open() as jobs:
            command = "echo ready; sleep " + sys.argv[2]
            result = await rig.call("run_command", {"command": command, "background": True},
                                    scope=CallScope(background=jobs))
            assert not result.is_error, result.to_json()
            assert (await jobs.read("bg1", 100, wait=30))["stdout"] == "ready\\n"
            print("started", flush=True)
            await anyio.sleep_forever()

anyio.run(main)
"""


def test_kill_9_of_toolrig_leaves_no_background_process(workspace: Path) -> None:
    token = _token()
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(workspace), token], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline() == b"started\n"
        pidfds = [os.pidfd_open(pid) for pid in _alive(token)]  # it wrote 'ready': its shell runs
        assert pidfds, "the background command is not running"
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)
        for fd in pidfds:
            ready, _, _ = select.select([fd], [], [], 30)
            assert ready, "a background command outlived the toolrig that started it"
            os.close(fd)
        assert _alive(token) == []
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
