"""The session lease: a rewind is refused while a run of the session goes in another process, and two serialize."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.support.fake_llm import Call, FakeLLM, reply
from toolrig.cli import app
from toolrig.errors import ToolError
from toolrig.rig import Rig
from toolrig.scope import CallScope
from toolrig.stores.checkpoints import Mark, rewind
from toolrig.stores.checkpoints.lease import run_is_going

TOOLRIG = str(Path(sys.executable).parent / "toolrig")
WAIT = "touch started; while [ ! -e go ]; do sleep 0.05; done"


def _until(predicate: object, what: str) -> None:
    """Wait (bounded, without asserting on time) for something another process does."""
    import time

    deadline = time.monotonic() + 120
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)


@pytest.fixture
def running(llm: FakeLLM, workspace: Path, toolrig_home: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A `toolrig run` in its own process that wrote a file, then sits in a command: its session id too."""
    agent = {"provider": "anthropic", "model": "claude-test", "base_url": llm.anthropic_url, "api_key": "k"}
    (toolrig_home / "config.yaml").write_text(yaml.safe_dump({"llm": {**agent, "max_retries": 0}}))
    write = json.dumps({"path": "made.txt", "content": "by the run\n"})
    command = json.dumps({"command": WAIT, "timeout_seconds": 600})
    llm.script(reply(Call("c1", "write_file", write)), reply(Call("c2", "run_command", command)))
    with subprocess.Popen(
        [TOOLRIG, "run", "work", "--json", "--root", str(workspace)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(os.environ),
    ) as process:  # fmt: skip
        try:
            assert process.stdout is not None
            init = json.loads(process.stdout.readline())
            _until(lambda: (workspace / "started").exists(), "the run's command starting")
            yield process, init["session_id"]
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=60)


def test_a_rewind_while_a_run_of_the_session_goes_in_another_process_is_refused(
    workspace: Path, running: tuple[subprocess.Popen[str], str]
) -> None:
    process, session = running
    assert run_is_going(workspace / ".toolrig", session)
    result = CliRunner().invoke(app, ["rewind", session, "--to", "start", "--root", str(workspace)])
    assert result.exit_code == 1 and f"A run of session {session} is going" in result.stderr
    assert "Traceback" not in result.output and (workspace / "made.txt").read_text() == "by the run\n"
    dry = CliRunner().invoke(app, ["rewind", session, "--to", "start", "--dry-run", "--root", str(workspace)])
    assert dry.exit_code == 0 and "removed: made.txt" in dry.stdout  # a look is not refused
    process.send_signal(signal.SIGKILL)  # the kernel drops its lease: none is left stale
    process.wait(timeout=60)
    assert not run_is_going(workspace / ".toolrig", session)
    result = CliRunner().invoke(app, ["rewind", session, "--to", "start", "--root", str(workspace)])
    assert result.exit_code == 0, result.stderr
    assert not (workspace / "made.txt").exists()


_HOLDER = """
import sys
from toolrig.sandbox.paths import Workspace
from toolrig.stores.checkpoints import rewind
from toolrig.stores.checkpoints.lease import rewind_lease
from toolrig.stores.checkpoints.rewind import apply, plan
from toolrig.stores.checkpoints.log import Checkpoints
workspace = Workspace(sys.argv[1])
with rewind_lease(workspace.state_dir, "s1"):
    print("held", flush=True)
    sys.stdin.readline()
    store = Checkpoints(workspace)
    apply(store, plan(store, "s1", 0))
print("rewound", flush=True)
"""


def _waiters_on(path: Path) -> int:
    """How many flock requests wait on ``path`` now (/proc/locks marks a blocked one with ``->``)."""
    inode = f":{path.stat().st_ino} "
    return sum(1 for line in Path("/proc/locks").read_text().splitlines() if "->" in line and inode in line)


def test_two_rewinds_of_one_session_serialize(workspace: Path) -> None:
    with Rig(workspace) as rig:
        rig.call_sync("write_file", {"path": "a.txt", "content": "one\n"}, scope=CallScope(checkpoint=Mark("s1", 0)))
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(workspace)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        _serialized(holder, rig, workspace)


def _serialized(holder: subprocess.Popen[str], rig: Rig, workspace: Path) -> None:
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline() == "held\n"
        second: list[BaseException | str] = []

        def other() -> None:
            try:
                rewind(rig.workspace, "s1", 0)
                second.append("rewound")
            except ToolError as exc:
                second.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        lock = workspace / ".toolrig" / "checkpoints" / "leases" / "s1.rewind"
        _until(lambda: _waiters_on(lock) == 1, "the second rewind waiting for the first")
        assert not second and (workspace / "a.txt").exists()
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == "rewound\n"
        thread.join(timeout=120)
        [outcome] = second
        assert isinstance(outcome, ToolError) and "no file changes to rewind" in outcome.message  # after, not beside
        assert not (workspace / "a.txt").exists()
    finally:
        holder.kill()
        holder.wait(timeout=60)
