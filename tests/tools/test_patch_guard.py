"""apply_patch never reports success on a file it broke (issue 33): the other indentation reading, or nothing."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from tests.support.file_helpers import Caller, write
from toolrig import Rig
from toolrig.profiles import NAMES


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


def parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


# The held-out class: the context lines drifted, the added lines did not.

SOURCE = "class A:\n    def f(self, x):\n        if x:\n            a = 1\n            b = 2\n        return x\n"
INTENDED = SOURCE.replace("a = 1\n", "a = 1\n            c = 3\n")


@pytest.mark.parametrize("drift", [-8, -6, -4, 4, 8])
def test_added_lines_at_the_files_indentation_under_drifted_context_land_where_meant(
    call: Caller, workspace: Path, drift: int
) -> None:
    write(workspace, {"a.py": SOURCE})

    def context(line: str) -> str:  # the model re-indented its copy of the file's lines, and only those
        return " " + (" " * drift + line if drift > 0 else line[-drift:])

    body = [context("        if x:"), context("            a = 1"), "+            c = 3", context("            b = 2")]
    out = call.ok("apply_patch", patch=patch("*** Update File: a.py", "@@", *body))
    assert (workspace / "a.py").read_text() == INTENDED
    assert any("kept at the indentation the patch wrote them with" in note for note in out["notes"]), out["notes"]


def test_added_lines_that_carry_the_drift_are_still_shifted_as_before(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.py": SOURCE})
    body = [" if x:", "     a = 1", "+    c = 3", "     b = 2"]
    out = call.ok("apply_patch", patch=patch("*** Update File: a.py", "@@", *body))
    assert (workspace / "a.py").read_text() == INTENDED and out["notes"] == []


def test_when_neither_reading_parses_nothing_is_written_and_the_line_is_named(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.py": SOURCE})
    body = [" if x:", "     a = 1", "+    if c:", "     b = 2"]  # an 'if' without a body, in either reading
    result = call("apply_patch", patch=patch("*** Update File: a.py", "@@", *body))
    assert result.is_error and result.error_type == "invalid_input"
    message = result.message or ""
    assert message.startswith("Failed to update a.py: the patch would leave it unable to parse as Python")
    assert "with the added lines shifted by the context lines' indentation offset and without it" in message
    assert "Python error at line 6" in message and "IndentationError" in message
    assert ">6:             b = 2" in message  # the lines around it, as the patch would leave them
    assert "Nothing was changed" in (result.next_action_hint or "")
    assert (workspace / "a.py").read_text() == SOURCE


# The property: a Python file, a context drift, an added block; the result parses or nothing is written.


@st.composite
def drifted_inserts(draw: st.DrawFn) -> tuple[str, str, str, bool]:
    """(file, patch, intended result, whether the intended result must be what is written)."""
    depths = [1]
    for _ in range(draw(st.integers(2, 9))):
        depths.append(draw(st.integers(1, depths[-1] + 1)))
    depths[-1] = min(depths[-1], depths[-2])  # the last line is a statement, not an opener
    opener = [i + 1 < len(depths) and depths[i + 1] > d for i, d in enumerate(depths)]
    body = [("    " * d) + (f"if x{i}:" if opener[i] else f"v{i} = {i}") for i, d in enumerate(depths)]
    lines = ["def f(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9):", *body, "", "def g():", "    return 0"]
    k = draw(st.integers(0, len(body) - 1))
    lo, hi = max(0, k - draw(st.integers(0, 2))), min(len(body), k + 1 + draw(st.integers(0, 2)))
    at = depths[k] + 1 if opener[k] else depths[k]
    block = draw(st.sampled_from([["w = 0"], ["if y:", "    w = 1", "w = 2"], ["if y:"]]))
    drift = draw(st.integers(-min(depths[lo:hi]), 2).filter(bool))
    carried = draw(st.booleans())  # the added lines carry the drift too (a consistent model)

    def written(line: str, depth: int) -> str:
        return "    " * (depth + drift) + line.lstrip()

    added = [("    " * (at + (drift if carried else 0))) + line for line in block]
    ops = [" " + written(body[i], depths[i]) for i in range(lo, k + 1)] + ["+" + a for a in added]
    ops += [" " + written(body[i], depths[i]) for i in range(k + 1, hi)]
    intended = [*lines[: k + 2], *(("    " * at) + line for line in block), *lines[k + 2 :]]
    exact = block != ["if y:"] and (carried or drift < 0)
    text = "\n".join(lines) + "\n"
    return text, patch("*** Update File: f.py", "@@", *ops), "\n".join(intended) + "\n", exact


@pytest.fixture(scope="module")
def shared_caller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caller]:
    root = tmp_path_factory.mktemp("guard")
    caller = Caller(root)
    yield caller
    caller.rig.close()


@settings(max_examples=60, deadline=None)
@given(case=drifted_inserts())
def test_a_drifted_patch_leaves_a_python_file_that_parses_or_writes_nothing(
    shared_caller: Caller, case: tuple[str, str, str, bool]
) -> None:
    text, text_patch, intended, exact = case
    target = shared_caller.root / "f.py"
    target.write_text(text, encoding="utf-8")
    result = shared_caller("apply_patch", patch=text_patch)
    after = target.read_text(encoding="utf-8")
    event("refused" if result.is_error else "intended" if after == intended else "written, parses")
    if result.is_error:
        assert after == text, result.message
        assert "f.py" in (result.message or "") and "line" in (result.message or "")
        assert not exact, result.message
        return
    assert parses(after), after
    if exact:
        assert after == intended


# Every cheap-to-check language: a break the patch makes is refused with the line named; one it found is not.

BREAKS = {
    "conf.json": ('{\n  "a": 1,\n  "b": 2\n}\n', [' "a": 1,', '+  "z": 3', ' "b": 2'], 4, "Expecting ',' delimiter"),
    "pyproject.toml": (
        '[project]\nname = "x"\nversion = "1"\n',
        [' name = "x"', '-version = "1"', "+version = 1.0.0"],
        3,
        "",
    ),
    "ci.yaml": ("jobs:\n  test:\n    runs-on: x\n", ["   test:", "-    runs-on: x", "+    runs-on: [x"], 3, ""),
    "m.py": ("def f():\n    return 1\n", [" def f():", "-    return 1", "+    return (1"], 2, "SyntaxError"),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_patch_that_breaks_a_file_that_parsed_is_refused_naming_the_file_and_line(
    call: Caller, workspace: Path, name: str
) -> None:
    text, body, line, words = BREAKS[name]
    write(workspace, {name: text})
    message = call.error("apply_patch", "invalid_input", patch=patch(f"*** Update File: {name}", "@@", *body))
    assert message.startswith(f"Failed to update {name}: the patch would leave it unable to parse")
    assert f"error at line {line}" in message and words in message
    assert f">{line}:" in message  # the numbered lines around the break, as the patch would leave them
    assert (workspace / name).read_text() == text


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_file_that_did_not_parse_before_is_not_blocked(call: Caller, workspace: Path, name: str) -> None:
    text, body, _, _ = BREAKS[name]
    broken_before = text + "((( [[[ {{{ ,,,\n"
    write(workspace, {name: broken_before})
    call.ok("apply_patch", patch=patch(f"*** Update File: {name}", "@@", *body))
    assert (workspace / name).read_text() != broken_before


def test_a_language_toolrig_does_not_check_is_written_as_patched(call: Caller, workspace: Path) -> None:
    write(workspace, {"app.c": "int f() {\n  return 1;\n}\n"})
    call.ok("apply_patch", patch=patch("*** Update File: app.c", "@@", "-  return 1;", "+  return (1;"))
    assert (workspace / "app.c").read_text() == "int f() {\n  return (1;\n}\n"


@pytest.mark.parametrize(
    ("name", "text", "body", "line"),
    [
        ("app.ts", "function f(a: number) {\n  return a;\n}\n", ["-  return a;", "+  return (a;"], 2),
        ("main.go", "package main\n\nfunc main() {\n}\n", [" func main() {", "+\tif true {"], 5),
        ("lib.rs", "fn f() -> u8 {\n    1\n}\n", ["-    1", "+    let x = 1"], 2),
    ],
)
def test_tree_sitter_languages_are_guarded_too(
    call: Caller, workspace: Path, name: str, text: str, body: list[str], line: int
) -> None:
    write(workspace, {name: text})
    message = call.error("apply_patch", "invalid_input", patch=patch(f"*** Update File: {name}", "@@", *body))
    assert message.startswith(f"Failed to update {name}:") and f"error at line {line}" in message
    assert (workspace / name).read_text() == text


def test_an_add_file_over_a_file_that_parsed_may_not_break_it_but_a_new_file_may_be_anything(
    call: Caller, workspace: Path
) -> None:
    write(workspace, {"a.json": '{"a": 1}\n'})
    message = call.error("apply_patch", "invalid_input", patch=patch("*** Add File: a.json", '+{"a": 1,}'))
    assert "a.json" in message and "line 1" in message
    assert (workspace / "a.json").read_text() == '{"a": 1}\n'
    call.ok("apply_patch", patch=patch("*** Add File: draft.json", '+{"a": '))
    assert (workspace / "draft.json").read_text() == '{"a": \n'


def test_when_the_second_file_would_break_the_first_is_not_written_either(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.py": SOURCE, "b.yaml": "a: 1\nb: 2\n", "old.txt": "x\n"})
    result = call(
        "apply_patch",
        patch=patch(
            "*** Update File: a.py",
            "@@",
            " if x:",
            "     a = 1",
            "+            c = 3",
            "     b = 2",
            "*** Add File: new.txt",
            "+new",
            "*** Delete File: old.txt",
            "*** Update File: b.yaml",
            "@@",
            " a: 1",
            "-b: 2",
            "+b: [2",
        ),
    )
    assert result.is_error and result.error_type == "invalid_input"
    assert (result.message or "").startswith("Failed to update b.yaml:") and "line 2:" in (result.message or "")
    assert (workspace / "a.py").read_text() == SOURCE and (workspace / "old.txt").exists()
    assert not (workspace / "new.txt").exists()


# Tabs against spaces at one tab width is a slip, not a conflict: the file keeps its own style.

TABBED = "def f(x):\n\tif x:\n\t\ta = 1\n\treturn x\n"


@pytest.mark.parametrize("unit", ["    ", "        ", "  "], ids=["width-4", "width-8", "width-2"])
def test_a_patch_in_spaces_on_a_file_in_tabs_is_written_with_tabs(call: Caller, workspace: Path, unit: str) -> None:
    write(workspace, {"t.py": TABBED})
    body = [f" {unit}if x:", f" {unit * 2}a = 1", f"+{unit * 2}b = 2", f"+{unit * 2}if b:", f"+{unit * 3}a = b"]
    out = call.ok("apply_patch", patch=patch("*** Update File: t.py", "@@", *body, f" {unit}return x"))
    assert (
        workspace / "t.py"
    ).read_text() == "def f(x):\n\tif x:\n\t\ta = 1\n\t\tb = 2\n\t\tif b:\n\t\t\ta = b\n\treturn x\n"
    assert any("indented with spaces where the file uses tabs" in note for note in out["notes"])


def test_a_patch_in_tabs_on_a_file_in_spaces_is_written_with_spaces(call: Caller, workspace: Path) -> None:
    write(workspace, {"a.py": SOURCE})
    body = ["\t\tif x:", "\t\t\ta = 1", "+\t\t\tc = 3", "\t\t\tb = 2"]
    call.ok("apply_patch", patch=patch("*** Update File: a.py", "@@", *(f" {b}" if b[0] != "+" else b for b in body)))
    assert (workspace / "a.py").read_text() == INTENDED


def test_tabs_against_spaces_in_a_file_toolrig_does_not_parse_is_matched_too(call: Caller, workspace: Path) -> None:
    write(workspace, {"Makefile": "build:\n\tgo build ./...\n\tgo vet ./...\n"})
    call.ok(
        "apply_patch",
        patch=patch("*** Update File: Makefile", "@@", " build:", "     go build ./...", "+    go test ./..."),
    )
    assert (workspace / "Makefile").read_text() == "build:\n\tgo build ./...\n\tgo test ./...\n\tgo vet ./...\n"


def test_tabs_against_spaces_at_no_single_width_is_still_refused(call: Caller, workspace: Path) -> None:
    write(workspace, {"t.py": TABBED})
    body = ["   if x:", "         a = 1", "+        b = 2"]  # 2 spaces for one tab, 8 for two: no width fits both
    message = call.error("apply_patch", "conflict", patch=patch("*** Update File: t.py", "@@", *body))
    assert "block structure" in message and (workspace / "t.py").read_text() == TABBED


# The same through every face that applies patches.


@pytest.mark.parametrize("profile", NAMES)
def test_every_profile_applies_the_other_reading_and_refuses_a_break(workspace: Path, profile: str) -> None:
    write(workspace, {"a.py": SOURCE, "c.json": '{"a": 1}\n'})
    with Rig(workspace, config={}, profile=profile) as rig:
        drifted = patch("*** Update File: a.py", "@@", " if x:", "     a = 1", "+            c = 3", "     b = 2")
        fixed = rig.call_sync("apply_patch", {"patch": drifted})
        assert not fixed.is_error, fixed.message
        assert (workspace / "a.py").read_text() == INTENDED
        breaking = patch("*** Update File: c.json", "@@", '-{"a": 1}', '+{"a": 1,}')
        refused = rig.call_sync("apply_patch", {"patch": breaking})
        assert refused.is_error and refused.error_type == "invalid_input"
        assert "c.json" in (refused.message or "") and "line 1" in (refused.message or "")
        assert (workspace / "c.json").read_text() == '{"a": 1}\n'


def test_added_lines_in_spaces_under_context_copied_with_tabs_are_refused_in_python(
    call: Caller, workspace: Path
) -> None:
    # The context matched exactly, so no tab width can be read from it: Python's own TabError names the line.
    write(workspace, {"t.py": TABBED})
    body = [" \tif x:", " \t\ta = 1", "+        b = 2"]
    message = call.error("apply_patch", "invalid_input", patch=patch("*** Update File: t.py", "@@", *body))
    assert "TabError" in message and "error at line 4" in message
    assert (workspace / "t.py").read_text() == TABBED


def test_a_file_too_deep_to_check_before_is_not_blocked(call: Caller, workspace: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000  # the JSON parser gives up (RecursionError): unknown, not "parsed"
    write(workspace, {"deep.json": deep + "\n"})
    call.ok("apply_patch", patch=patch("*** Update File: deep.json", "@@", f"-{deep}", '+{"a": 1,}'))
    assert (workspace / "deep.json").read_text() == '{"a": 1,}\n'
