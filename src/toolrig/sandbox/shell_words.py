"""Reading one shell word: what bash would expand in it, and the text a program receives.

Part of ``shell_syntax`` (its trust model applies): these only look at text, never at the parse tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class _Word:
    text: str  # the word as the program receives it (quotes removed)
    raw: str  # the word as written
    expands: str = ""  # what the shell would expand in it at run time ("" for a literal word)


def _literal(text: str) -> _Word:
    return _Word(text, text)


_EVALUATING = (
    ("${!", "an indirect expansion (${!name}), which evaluates a subscript in the variable's value as code"),
    ("((", "arithmetic evaluation, which runs a command substitution in a variable's subscript"),
    ("$[", "arithmetic evaluation, which runs a command substitution in a variable's subscript"),
)


_TRANSFORM = re.compile(r"@[PEAKak]\}")


def _evaluating(source: str) -> str:
    """Why an expansion in ``source`` can turn a variable's value into code ("" when none can).

    ``${x@P}`` expands the value as a prompt, command substitutions included; ``${!x}`` and arithmetic (``((x))``,
    ``$[x]``, ``let``) evaluate a subscript in the value (``a[$(cmd)]``), running it; ``${x@E}`` decodes escapes
    bash later reads. The value comes from anywhere (``read``, a loop, the environment), so no reading of the
    command line can see what runs: under a deny list such a command is opaque. Single-quoted text is literal.
    """
    quote = ""
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1
        elif c == "'" and not quote:
            quote = "'"
        elif c == '"':
            quote = "" if quote == '"' else '"'
        else:
            for opener, why in _EVALUATING:
                if source.startswith(opener, i) and not (opener == "((" and quote):
                    return why
            if source.startswith("${", i) and _TRANSFORM.search(source, i, source.find("}", i) + 1 or n):
                return "a ${name@P} or ${name@E} transformation, which expands the value as a prompt or escapes"
        i += 1
    return ""


def _expansion(raw: str) -> str:
    """What bash would expand in an unquoted-aware reading of ``raw``: "" when the word is taken literally."""
    quote = ""
    brace_depth = 0
    brace_list = False
    glob_open = False
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if quote == "'":
            if c == "'":
                quote = ""
        elif c == "\\":
            i += 1  # the next character is literal (inside double quotes too, for our purpose)
        elif c == "`":
            return "command substitution"
        elif c == "$" and i + 1 < n:
            following = raw[i + 1]
            if following in "'\"" and not quote:
                return "ANSI-C or locale quoting ($'...')"
            if following.isalnum() or following in "_{(@*#?$!-":
                return "taken from a variable or substitution"
        elif quote == '"':
            if c == '"':
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "*?":
            return "a glob"
        elif c == "[":
            glob_open = True
        elif c == "]" and glob_open:
            return "a glob"
        elif c in "@+!" and i + 1 < n and raw[i + 1] == "(":
            return "an extended glob"
        elif c == "{":
            brace_depth += 1
        elif c == "}" and brace_depth:
            brace_depth -= 1
            if brace_list:
                return "brace expansion"
        elif brace_depth and (c == "," or raw.startswith("..", i)):
            brace_list = True
        i += 1
    return ""


def _suffixes(words: list[_Word]) -> list[list[str]]:
    """Every tail of the words: for a command that cannot be unwrapped, where a denied command may start."""
    return [[w.text for w in words[i:]] for i in range(1, len(words))]


def _join_lines(text: str) -> str:
    """Drop backslash-newline outside single quotes, as bash does before it splits words."""
    if "\\\n" not in text:
        return text
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\" and text.startswith("\\\n", i):
            i += 2
            continue
        elif c == "\\":
            out.append(text[i : i + 2])
            i += 2
            continue
        elif c in "'\"" and not quote:
            quote = c
        elif c == quote:
            quote = ""
        out.append(c)
        i += 1
    return "".join(out)


def _texts(forms: list[list[str]]) -> tuple[str, ...]:
    """Each form joined, and again with a path-named program by its base name (``/bin/rm -rf /``)."""
    texts: list[str] = []
    for form in forms:
        if not form:
            continue
        texts.append(" ".join(form))
        if "/" in form[0] and _base(form[0]):
            texts.append(" ".join([_base(form[0]), *form[1:]]))
    return tuple(dict.fromkeys(texts))


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]
