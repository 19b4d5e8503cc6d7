"""Claude Code's background shells (``BashOutput``, ``KillShell``) over run_command's background commands.

``Bash`` with ``run_in_background`` starts one (``profiles/claude.py``); these read and stop it, shaped as the
SDK's ``BashOutputToolOutput`` and ``KillShellOutput``.
"""

from __future__ import annotations

import time
from typing import Any

from toolrig.profiles.profile import Args, Face, Shaped, drop, obj, string

_BASH_STATUS = {"running": "running", "exited": "completed", "stopped": "killed", "failed": "failed"}


def bash_output_in(args: Args, notes: list[str]) -> Args:
    out = drop(args, notes, {"filter": "toolrig returns every new line; filter them yourself"})
    out["id"] = out.pop("bash_id", out.get("id"))
    return out


def bash_output_out(shaped: Shaped) -> dict[str, Any]:
    output = shaped.output
    stdout, stderr = str(output.get("stdout", "")), str(output.get("stderr", ""))
    return {
        "shellId": output.get("id", ""),
        "command": output.get("command", ""),
        "status": _BASH_STATUS.get(str(output.get("status")), "failed"),
        "exitCode": output.get("exit_code"),
        "stdout": stdout,
        "stderr": stderr,
        "stdoutLines": stdout.count("\n"),
        "stderrLines": stderr.count("\n"),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def kill_shell_in(args: Args, notes: list[str]) -> Args:
    out = dict(args)
    out["id"] = out.pop("shell_id", out.get("id"))
    return out


def kill_shell_out(shaped: Shaped) -> dict[str, Any]:
    shell = shaped.output.get("id", "")
    return {"message": f"Successfully killed shell: {shell} ({shaped.output.get('command', '')})", "shell_id": shell}


BACKGROUND_FACES = (
    Face(
        "BashOutput",
        "command_output",
        "Read the new output of a background shell (started with run_in_background), with its status.",
        obj(
            {
                "bash_id": string("The ID of the background shell to read output from."),
                "filter": string("Ignored: every new line is returned."),
            },
            ("bash_id",),
        ),
        bash_output_in,
        bash_output_out,
    ),
    Face(
        "KillShell",
        "stop_command",
        "Kill a background shell and everything it started.",
        obj({"shell_id": string("The ID of the background shell to kill.")}, ("shell_id",)),
        kill_shell_in,
        kill_shell_out,
    ),
)
