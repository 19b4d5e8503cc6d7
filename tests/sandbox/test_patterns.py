from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.sandbox.patterns import PatternSet, expand_braces


def test_braces_expand_nested_and_leave_single_options_alone() -> None:
    assert expand_braces("src/*.{ts,tsx}") == ["src/*.ts", "src/*.tsx"]
    assert expand_braces("{a,b{1,2}}/x") == ["a/x", "b1/x", "b2/x"]
    assert expand_braces("{only}") == ["{only}"]


def test_brace_bombs_are_refused() -> None:
    with pytest.raises(ValueError, match="more than"):
        expand_braces("{a,b}" * 12)


@given(st.lists(st.text(alphabet="abc", min_size=1, max_size=3), min_size=2, max_size=4, unique=True))
def test_brace_expansion_matches_each_option(options: list[str]) -> None:
    patterns = PatternSet(["x/{" + ",".join(options) + "}.py"], braces=True)
    for option in options:
        assert patterns.matches(f"x/{option}.py")
    assert not patterns.matches("x/zzzz.py")


def test_directory_patterns_match_their_contents_and_negation_is_reported() -> None:
    patterns = PatternSet(["build/", "*.log", "!keep.log"])
    assert patterns.matches_path_or_parent("build/a/b.o") == "build"
    assert patterns.check("keep.log") is False and patterns.check("a.log") is True and patterns.check("a") is None
