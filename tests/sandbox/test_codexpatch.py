from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.sandbox.codexpatch import Chunk, PatchError, apply_chunks, parse, seek, unwrap

BODY = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"


@pytest.mark.parametrize(
    "wrapped",
    [
        f"```diff\n{BODY}\n```",
        f"<<'EOF'\n{BODY}\nEOF",
        f"<<EOF\n{BODY}\nEOF",
        f"apply_patch <<'EOF'\n{BODY}\nEOF",
        BODY.replace("\n", "\r\n"),
    ],
)
def test_wrappers_and_crlf_are_accepted(wrapped: str) -> None:
    hunks = parse(wrapped)
    assert [(h.kind, h.path, h.content) for h in hunks] == [("add", "a.txt", "hi\n")]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("hello", "first line of the patch must be '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: a\n+x", "last line of the patch must be '*** End Patch'"),
        ("<<\"EOF'\n*** Begin Patch\n*** End Patch\nEOF", "first line"),
        ("*** Begin Patch\n*** Update File: a\n@@\n*** End Patch", "does not contain any lines"),
        ("*** Begin Patch\n*** Update File: a\n@@\n x\n@@\n*** End of File\n*** End Patch", "does not contain"),
        ("*** Begin Patch\n*** Update File: a\n x\nbad\n*** End Patch", "Expected update hunk to start with a @@"),
        ("*** Begin Patch\n*** Update File: a\n@@\nbad\n*** End Patch", "Unexpected line found in update hunk"),
        ("*** Begin Patch\n*** add file: a\n*** End Patch", "is not a valid hunk header"),
    ],
)
def test_malformed_patches_fail_with_upstream_messages(patch: str, message: str) -> None:
    with pytest.raises(PatchError, match=message.replace("*", r"\*")):
        parse(patch)


def test_matching_prefers_exact_then_trailing_then_surrounding_whitespace_then_punctuation() -> None:
    lines = ["x  ", "  x", "x"]
    assert seek(lines, ["x"], 0, False) == 2  # exact beats the lenient hits above it
    assert seek(["a  ", "  a"], ["a"], 0, False) == 0  # trailing whitespace pass
    assert seek(["  a"], ["a"], 0, False) == 0
    assert seek(["it\u2019s \u201cok\u201d \u2014 fine\u00a0now"], ['it\'s "ok" - fine now'], 0, False) == 0
    assert seek(["a", "b", "a"], ["a"], 1, False) == 2
    assert seek(["a", "b", "a"], ["a"], 0, True) == 2  # end-of-file anchor tries only the last position
    assert seek(["a", "b"], ["a"], 0, True) is None


def test_a_missing_chunk_fails_and_names_the_lines() -> None:
    with pytest.raises(PatchError, match="Failed to find expected lines in f:\nnope"):
        apply_chunks("a\n", [Chunk(None, ["nope"], ["x"])], "f")
    with pytest.raises(PatchError, match="Failed to find context 'def g' in f"):
        apply_chunks("a\n", [Chunk("def g", ["a"], ["b"])], "f")


def test_context_header_moves_the_cursor_to_the_right_occurrence() -> None:
    text = "def f():\n    return 1\ndef g():\n    return 1\n"
    out = apply_chunks(text, [Chunk("def g():", ["    return 1"], ["    return 2"])], "f")
    assert out == "def f():\n    return 1\ndef g():\n    return 2\n"


@given(
    st.lists(st.text(alphabet="abc xyz", max_size=6), min_size=1, max_size=30),
    st.data(),
)
def test_a_chunk_built_from_the_file_reproduces_the_edit(lines: list[str], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(lines) - 1))
    end = data.draw(st.integers(start + 1, len(lines)))
    replacement = data.draw(st.lists(st.text(alphabet="klm", max_size=4), max_size=4))
    # Context: the lines before the edit, so the first occurrence from the top is the intended one.
    old = lines[:end]
    new = lines[:start] + replacement
    out = apply_chunks("\n".join(lines) + "\n", [Chunk(None, old, new)], "f")
    assert out == "\n".join(lines[:start] + replacement + lines[end:]) + "\n"


def test_unwrap_leaves_a_plain_patch_alone() -> None:
    assert unwrap(BODY) == BODY
