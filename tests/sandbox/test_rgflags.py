from __future__ import annotations

import pytest

from toolrig.errors import ToolError
from toolrig.sandbox.rgflags import parse_flags, rebase_glob


def same(glob: str) -> str:
    return glob


@pytest.mark.parametrize(
    ("flags", "argv"),
    [
        (["-i", "-w"], ["--ignore-case", "--word-regexp"]),
        (["-iw"], ["--ignore-case", "--word-regexp"]),
        (["-C3"], ["--context=3"]),
        (["-t", "py"], ["--type=py"]),
        (["--type=py"], ["--type=py"]),
        (["-F"], ["--fixed-strings"]),
    ],
)
def test_allowlisted_flags_become_long_options_with_attached_values(flags: list[str], argv: list[str]) -> None:
    assert parse_flags(flags, same).argv == argv


@pytest.mark.parametrize(
    "flags",
    [
        ["--pre", "cat"],
        ["--pre=cat"],
        ["--pre-glob", "*"],
        ["--hostname-bin=/bin/sh"],
        ["-z"],
        ["--search-zip"],
        ["-iz"],
        ["--preprocessor"],
    ],
)
def test_flags_that_run_programs_are_denied(flags: list[str]) -> None:
    with pytest.raises(ToolError) as caught:
        parse_flags(flags, same)
    assert caught.value.error_type.value == "denied" and "not allowed" in caught.value.message


@pytest.mark.parametrize(
    "flags", [["--files"], ["--json"], ["-u"], ["--no-config"], ["-C", "x"], ["-t"], ["-e", "x"], ["-f", "p"]]
)
def test_unknown_or_malformed_flags_are_invalid_input(flags: list[str]) -> None:
    with pytest.raises(ToolError) as caught:
        parse_flags(flags, same)
    assert caught.value.error_type.value == "invalid_input"


def test_follow_hidden_globs_and_ignore_files_are_left_for_the_caller_to_check() -> None:
    flags = parse_flags(["-L", "--hidden", "-g", "a/*.py", "--ignore-file", "x"], lambda g: f"<{g}>")
    assert flags.follow and flags.hidden and flags.ignore_files == ["x"]
    assert flags.globs == ["--glob=<a/*.py>"] and "--follow" not in flags.argv


@pytest.mark.parametrize(
    ("glob", "prefix", "expected"),
    [
        ("*.py", "src", "*.py"),
        ("**/*.py", "src", "**/*.py"),
        ("a/*.py", "src", "/src/a/*.py"),
        ("!a/b", "src/x", "!/src/x/a/b"),
        ("a/*.py", ".", "a/*.py"),
    ],
)
def test_globs_are_rebased_from_the_search_directory_to_the_root(glob: str, prefix: str, expected: str) -> None:
    assert rebase_glob(glob, prefix) == expected
