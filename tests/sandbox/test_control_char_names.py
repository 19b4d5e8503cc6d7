"""A control character in a file name is one more character to every path matcher (review F13, by class).

pathspec's regexes stopped ``.+`` at a newline and let ``$`` match before a final one, so ``cfg\\n/.env`` was not
denied and ``x.key\\n`` matched ``*.key``. The property for every matcher toolrig has (deny globs, .gitignore,
``allowed_paths``, policy path subjects): a name with control characters matches exactly as the same name with
each control character replaced by a plain letter no pattern names.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolrig.policy.subjects import matches as subject_matches
from toolrig.sandbox.allowed import AllowedPaths
from toolrig.sandbox.gitignore import IgnoreRules
from toolrig.sandbox.paths import Workspace
from toolrig.sandbox.patterns import PatternSet

PLAIN = "Q"  # named by no pattern below
CONTROLS = "\n\r\t\x01\x0b\x0c\x1b\x7f\x85\u2028"
PATTERNS = [".env", "*.key", "secret/", "a/**/b", "!keep", "**/build", "cfg/*", "?", "a?b", "[ab]x", "[!a]e", "e*"]
PIECES = ["a", "b", "e", "x", ".env", ".key", "keep", "cfg", "build", *CONTROLS]
SEGMENT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join)
PATHS = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join).filter(lambda p: not {".", ".."} & set(p.split("/")))
CHOSEN = st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=4)
_CONTROL = re.compile(f"[{re.escape(CONTROLS)}]")


def plain(path: str) -> str:
    return _CONTROL.sub(PLAIN, path)


@given(patterns=CHOSEN, path=PATHS, is_dir=st.booleans())
@example(patterns=[".env"], path="cfg\n/.env", is_dir=False)
@example(patterns=["*.key"], path="x.key\n", is_dir=False)
@settings(max_examples=300, deadline=None)
def test_pattern_sets_treat_control_characters_as_name_characters(patterns: list[str], path: str, is_dir: bool) -> None:
    compiled = PatternSet(patterns, braces=True)
    assert compiled.check(path, is_dir=is_dir) == compiled.check(plain(path), is_dir=is_dir)
    hit = compiled.matches_path_or_parent(path, is_dir=is_dir)
    assert (hit and plain(hit)) == compiled.matches_path_or_parent(plain(path), is_dir=is_dir)


@given(patterns=CHOSEN, path=PATHS)
@example(patterns=[".env"], path="cfg\n/.env")
@settings(max_examples=100, deadline=None)
def test_deny_globs_and_allowed_paths_treat_control_characters_as_name_characters(
    patterns: list[str], path: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Workspace(tmp, deny_globs=patterns)
        allowed = AllowedPaths([p for p in patterns if not p.startswith("!")] or ["e*"])
        for name in (path, plain(path)):  # nothing exists: matched by name alone
            assert not (workspace.root / name).exists()
        assert workspace.hidden(workspace.root / path) == workspace.hidden(workspace.root / plain(path))
        permits = [allowed.permits(workspace, name, workspace.root / name) for name in (path, plain(path))]
        assert permits[0] == permits[1]


@given(patterns=CHOSEN, path=PATHS)
@example(patterns=[".env"], path="cfg\n/.env")
@settings(max_examples=60, deadline=None)
def test_gitignore_rules_treat_control_characters_as_name_characters(patterns: list[str], path: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp).resolve()
        (top / ".git").mkdir()
        (top / ".gitignore").write_text("\n".join(patterns) + "\n")
        rules = IgnoreRules()
        assert rules.ignored(top / path, is_dir=False) == rules.ignored(top / plain(path), is_dir=False)


SUBJECTS = [p for p in PATTERNS if not p.startswith("!")] + ["**", "cfg/**", "**/.env", "*e"]


@given(pattern=st.sampled_from(SUBJECTS), path=PATHS)
@example(pattern="**/.env", path="cfg\n/.env")
@settings(max_examples=200, deadline=None)
def test_policy_path_subjects_treat_control_characters_as_name_characters(pattern: str, path: str) -> None:
    assert subject_matches("path", pattern, path) == subject_matches("path", pattern, plain(path))
