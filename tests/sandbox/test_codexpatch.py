from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.sandbox.codexpatch import Chunk, PatchError, apply_chunks, parse, parse_patch, seek, unwrap

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
def test_a_chunk_built_from_the_file_reproduces_the_edit_or_names_both_places(
    lines: list[str], data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(lines) - 1))
    end = data.draw(st.integers(start + 1, len(lines)))
    replacement = data.draw(st.lists(st.text(alphabet="klm", max_size=4), max_size=4))
    old = lines[:end]
    new = lines[:start] + replacement
    text = "\n".join(lines) + "\n"
    found = [
        i
        for i in range(len(lines) - len(old) + 1)
        if [x.strip() for x in lines[i : i + len(old)]] == [x.strip() for x in old]
    ]
    try:
        out = apply_chunks(text, [Chunk(None, old, new)], "f")
    except PatchError as err:  # the same lines occur again further down: refused, never guessed
        assert "more than one place" in err.message and len(found) > 1
        return
    assert out == "\n".join(lines[:start] + replacement + lines[end:]) + "\n"


def test_unwrap_leaves_a_plain_patch_alone() -> None:
    assert unwrap(BODY) == BODY


# ---------------------------------------------------------------- issue 21, class by class


def _lines(text: str) -> list[str]:
    return text.split("\n")[:-1]


# Class 1: ambiguity is refused with both candidate lines, at whichever pass first finds the chunk.


@given(
    block=st.lists(st.sampled_from(["x = 1", "y = 2", "    return x", "", "pass"]), min_size=1, max_size=4),
    before=st.integers(0, 5),
    between=st.integers(1, 5),
    after=st.integers(0, 5),
    tolerant=st.booleans(),
)
def test_a_chunk_that_fits_in_two_places_is_refused_with_both_line_numbers(
    block: list[str], before: int, between: int, after: int, tolerant: bool
) -> None:
    if not any(line.strip() for line in block):
        block = [*block, "pass"]
    filler = [f"filler_{i}" for i in range(before + between + after)]
    lines = [*filler[:before], *block, *filler[before : before + between], *block, *filler[before + between :]]
    old = [f"  {line}  " if tolerant and line else line for line in block]  # found only by a tolerant pass
    with pytest.raises(PatchError) as caught:
        apply_chunks("\n".join(lines) + "\n", [Chunk(None, old, ["changed"])], "f.py")
    first, second = before + 1, before + len(block) + between + 1
    assert f"at line {first} and at line {second}" in caught.value.message
    assert caught.value.hint and "@@" in caught.value.hint
    # An anchor naming the line just above the second copy makes it unique.
    anchored = apply_chunks("\n".join(lines) + "\n", [Chunk(lines[second - 2], old, ["changed"])], "f.py")
    assert _lines(anchored)[second - 1] == "changed"
    assert _lines(anchored)[first - 1 : first - 1 + len(block)] == block


def test_an_exact_hit_is_unique_even_when_lenient_passes_would_find_more() -> None:
    text = "x\n  x\nx  \n"
    assert apply_chunks(text, [Chunk(None, ["  x"], ["y"])], "f") == "x\ny\nx  \n"


def test_end_of_file_chunks_and_pure_additions_are_never_ambiguous() -> None:
    assert apply_chunks("a\nb\na\n", [Chunk(None, ["a"], ["z"], end_of_file=True)], "f") == "a\nb\nz\n"
    assert apply_chunks("a\na\n", [Chunk(None, [], ["z"])], "f") == "a\na\nz\n"


def test_the_ambiguity_check_stays_linear_on_a_file_of_repeated_lines() -> None:
    # 20,000 identical lines and a chunk whose rarest line is unique: the candidates come from an index.
    lines = ["    return total"] * 20_000
    lines[15_000] = "def unique():"
    chunks = [Chunk(None, ["    return total", "def unique():", "    return total"], ["done"])]
    out = _lines(apply_chunks("\n".join(lines) + "\n", chunks, "f"))
    assert out[14_999] == "done" and len(out) == 19_998


# Class 2: a tolerant match never changes the file's indentation outside the patch's own lines.

_depths = st.lists(st.integers(0, 3), min_size=3, max_size=12).map(
    lambda raw: [min(d, prev + 1) for prev, d in zip([0, *raw], raw, strict=False)]
)


@given(depths=_depths, data=st.data())
def test_a_consistent_indentation_offset_is_carried_over_to_the_added_lines(
    depths: list[int], data: st.DataObject
) -> None:
    lines = [f"{'    ' * d}tok{i}" for i, d in enumerate(depths)]
    start = data.draw(st.integers(0, len(lines) - 3))
    end = data.draw(st.integers(start + 3, len(lines)))
    removed = data.draw(st.integers(start + 1, end - 2))
    low = min(depths[start:end])
    shift = data.draw(st.integers(-low, 2).filter(lambda k: k != 0))

    def shifted(line: str, depth: int) -> str:  # the model's copy, every line shifted by the same levels
        return "    " * (depth + shift) + line.lstrip()

    ops = []
    for i in range(start, end):
        if i == removed:
            ops.append(("-", shifted(lines[i], depths[i])))
            ops.append(("+", shifted(f"new{i}", depths[i])))
        else:
            ops.append((" ", shifted(lines[i], depths[i])))
    chunk = Chunk(None, [t for o, t in ops if o != "+"], [t for o, t in ops if o != "-"], ops=ops)
    out = _lines(apply_chunks("\n".join(lines) + "\n", [chunk], "f.py"))
    expected = [*lines[:removed], f"{'    ' * depths[removed]}new{removed}", *lines[removed + 1 :]]
    assert out == expected


@given(depths=_depths, data=st.data())
def test_a_tolerant_match_that_would_move_a_line_into_another_block_is_refused(
    depths: list[int], data: st.DataObject
) -> None:
    lines = [f"{'    ' * d}tok{i}" for i, d in enumerate(depths)]
    start = data.draw(st.integers(0, len(lines) - 3))
    end = data.draw(st.integers(start + 3, len(lines)))
    moved = data.draw(st.integers(start, end - 1))
    change = data.draw(st.sampled_from([-1, 1]).filter(lambda c: depths[moved] + c >= 0))
    ops = [(" ", ("    " * (depths[i] + (change if i == moved else 0))) + f"tok{i}") for i in range(start, end)]
    ops.append(("+", "    " * depths[end - 1] + "added"))
    chunk = Chunk(None, [t for _, t in ops[:-1]], [t for _, t in ops], ops=ops)
    with pytest.raises(PatchError, match="block structure"):
        apply_chunks("\n".join(lines) + "\n", [chunk], "f.py")


def test_the_python_block_example_from_the_issue_is_refused() -> None:
    text = "def f(x):\n    if x:\n        a()\n    b()\n"
    # The model's context indents b() under the if: the whitespace-blind pass matches, writing it would nest b().
    patch = "*** Update File: f.py\n@@\n     if x:\n         a()\n         b()\n+        c()\n"
    with pytest.raises(PatchError, match="block structure"):
        apply_chunks(text, parse(patch)[0].chunks, "f.py")


# Class 3: header lines are trimmed; a path that still starts or ends with whitespace is refused.

_pad = st.text(alphabet=" \t", max_size=3)


@given(a=_pad, b=_pad, c=_pad, d=_pad, e=_pad)
def test_whitespace_around_header_lines_is_trimmed(a: str, b: str, c: str, d: str, e: str) -> None:
    text = (
        f"*** Begin Patch\n{a}*** Update File: src/a.py{b}\n{c}*** Move to: lib/b.py{d}\n@@\n-x\n+y\n"
        f"*** End of File{e}\n{a}*** Delete File: old.txt{e}\n*** Add File: n.txt{b}\n+n\n*** End Patch"
    )
    update, delete, add = parse(text)
    assert (update.path, update.move_to, update.chunks[0].end_of_file) == ("src/a.py", "lib/b.py", True)
    assert (delete.path, add.path) == ("old.txt", "n.txt")


@pytest.mark.parametrize("path", ["a.txt\u200b", "dir /a.txt", "dir/ a.txt", "a.txt\u00a0x/\u202e", "\ufeffa.txt"])
def test_a_path_that_still_starts_or_ends_with_whitespace_or_an_invisible_character_is_refused(path: str) -> None:
    with pytest.raises(PatchError, match="whitespace or an invisible character"):
        parse(f"*** Begin Patch\n*** Update File: x\n*** Move to: {path}\n@@\n-a\n+b\n*** End Patch")


# Class 6: unified-diff hunk headers read as a bare @@, the heading (if any) as a soft anchor.


def test_unified_diff_headers_are_read_as_bare_anchors() -> None:
    patch = parse_patch(
        "*** Begin Patch\n*** Update File: f.py\n@@ -1,2 +1,2 @@\n-a\n+b\n"
        "@@ -10,7 +10,8 @@ def g():\n-    return 1\n+    return 2\n*** End Patch"
    )
    first, second = patch.hunks[0].chunks
    assert (first.context, first.soft_context) == (None, False)
    assert (second.context, second.soft_context) == ("def g():", True)
    assert len(patch.notes) == 2 and "read as '@@ def g():'" in patch.notes[1]
    text = "a\ndef f():\n    return 1\ndef g():\n    return 1\n"
    assert apply_chunks(text, patch.hunks[0].chunks, "f.py") == "b\ndef f():\n    return 1\ndef g():\n    return 2\n"


def test_a_unified_heading_missing_from_the_file_is_ignored_with_a_note_but_a_plain_anchor_is_not() -> None:
    notes: list[str] = []
    chunk = Chunk("def gone(", ["x"], ["y"], soft_context=True)
    assert apply_chunks("x\n", [chunk], "f.py", notes) == "y\n"
    assert notes == ["f.py: the unified-diff heading 'def gone(' is not in the file; it was ignored."]
    with pytest.raises(PatchError, match="Failed to find context"):
        apply_chunks("x\n", [Chunk("def gone(", ["x"], ["y"])], "f.py")


# Class 7: a pass comparing NFC forms, and nothing wider.

_accented = (
    st.text(alphabet="abc \u00e9\u00fc\u00f1\u00e5\u00e7\u00c5\u1e9b\u0101", min_size=1, max_size=12)
    .map(str.strip)
    .filter(lambda s: unicodedata.normalize("NFD", s) != s)
)


@given(line=_accented, nfc_in_patch=st.booleans())
def test_context_in_one_normal_form_matches_a_file_in_the_other(line: str, nfc_in_patch: bool) -> None:
    composed, decomposed = unicodedata.normalize("NFC", line), unicodedata.normalize("NFD", line)
    file_line, patch_line = (decomposed, composed) if nfc_in_patch else (composed, decomposed)
    out = apply_chunks(f"before\n{file_line}\nafter\n", [Chunk(None, [patch_line], [patch_line + "!"])], "f")
    assert _lines(out) == ["before", patch_line + "!", "after"]
    ops = [(" ", patch_line), ("+", "\u00e9t\u00e9")]
    kept = _lines(apply_chunks(f"{file_line}\n", [Chunk(None, [patch_line], [patch_line, "x"], ops=ops)], "f"))
    assert kept[0] == file_line  # the file's own context line, in its own form
    # An added line follows a decomposed file's form; in a composed file it stays as written.
    assert kept[1] == (unicodedata.normalize("NFD", "\u00e9t\u00e9") if nfc_in_patch else "\u00e9t\u00e9")


@pytest.mark.parametrize(
    ("file_line", "patch_line"),
    [
        ("office", "o\ufb03ce"),  # compatibility ligature
        ("ABC", "\uff21\uff22\uff23"),  # full-width letters
        ("name = 1", "na\u200bme = 1"),  # zero-width space
        ("name = 1", "name\u202e = 1"),  # bidi override
        ("paypal", "p\u0430yp\u0430l"),  # Cyrillic a, a look-alike
    ],
)
def test_compatibility_invisible_and_look_alike_characters_never_match(file_line: str, patch_line: str) -> None:
    with pytest.raises(PatchError, match="Failed to find expected lines"):
        apply_chunks(f"{file_line}\n", [Chunk(None, [patch_line], ["x"])], "f")


# Issue 18 item 2 and issue 21 "Also": the envelope and a fence are optional.


@pytest.mark.parametrize(
    "text",
    [
        "*** Add File: a.txt\n+hi",
        "*** Add File: a.txt\n+hi\n*** End Patch",
        "*** Begin Patch\n*** Add File: a.txt\n+hi",
        "```\n*** Add File: a.txt\n+hi\n```",
        "```diff\n*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch",
        "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n```",
        "<<'EOF'\n*** Add File: a.txt\n+hi\nEOF",
        "\n\n*** Add File: a.txt\n+hi\n\n",
    ],
)
def test_the_envelope_lines_and_a_fence_are_optional(text: str) -> None:
    assert [(h.kind, h.path, h.content) for h in parse(text)] == [("add", "a.txt", "hi\n")]


def test_a_patch_without_end_patch_keeps_its_last_chunk_whole() -> None:
    (hunk,) = parse("*** Begin Patch\n*** Update File: f\n@@ def g():\n a\n-b\n+c\n d")
    assert (hunk.chunks[0].old, hunk.chunks[0].new) == (["a", "b", "d"], ["a", "c", "d"])


def test_text_that_is_no_patch_at_all_is_still_refused_with_the_upstream_message() -> None:
    with pytest.raises(PatchError, match=r"first line of the patch must be '\*\*\* Begin Patch'"):
        parse("please apply:\n*** Add File: a\n+x")


_LINE = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20)
_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,8}\.txt", fullmatch=True)


@given(st.lists(st.tuples(_NAME, st.lists(_LINE, min_size=1, max_size=4)), min_size=1, max_size=3))
def test_every_wrapping_of_the_same_sections_parses_the_same(sections: list[tuple[str, list[str]]]) -> None:
    body = "\n".join(f"*** Add File: {name}\n" + "\n".join(f"+{line}" for line in lines) for name, lines in sections)
    expected = [(h.kind, h.path, h.content) for h in parse(f"*** Begin Patch\n{body}\n*** End Patch")]
    for text in (body, f"```\n{body}\n```", f"```diff\n*** Begin Patch\n{body}\n*** End Patch\n```"):
        assert [(h.kind, h.path, h.content) for h in parse(text)] == expected


@pytest.mark.parametrize(
    "text", ["*** Add File: a.txt\n+x ", "```\n*** Add File: a.txt\n+x ", "\n \n*** Add File: a.txt\n+x \n\n"]
)
def test_without_end_patch_the_last_line_keeps_its_trailing_spaces(text: str) -> None:
    assert [h.content for h in parse(text)] == ["x \n"]
