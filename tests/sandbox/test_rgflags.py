from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


@pytest.mark.parametrize(
    ("flags", "argv", "globs"),
    [
        ("-i -w", ["--ignore-case", "--word-regexp"], []),
        ("-t ts", ["--type=ts"], []),
        ("-g '*.test.ts'", [], ["--glob=*.test.ts"]),
        ('-i -g "*.ts" -C 2', ["--ignore-case", "--context=2"], ["--glob=*.ts"]),
        (["-g '*.ts'"], [], ["--glob=*.ts"]),
        (["-t py", "-i"], ["--type=py", "--ignore-case"], []),
        (["-g", "my file.ts"], [], ["--glob=my file.ts"]),
        (["--glob=a b.ts"], [], ["--glob=a b.ts"]),
        ("", [], []),
    ],
)
def test_a_flag_string_is_split_like_a_shell(flags: str | list[str], argv: list[str], globs: list[str]) -> None:
    parsed = parse_flags(flags, same)
    assert parsed.argv == argv and parsed.globs == globs


@pytest.mark.parametrize(
    "flags", ["-n", "--line-number", "--color=never", "--color never", "--no-heading -H", "-rn", "--colour=always"]
)
def test_harmless_display_flags_are_ignored_with_a_note(flags: str) -> None:
    parsed = parse_flags(f"{flags} -i", same)
    assert parsed.argv == ["--ignore-case"] and parsed.ignored and "Ignored" in parsed.note()


@pytest.mark.parametrize("flags", ["--pre cat", "--pre=cat", "-i --pre-glob '*'", "-iz", "--hostname-bin=/bin/sh"])
def test_a_flag_string_keeps_every_refusal(flags: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_flags(flags, same)
    assert caught.value.error_type.value == "denied"


@pytest.mark.parametrize("flags", ["-g '*.ts", '-i "', "--files", "-e x"])
def test_a_malformed_or_unknown_flag_string_is_invalid_input(flags: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_flags(flags, same)
    assert caught.value.error_type.value == "invalid_input"


@given(st.lists(st.sampled_from(["-i", "-w", "-F", "-t", "py", "-g", "*.ts", "a b", "-C", "3", "--pre", "-n"])))
def test_a_quoted_string_means_what_the_same_list_means(items: list[str]) -> None:
    def outcome(flags: str | list[str]) -> object:
        try:
            parsed = parse_flags(flags, same)
        except ToolError as err:
            return err.error_type
        return (parsed.argv, parsed.globs, parsed.ignored)

    listed = [item for item in items if " " not in item]
    assert outcome(shlex.join(listed)) == outcome(listed)


@given(st.text(max_size=60))
def test_any_flag_string_parses_or_is_a_clear_error(text: str) -> None:
    try:
        parse_flags(text, same)
    except ToolError as err:
        assert err.error_type.value in ("invalid_input", "denied")
