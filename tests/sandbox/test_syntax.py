from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.sandbox import syntax
from toolrig.sandbox.syntax import MAX_CHECKED_CHARS, Unchecked, language_of, problem, window


@pytest.mark.parametrize(
    ("name", "language"),
    [
        ("a.py", "Python"),
        ("pkg/stub.PYI", "Python"),
        ("a.json", "JSON"),
        ("pyproject.toml", "TOML"),
        ("ci.yml", "YAML"),
        ("ci.yaml", "YAML"),
        ("web/app.mjs", "JavaScript"),
        ("ui/View.tsx", "TSX"),
        ("lib.rs", "Rust"),
        ("Makefile", None),
        ("main.c", None),
        ("a.py.txt", None),
        ("dir.py/file", None),
        (".json", "JSON"),
    ],
)
def test_the_language_is_read_from_the_file_name(name: str, language: str | None) -> None:
    assert language_of(name) == language


@pytest.mark.parametrize(
    ("language", "text", "line", "words"),
    [
        ("Python", "def f():\n    a = 1\n        b = 2\n", 3, "IndentationError: unexpected indent"),
        ("Python", "def f():\n\tif x:\n        a\n\tb\n", 3, "TabError"),
        ("Python", "x = (\n", 1, "SyntaxError"),
        ("Python", "def f():\n    pass\nreturn 1\n", 3, "'return' outside function"),
        ("JSON", '{\n  "a": 1\n  "b": 2\n}\n', 3, "Expecting ',' delimiter"),
        ("TOML", 'a = 1\nb = "x\n', 2, ""),
        ("TOML", "[t]\na = 1\n[t]\n", 3, "Cannot declare"),
        ("YAML", "a: 1\nb: [1, 2\nc: 3\n", 3, ""),
        ("YAML", "a:\n  - 1\n - 2\n", 3, ""),
        ("JavaScript", "function f() {\n  return (1;\n}\n", 2, "missing ')'"),
        ("JavaScript", "const a = 1;\nx = = 2;\n", 2, "unexpected '='"),
        ("TypeScript", "function f(a: string): void {\n  let b: = a;\n}\n", 2, ""),
        ("TSX", "const a = <div>{x</div>;\n", 1, ""),
        ("Go", "package main\n\nfunc main() {\n\tx := 1\n", 4, "missing '}'"),
        ("Rust", "fn main() {\n    let x = 1\n}\n", 2, "missing ';'"),
        ("Java", "class A {\n  void f() { int x = 1 }\n}\n", 2, "missing ';'"),
    ],
)
def test_a_text_that_does_not_parse_is_reported_with_its_line(language: str, text: str, line: int, words: str) -> None:
    broken = problem(language, text)
    assert broken is not None and broken.language == language
    assert broken.line == line, broken
    assert words in broken.message
    assert broken.describe().startswith(f"line {line}")


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("Python", 'import re\nPATTERN = re.compile("\\d+")\nx = 1 is 1\n'),  # warnings, not errors (even -W error)
        ("JSON", '{"a": [1, 2, {"b": null}]}'),
        ("TOML", '[tool.x]\nname = "y"\nlist = [1, 2]\n'),
        ("YAML", "a: !Ref Thing\n---\nb: *undefined_alias_is_not_syntax\n"),
        ("YAML", ""),
        ("JavaScript", "const s = `é ${x}`;\nexport default function f({a, ...b}) { return <b>{a}</b>; }\n"),
        ("TypeScript", "export type T<K extends string> = { [P in K]?: number };\n"),
        ("Go", "package main\n\nfunc Map[T any](xs []T) []T { return xs }\n"),
        ("Rust", 'fn main() { let v: Vec<u8> = vec![1]; println!("{v:?}"); }\n'),
        ("Java", "record P(int x) {}\n"),
        ("TypeScript", "const c = {a: 1} satisfies Record<string, number>;\nfunction f() { using r = open(); }\n"),
        ("Go", "package main\n\nfunc main() { for i := range 10 { _ = i } }\n"),
        ("Rust", "fn f(o: Option<u8>) { let Some(x) = o else { return }; }\n"),
    ],
)
def test_a_text_that_parses_has_no_problem(language: str, text: str) -> None:
    assert problem(language, text) is None


def test_a_column_counts_characters_not_bytes() -> None:
    broken = problem("JavaScript", "const s = 'éé'; x = = 1;\n")
    assert broken is not None and broken.column == 21


def test_a_tree_sitter_parse_that_runs_out_of_time_is_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syntax, "TREE_SITTER_SECONDS", -1.0)  # the first read is already past the deadline
    with pytest.raises(Unchecked, match="took longer"):
        problem("Rust", "fn main() {}\n")


def test_a_language_whose_grammar_is_not_installed_is_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(syntax.GRAMMARS, "Nope", ("toolrig_no_such_grammar", "language"))
    with pytest.raises(Unchecked, match="install toolrig"):
        problem("Nope", "anything")


def test_python_is_compiled_never_run() -> None:
    assert problem("Python", "import os\nos._exit(3)\nraise SystemExit(1)\n") is None


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("JSON", "[" * 100_000 + "]" * 100_000),
        ("TOML", "a = " + "[" * 100_000 + "]" * 100_000),
        ("Python", "x = " + "-" * 200_000 + "1\n"),
        ("YAML", "a: 1\n" + "#" * MAX_CHECKED_CHARS),
    ],
)
def test_a_text_too_deep_or_too_large_to_check_is_unchecked_not_broken(language: str, text: str) -> None:
    with pytest.raises(Unchecked):
        problem(language, text)


_ANY_TEXT = st.text(alphabet=st.sampled_from(list("{}[]:,\"'#-= \t\n\\xa1.!&*?|>")), max_size=60)


@given(language=st.sampled_from(["Python", "JSON", "TOML", "YAML", "JavaScript", "TSX", "Go", "Rust"]), text=_ANY_TEXT)
def test_any_text_gets_an_answer_and_a_line_inside_the_text(language: str, text: str) -> None:
    try:
        broken = problem(language, text)
    except Unchecked:
        return
    if broken is not None:
        assert 1 <= broken.line <= text.count("\n") + 2, (broken, text)


def test_the_window_numbers_the_lines_around_the_broken_one_and_cuts_long_lines() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 21)).replace("line 11", "x" * 500)
    shown = window(text, 10).split("\n")
    assert shown[0] == "  7: line 7" and shown[3] == ">10: line 10" and shown[-1] == " 13: line 13"
    assert shown[4].endswith("…") and len(shown[4]) < 200
    assert window("only\n", 1) == ">1: only"
