"""Where Codebuff's ``run_terminal_command`` finds bash on Windows (seed 003), as a pure lookup.

Codebuff runs commands with bash on every OS; on Windows it takes, in order, ``CODEBUFF_GIT_BASH_PATH``, a Git
for Windows install, a ``bash.exe`` on PATH, then WSL. The lookup is kept apart from running anything (the
shell tool owns that) and takes the environment and a file test as arguments, so Linux CI tests it whole.
"""

from __future__ import annotations

import ntpath
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

ENV = "CODEBUFF_GIT_BASH_PATH"


@dataclass(frozen=True, slots=True)
class WindowsBash:
    path: str
    kind: Literal["env", "git-bash", "path", "wsl"]


def find_windows_bash(env: Mapping[str, str], is_file: Callable[[str], bool]) -> WindowsBash | None:
    """The bash a command would run under on Windows, or None when there is none (say so, do not guess)."""
    chosen = env.get(ENV, "").strip().strip('"')
    if chosen and is_file(chosen):
        return WindowsBash(chosen, "env")
    for base in (env.get("ProgramFiles"), env.get("ProgramFiles(x86)"), _join(env.get("LOCALAPPDATA"), "Programs")):
        if base:
            for rel in (("Git", "bin", "bash.exe"), ("Git", "usr", "bin", "bash.exe")):
                candidate = ntpath.join(base, *rel)
                if is_file(candidate):
                    return WindowsBash(candidate, "git-bash")
    system = ntpath.join(env.get("SystemRoot") or env.get("windir") or r"C:\Windows", "System32")
    for folder in _path_dirs(env):
        git = ntpath.join(folder, "git.exe")
        if is_file(git):  # ...\Git\cmd\git.exe: its bash is ...\Git\bin\bash.exe
            sibling = ntpath.join(ntpath.dirname(ntpath.normpath(folder)), "bin", "bash.exe")
            if is_file(sibling):
                return WindowsBash(sibling, "git-bash")
        bash = ntpath.join(folder, "bash.exe")
        # System32's bash.exe is the WSL launcher: it runs Linux, not the Windows paths the model sees.
        if is_file(bash) and ntpath.normcase(ntpath.normpath(folder)) != ntpath.normcase(system):
            return WindowsBash(bash, "path")
    for launcher in ("wsl.exe", "bash.exe"):
        candidate = ntpath.join(system, launcher)
        if is_file(candidate):
            return WindowsBash(candidate, "wsl")
    return None


def bash_argv(
    command_args: list[str],
    *,
    os_name: str = os.name,
    env: Mapping[str, str] | None = None,
    is_file: Callable[[str], bool] = os.path.isfile,
) -> list[str] | None:
    """The argv that runs bash with ``command_args`` (``-c SCRIPT ...``) on this OS; None: no bash on Windows.

    POSIX runs ``bash`` from PATH. Windows runs the bash ``find_windows_bash`` chooses: Git Bash (or the
    seed's variable) directly, WSL through ``wsl.exe -e bash`` (its launcher takes the script the same way).
    """
    if os_name != "nt":
        return ["bash", *command_args]
    found = find_windows_bash(os.environ if env is None else env, is_file)
    if found is None:
        return None
    if found.kind == "wsl" and ntpath.basename(found.path).lower() == "wsl.exe":
        return [found.path, "-e", "bash", *command_args]
    return [found.path, *command_args]


def _join(base: str | None, *parts: str) -> str | None:
    return ntpath.join(base, *parts) if base else None


def _path_dirs(env: Mapping[str, str]) -> list[str]:
    raw = env.get("PATH") or env.get("Path") or ""
    return [part.strip().strip('"') for part in raw.split(";") if part.strip()]
