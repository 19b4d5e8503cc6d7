"""Seed 003's Windows bash lookup (CODEBUFF_GIT_BASH_PATH, Git Bash, PATH, WSL), tested on any OS."""

from __future__ import annotations

import ntpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.profiles.windows_bash import ENV, WindowsBash, bash_argv, find_windows_bash

GIT = r"C:\Program Files\Git\bin\bash.exe"
BASE = {"ProgramFiles": r"C:\Program Files", "SystemRoot": r"C:\Windows"}


def files(*paths: str) -> set[str]:
    return {ntpath.normcase(p) for p in paths}


def lookup(env: dict[str, str], *present: str) -> WindowsBash | None:
    known = files(*present)
    return find_windows_bash(env, lambda p: ntpath.normcase(ntpath.normpath(p)) in known)


def test_the_seeds_variable_wins_when_it_names_a_file() -> None:
    custom = r"D:\tools\bash.exe"
    assert lookup({**BASE, ENV: f'"{custom}"'}, custom, GIT) == WindowsBash(custom, "env")
    assert lookup({**BASE, ENV: r"D:\missing.exe"}, GIT) == WindowsBash(GIT, "git-bash")


@pytest.mark.parametrize(
    ("env", "bash"),
    [
        (BASE, GIT),
        ({"ProgramFiles(x86)": r"C:\Program Files (x86)"}, r"C:\Program Files (x86)\Git\bin\bash.exe"),
        ({"LOCALAPPDATA": r"C:\Users\a\AppData\Local"}, r"C:\Users\a\AppData\Local\Programs\Git\bin\bash.exe"),
    ],
)
def test_a_git_for_windows_install_is_found(env: dict[str, str], bash: str) -> None:
    assert lookup(env, bash) == WindowsBash(bash, "git-bash")


def test_git_on_path_leads_to_its_bash_and_system32_bash_is_wsl() -> None:
    env = {"SystemRoot": r"C:\Windows", "PATH": r"C:\Windows\System32;E:\PortableGit\cmd"}
    found = lookup(env, r"C:\Windows\System32\bash.exe", r"E:\PortableGit\cmd\git.exe", r"E:\PortableGit\bin\bash.exe")
    assert found == WindowsBash(r"E:\PortableGit\bin\bash.exe", "git-bash")
    assert lookup({"SystemRoot": r"C:\Windows", "PATH": r"C:\Windows\System32"}, r"C:\Windows\System32\bash.exe") == (
        WindowsBash(r"C:\Windows\System32\bash.exe", "wsl")
    )
    assert lookup({"PATH": r"C:\msys64\usr\bin"}, r"C:\msys64\usr\bin\bash.exe") == WindowsBash(
        r"C:\msys64\usr\bin\bash.exe", "path"
    )


def test_nothing_found_is_none() -> None:
    assert lookup({}) is None
    assert lookup(BASE) is None


@given(st.dictionaries(st.sampled_from([ENV, "PATH", "ProgramFiles", "SystemRoot", "LOCALAPPDATA"]), st.text()))
def test_any_environment_gives_a_found_file_or_none(env: dict[str, str]) -> None:
    seen: list[str] = []

    def is_file(path: str) -> bool:
        seen.append(path)
        return False

    assert find_windows_bash(env, is_file) is None
    assert all(isinstance(p, str) for p in seen)


def test_run_commands_argv_is_plain_bash_on_posix_and_the_found_bash_on_windows() -> None:
    """The argv run_command starts: ``bash`` on POSIX; on Windows the lookup's bash, WSL through ``-e bash``."""
    script = ["-c", "echo hi"]
    assert bash_argv(script, os_name="posix", env={}, is_file=lambda p: False) == ["bash", "-c", "echo hi"]
    known = files(GIT)
    on_disk = lambda p: ntpath.normcase(ntpath.normpath(p)) in known  # noqa: E731
    assert bash_argv(script, os_name="nt", env=BASE, is_file=on_disk) == [GIT, "-c", "echo hi"]
    wsl = r"C:\Windows\System32\wsl.exe"
    wsl_only = lambda p: ntpath.normcase(p) == ntpath.normcase(wsl)  # noqa: E731
    assert bash_argv(script, os_name="nt", env=BASE, is_file=wsl_only) == [wsl, "-e", "bash", "-c", "echo hi"]
    assert bash_argv(script, os_name="nt", env=BASE, is_file=lambda p: False) is None
