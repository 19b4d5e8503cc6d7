from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.policy.subjects import escape, kind_of, matches, view
from toolrig.sandbox.paths import Workspace


def test_a_tools_kind_is_its_own_declaration_and_no_table_names_tools() -> None:
    import toolrig.policy.subjects as subjects
    from toolrig.registry import Registry

    catalog = Registry.default()
    assert kind_of(catalog.get("run_command")) == "command"
    assert kind_of(catalog.get("write_file")) == "path"
    assert kind_of(catalog.get("edit")) == "path"  # missing from the old hand-kept table (issue 11, 1)
    assert kind_of(catalog.get("send_email")) == "recipient"
    assert kind_of(catalog.get("calculate")) == "text"
    assert not hasattr(subjects, "KNOWN_KINDS")


def test_a_command_is_read_as_its_simple_commands(workspace: Path) -> None:
    seen = view("command", ["FOO=1 git status && /usr/bin/rm -rf x"], Workspace(workspace))
    assert seen.units == ("git status", "/usr/bin/rm -rf x")
    assert "rm -rf x" in seen.deny_texts  # the program by its base name, for deny patterns
    assert seen.unclear == ("sets environment variables for 'git' (FOO)",)


def test_paths_are_resolved_against_the_workspace(workspace: Path) -> None:
    seen = view("path", ["a/../b.txt", str(workspace / "c"), "/etc/passwd", "~/x", "bad\x00"], Workspace(workspace))
    assert seen.units[:3] == ("b.txt", "c", "/etc/passwd")
    assert seen.units[3].endswith("/x") and seen.units[3].startswith("/")
    assert seen.unclear == ("the path 'bad\\x00' cannot be read",)


def test_urls_are_made_canonical_and_tricks_are_unclear() -> None:
    seen = view("url", ["HTTP://Example.COM:80", "https://u:p@x.io/", "ftp://[::1]:21/a?b=1"], Workspace("."))
    assert seen.units == ("http://example.com/", "ftp://[::1]:21/a?b=1")
    assert any("user info" in reason for reason in seen.unclear)


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**", "src", True),
        ("src/**", "srcx/a", False),
        ("./docs/?.md", "docs/a.md", True),
        ("[!.]*", ".env", False),
        ("[a-c]*", "b", True),
        ("data[[]1]", "data[1]", True),
    ],
)
def test_path_globs(pattern: str, path: str, hit: bool) -> None:
    assert matches("path", pattern, path) is hit


@settings(deadline=None)  # timing on a shared CI machine is not the property under test
@given(st.text(min_size=1, max_size=30))
def test_an_escaped_subject_matches_itself_and_nothing_wider(text: str) -> None:
    pattern = escape(text)
    assert fnmatch.fnmatchcase(text, pattern)
    assert matches("path", pattern, text) or "\n" in text
    assert not fnmatch.fnmatchcase(text + "x", pattern)
