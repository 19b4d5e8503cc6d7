"""Cheap syntax checks of a file's text by its name: Python, JSON, TOML and YAML, with the line that breaks.

Trust model: the text is hostile (a model's patch, a repository's file). Nothing is executed: Python is only
compiled, YAML only parsed (no tags constructed), and a text too large or too deeply nested to check is
reported as unchecked, never as broken, so a checker's limit never blocks a write.

Tree-sitter was weighed for the other languages and left out for now: ``tree-sitter-language-pack`` 1.x fetches
its grammars from the network at run time (toolrig runs offline), and the per-language wheels (the core 2 MB
installed, 0.3-0.6 MB per grammar) would be a new native dependency for every install.
"""

from __future__ import annotations

import json
import re
import threading
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass

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
}
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
        broken = _CHECKS[language](text)
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
