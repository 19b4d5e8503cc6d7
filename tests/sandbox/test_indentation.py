from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolrig.sandbox.codexpatch import Chunk, apply_chunks, readings
from toolrig.sandbox.indentation import Reindent, infer


def _pairs(patch: list[str], file: list[str]) -> list[tuple[int, str, str]]:
    return [(i, ours, theirs) for i, (ours, theirs) in enumerate(zip(patch, file, strict=True))]


def test_a_string_offset_is_found_and_carried_to_added_lines_in_both_readings() -> None:
    mapping = infer(_pairs(["", "    "], ["    ", "        "]))
    assert mapping == Reindent("    ", grow=True) and mapping.drifts
    assert mapping.line("    x", shifted=True) == "        x"
    assert mapping.line("    x", shifted=False) == "    x"
    shrink = infer(_pairs(["        ", "            "], ["    ", "        "]))
    assert isinstance(shrink, Reindent) and not shrink.grow
    assert shrink.line("  x", shifted=True) is None  # less indented than the offset removes
    assert shrink.line("  x", shifted=False) == "  x"


def test_tabs_against_spaces_at_one_width_is_read_in_columns_and_written_in_the_files_style() -> None:
    to_tabs = infer(_pairs(["    ", "        "], ["\t", "\t\t"]))
    assert to_tabs == Reindent(width=4, drift=0, tabs=True) and not to_tabs.drifts
    assert to_tabs.line("            x = 1", shifted=True) == "\t\t\tx = 1"
    assert to_tabs.line("      odd", shifted=True) == "\t  odd"
    to_spaces = infer(_pairs(["\t", "\t\t"], ["        ", "                "]))
    assert to_spaces == Reindent(width=8, drift=0, tabs=False)
    assert to_spaces.line("\t\t\tx", shifted=True) == " " * 24 + "x"
    assert "spaces where the file uses tabs" in (to_tabs.describe() or "")


def test_tabs_against_spaces_with_a_drift_keeps_both_readings() -> None:
    mapping = infer(_pairs(["", "    "], ["\t", "\t\t"]))  # the patch's context is one level short
    assert isinstance(mapping, Reindent) and mapping.width == 4 and mapping.drift == 4 and mapping.drifts
    assert mapping.line("        x", shifted=True) == "\t\t\tx"
    assert mapping.line("        x", shifted=False) == "\t\tx"


def test_an_inconsistent_offset_is_still_a_mismatch() -> None:
    assert infer(_pairs(["    ", "    "], ["    ", "        "])) == (1, "    ", "        ")
    # Tabs in both: not a tabs-against-spaces slip, however the widths are read.
    assert not isinstance(infer(_pairs(["\t", "\t  "], ["\t\t", "\t"])), Reindent)
    # No single width explains the columns.
    assert not isinstance(infer(_pairs(["  ", "    ", "      "], ["\t", "\t\t\t", "\t\t"])), Reindent)


@given(
    depths=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    width=st.sampled_from([2, 4, 8]),
    file_tabs=st.booleans(),
)
def test_a_whole_patch_in_the_other_style_writes_the_files_own_indentation(
    depths: list[int], width: int, file_tabs: bool
) -> None:
    if not any(depths):
        depths = [*depths, 1]
    tab, spaces = "\t", " " * width
    file_unit, patch_unit = (tab, spaces) if file_tabs else (spaces, tab)
    lines = [f"{file_unit * d}line{i}" for i, d in enumerate(depths)]
    context = [f"{patch_unit * d}line{i}" for i, d in enumerate(depths)]
    added = f"{patch_unit * depths[-1]}added"
    ops = [*((" ", c) for c in context), ("+", added)]
    chunk = Chunk(None, context, [*context, added], ops=ops)
    out = apply_chunks("\n".join(lines) + "\n", [chunk], "f")
    assert out == "\n".join([*lines, f"{file_unit * depths[-1]}added"]) + "\n"


def test_readings_offer_the_other_reading_only_for_chunks_whose_context_drifted() -> None:
    text = "def f():\n    a = 1\n    b = 2\n\ndef g():\n    c = 3\n"
    drifted = Chunk(None, ["a = 1"], ["a = 1", "    z = 0"], ops=[(" ", "a = 1"), ("+", "    z = 0")])
    exact = Chunk(None, ["    c = 3"], ["    c = 4"], ops=[("-", "    c = 3"), ("+", "    c = 4")])
    planned = readings(text, [drifted, exact], "f.py")
    assert planned.alternatives() == [frozenset({0})]
    assert planned.text() == "def f():\n    a = 1\n        z = 0\n    b = 2\n\ndef g():\n    c = 4\n"
    assert planned.text(frozenset({0})) == "def f():\n    a = 1\n    z = 0\n    b = 2\n\ndef g():\n    c = 4\n"


def test_many_drifted_chunks_offer_few_readings() -> None:
    text = "".join(f"def f{i}():\n    a{i} = 1\n" for i in range(6))
    chunks = [
        Chunk(None, [f"a{i} = 1"], [f"a{i} = 1", "    z"], ops=[(" ", f"a{i} = 1"), ("+", "    z")]) for i in range(6)
    ]
    assert readings(text, chunks, "f.py").alternatives() == [frozenset(range(6))]
    assert len(readings(text, chunks[:3], "f.py").alternatives()) == 7
