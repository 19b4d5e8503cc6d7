"""Hostile command lines that wrap a denied command so policy cannot see it (review D1, D10, D11).

The class: a denied command (``touch X``) behind any wrapper (``env -S``, ``timeout``, ``xargs``, ``find
-exec``, ``bash -c``, ``sudo`` ...) or any expansion of its command word (braces, globs, variables, ANSI-C
quoting, aliases), nested, in any quoting, is never *allowed*: an allow pattern asks at most, a deny pattern
denies or asks, and ``tool_config.run_command.allow/deny`` refuses.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig import Rig
from toolrig.config import Config
from toolrig.policy.rules import Policy
from toolrig.sandbox.paths import Workspace
from toolrig.tools.shell import RunCommand, RunCommandConfig, judge

DENY_TOUCH: dict[str, Any] = {
    "approvals": {"mode": "off"},
    "tools": {"rules": [{"tool": "run_command", "subject": "touch *", "verdict": "deny"}]},
    "tool_config": {"run_command": {"deny": ["touch *"]}},
}
ALLOW_GIT: dict[str, Any] = {
    "approvals": {"mode": "always", "allow": ["run_command:git *"]},
    "tool_config": {"run_command": {"allow": ["git *"]}},
}


def test_r01_env_split_string_does_not_hide_a_command_behind_an_allowed_one(workspace: Path) -> None:
    config = {
        "approvals": {"mode": "always", "allow": ["run_command:git *"]},
        "tools": {"rules": [{"tool": "run_command", "subject": "touch *", "verdict": "deny"}]},
        "tool_config": {"run_command": {"allow": ["git *"], "deny": ["touch *"]}},
    }
    rig = Rig(workspace, config=config)
    command = 'env -S "touch PWNED" git status'
    decision = Policy(Config.model_validate(config), Workspace(workspace)).decide(RunCommand(), None, [command])
    assert decision.verdict == "deny", decision
    assert judge(command, RunCommandConfig.model_validate(config["tool_config"]["run_command"])) is not None
    result = rig.call_sync("run_command", {"command": command})
    assert result.is_error
    assert not (workspace / "PWNED").exists()


@pytest.mark.parametrize(
    "command",
    [
        "{touch,P_brace}",
        "/usr/bin/tou[c]h P_glob",
        "find . -maxdepth 0 -exec touch P_find \\;",
        "shopt -s expand_aliases\nalias t=touch\nt P_alias",
        "env -S 'touch P_envS'",
    ],
)
def test_r10_deny_rules_see_braces_globs_find_exec_aliases_and_env_split(workspace: Path, command: str) -> None:
    rig = Rig(workspace, config=DENY_TOUCH)
    result = rig.call_sync("run_command", {"command": command, "timeout_seconds": 10})
    assert result.is_error, result
    assert not list(workspace.glob("P_*"))


def test_r11_environment_prefixes_are_not_plain_for_a_config_allowlist(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    rig = Rig(workspace, config={"tool_config": {"run_command": {"allow": ["git *"]}}})
    command = "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch PWNED; false' git status"
    result = rig.call_sync("run_command", {"command": command})
    assert result.is_error and result.error_type == "denied", result
    assert not (workspace / "PWNED").exists()
    assert not rig.call_sync("run_command", {"command": "git status"}).is_error


# ------------------------------------------------------------------------------------------ the class

INNER: list[str] = [
    "touch X",
    "'touch' X",
    '"touch" X',
    "t'ou'ch X",
    "\\touch X",
    "/usr/bin/touch X",
    "{touch,X}",
    "tou[c]h X",
    "/usr/bin/tou?h X",
    "$'touch' X",
    "$(echo touch) X",
    "`echo touch` X",
    "${T:-touch} X",
    "$T X",
    "echo X | xargs touch",
    "shopt -s expand_aliases; alias t=touch; t X",
    "git -c alias.t='!touch X' t",
    "git t",
    "python3 -c \"import os; os.system('touch X')\"",
    "bash < script.sh",
    "source ./script.sh",
]

Wrap = Callable[[str], str]
WRAPPERS: list[Wrap] = [
    lambda c: f"env {c}",
    lambda c: f"env -i {c}",
    lambda c: f"env A=1 {c}",
    lambda c: f"env -S {shlex.quote(c)}",
    lambda c: f"env -iS{shlex.quote(c)}",
    lambda c: f"env --split-string={shlex.quote(c)} git status",
    lambda c: f"env -u HOME -S{shlex.quote(c)}",
    lambda c: f"timeout 5 {c}",
    lambda c: f"timeout -s KILL -k 1 5 {c}",
    lambda c: f"nice -n 5 {c}",
    lambda c: f"nice -5 {c}",
    lambda c: f"sudo {c}",
    lambda c: f"sudo -u root {c}",
    lambda c: f"nohup {c}",
    lambda c: f"command {c}",
    lambda c: f"setsid -f {c}",
    lambda c: f"stdbuf -o0 {c}",
    lambda c: f"xargs {c}",
    lambda c: f"xargs -0 -n 1 {c}",
    lambda c: f"bash -c {shlex.quote(c)}",
    lambda c: f"sh -c {shlex.quote(c)}",
    lambda c: f"bash -lc {shlex.quote(c)}",
    lambda c: f"eval {shlex.quote(c)}",
    lambda c: f"find . -maxdepth 0 -exec {c} \\;",
    lambda c: f"find . -execdir {c} +",
    lambda c: f"A=1 {c}",
    lambda c: f"GIT_SSH_COMMAND=x {c}",
    lambda c: f"git status && {c}",
    lambda c: f"git status; {c}",
    lambda c: f"git log | {c}",
    lambda c: f"({c})",
    lambda c: f"{{ {c}; }}",
    lambda c: f"git log $({c})",
    lambda c: f"flock /tmp/l {c}",
    lambda c: f"flock /tmp/l -c {shlex.quote(c)}",
    lambda c: f"busybox {c}",
    lambda c: f"strace -f {c}",
    lambda c: f"watch -n 1 {c}",
    lambda c: f"npx {c}",
]


@st.composite
def wrapped(draw: st.DrawFn) -> str:
    command = draw(st.sampled_from(INNER))
    for wrap in draw(st.lists(st.sampled_from(WRAPPERS), max_size=3)):
        command = wrap(command)
    return command


def decide(workspace: Path, config: dict[str, Any], command: str) -> str:
    return Policy(Config.model_validate(config), Workspace(workspace)).decide(RunCommand(), None, [command]).verdict


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=wrapped())
def test_a_wrapped_denied_command_is_never_allowed(workspace: Path, command: str) -> None:
    assert decide(workspace, DENY_TOUCH, command) in ("deny", "ask"), command
    assert judge(command, RunCommandConfig(deny=["touch *"])) is not None, command
    assert decide(workspace, ALLOW_GIT, command) in ("deny", "ask"), command
    assert judge(command, RunCommandConfig(allow=["git *"])) is not None, command


@pytest.mark.parametrize("command", ["git status", "git log --oneline -5", "timeout 30 git fetch", "nice git gc"])
def test_plain_commands_stay_allowed(workspace: Path, command: str) -> None:
    assert decide(workspace, ALLOW_GIT, command) == "allow"
    assert judge(command, RunCommandConfig(allow=["git *"])) is None
    assert judge(command, RunCommandConfig(deny=["touch *"])) is None
