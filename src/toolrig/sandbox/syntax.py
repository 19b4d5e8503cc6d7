"""Cheap syntax checks of a file's text by its name, with the line that breaks.

Python, JSON, TOML and YAML by their reference parsers; JavaScript, TypeScript, Go, Rust and Java by tree-sitter
grammars when the ``syntax`` extra is installed (per-language wheels, 7.7 MB with the core:
``tree-sitter-language-pack`` 1.x fetches its grammars from the network at run time, which toolrig never does).

Trust model: the text is hostile (a model's patch, a repository's file). Nothing is executed: Python is only
compiled, YAML only parsed (no tags constructed). A text too large, too deeply nested or too slow to check (a
tree-sitter parse of garbage takes seconds) is reported as unchecked, never as broken, so a checker's limit
never blocks a write.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import threading
import time
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

# Larger files are not checked, so that a write is never slowed by a second of parsing: compiling 256 KB of
# Python took 60-270 ms here (idle to loaded), 1 MB of YAML ~0.5 s.
MAX_CHECKED_CHARS = 300_000
_LANGUAGES = {
    ".py": "Python",
    ".pyi": "Python",
    ".pyw": "Python",
    ".json": "JSON",
    ".toml": "TOML",
    ".yaml": "YAML",
    ".yml": "YAML",
    ".js": "JavaScript",
    ".mjs": "JavaScript",
    ".cjs": "JavaScript",
    ".jsx": "JavaScript",
    ".ts": "TypeScript",
    ".mts": "TypeScript",
    ".cts": "TypeScript",
    ".tsx": "TSX",
    ".go": "Go",
    ".rs": "Rust",
    ".java": "Java",
}
# The tree-sitter grammar of each language: its module (one wheel each) and the function that returns it.
GRAMMARS = {
    "JavaScript": ("tree_sitter_javascript", "language"),
    "TypeScript": ("tree_sitter_typescript", "language_typescript"),
    "TSX": ("tree_sitter_typescript", "language_tsx"),
    "Go": ("tree_sitter_go", "language"),
    "Rust": ("tree_sitter_rust", "language"),
    "Java": ("tree_sitter_java", "language"),
}
TREE_SITTER_SECONDS = 0.5  # a parse still reading its input after this stops (tree-sitter has no timeout)
_TOML_WHERE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
# The warnings filter is process-wide state: the Python check changes it for the length of one compile, one
# thread at a time, so that a compile's SyntaxWarning (an invalid escape) is neither printed nor, under
# ``-W error``, turned into a SyntaxError that would call a valid file broken.
_WARNINGS_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Broken:
    """Why a text does not parse: the 1-based line (and column when known) and the parser's message."""

    language: str
    line: int
    message: str
    column: int | None = None

    def describe(self) -> str:
        where = f"line {self.line}" + (f", column {self.column}" if self.column else "")
        return f"{where}: {self.message}"


class Unchecked(Exception):
    """The text could not be checked (too large, nested too deeply for the parser): neither good nor broken."""


def language_of(name: str) -> str | None:
    """The language whose syntax is checked for a file of this name, or None when none is."""
    dot = name.rfind(".")
    return _LANGUAGES.get(name[dot:].lower()) if dot > name.rfind("/") else None


def problem(language: str, text: str) -> Broken | None:
    """Why ``text`` does not parse as ``language``, or None when it does; ``Unchecked`` when it cannot tell."""
    if len(text) > MAX_CHECKED_CHARS:
        raise Unchecked(f"larger than {MAX_CHECKED_CHARS} characters")
    try:
        broken = _tree_sitter(language, text) if language in GRAMMARS else _CHECKS[language](text)
    except (RecursionError, MemoryError) as err:
        raise Unchecked(f"the {language} parser gave up: {type(err).__name__}") from None
    last = text.count("\n") + (0 if text.endswith("\n") else 1)
    if broken is not None and broken.line > last:  # found at the end of the text: name its last line
        return Broken(broken.language, max(1, last), broken.message)
    return broken


def _python(text: str) -> Broken | None:
    with _WARNINGS_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<patched>", "exec", dont_inherit=True)
        except SyntaxError as err:
            message = f"{type(err).__name__}: {err.msg}"
            return Broken("Python", max(1, err.lineno or 1), message, err.offset or None)
        except ValueError as err:  # Python 3.11: "source code string cannot contain null bytes"
            return Broken("Python", _line_of(text, "\0"), f"SyntaxError: {err}")
    return None


def _json(text: str) -> Broken | None:
    try:
        json.loads(text)
    except json.JSONDecodeError as err:
        return Broken("JSON", err.lineno, err.msg, err.colno)
    return None


def _toml(text: str) -> Broken | None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        message = str(err)
        where = _TOML_WHERE.search(message)
        if where is None:
            return Broken("TOML", max(1, text.count("\n")), message)
        return Broken("TOML", int(where.group(1)), message[: where.start()], int(where.group(2)))
    return None


def _yaml(text: str) -> Broken | None:
    # The event stream is the syntax (composing the nodes costs four times as much and adds only alias checks).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for _ in yaml.parse(text, Loader=loader):
            pass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        message = " ".join(part for part in (err.context, err.problem) if part) or "invalid YAML"
        return Broken("YAML", mark.line + 1 if mark else 1, message, mark.column + 1 if mark else None)
    except yaml.YAMLError as err:
        return Broken("YAML", 1, str(err).splitlines()[0] if str(err) else "invalid YAML")
    return None


@functools.cache
def _grammar(language: str) -> Any:
    """The tree-sitter ``Language`` (None when its wheel is not installed); loaded once, on first use."""
    module_name, function = GRAMMARS[language]
    try:
        tree_sitter = importlib.import_module("tree_sitter")
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return tree_sitter.Language(getattr(module, function)())


def _tree_sitter(language: str, text: str) -> Broken | None:
    seconds = TREE_SITTER_SECONDS
    grammar = _grammar(language)
    if grammar is None:
        raise Unchecked(f"no {language} grammar: install toolrig[syntax]")
    parser = importlib.import_module("tree_sitter").Parser(grammar)  # one per check: never shared by threads
    data = text.encode("utf-8", "surrogatepass")
    deadline = time.monotonic() + seconds
    stopped = False

    def read(offset: int, _point: object) -> bytes:
        nonlocal stopped
        if time.monotonic() > deadline:  # the parser reads as it goes: an empty read ends it soon after
            stopped = True
            return b""
        return data[offset : offset + 4096]

    tree = parser.parse(read)
    if stopped or tree is None:
        raise Unchecked(f"the {language} parse took longer than {seconds} s")
    if not tree.root_node.has_error:
        return None
    node = _first_error(tree.root_node)
    row, byte_column = node.start_point
    line = data.split(b"\n", row + 1)[row] if row < data.count(b"\n") + 1 else b""
    column = len(line[:byte_column].decode("utf-8", "replace")) + 1
    if node.is_missing:
        return Broken(language, row + 1, f"missing {node.type!r}", column)
    found = data[node.start_byte : min(node.end_byte, node.start_byte + 40)].decode("utf-8", "replace")
    return Broken(language, row + 1, f"unexpected {found!r}" if found else "syntax error", column)


def _first_error(node: Any) -> Any:
    """The first ERROR or MISSING node below ``node`` in text order, found down the children that contain one."""
    while not (node.is_error or node.is_missing):
        child = next((c for c in node.children if c.has_error or c.is_missing), None)
        if child is None:
            break
        node = child
    return node


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


_CHECKS: dict[str, Callable[[str], Broken | None]] = {
    "Python": _python,
    "JSON": _json,
    "TOML": _toml,
    "YAML": _yaml,
}


def window(text: str, line: int, around: int = 3, width: int = 160) -> str:
    """The numbered lines around ``line`` (1-based), each cut at ``width`` characters, for an error message."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first, last = max(1, line - around), min(len(lines), line + around)
    size = len(str(last))
    shown = []
    for number in range(first, last + 1):
        body = lines[number - 1]
        body = body if len(body) <= width else body[:width] + "…"
        shown.append(f"{'>' if number == line else ' '}{number:>{size}}: {body}")
    return "\n".join(shown)
