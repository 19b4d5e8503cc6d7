"""Which ripgrep flags a model may pass, and how they are rewritten into argv we trust.

Trust model: flags are hostile text. Only allowlisted options pass, always as ``--long=value`` so no value
can be read as another option; options that run programs (``--pre``, ``--hostname-bin``, ``-z``) or read
outside the workspace (``--ignore-file`` elsewhere, ``--follow`` into an outside link) are refused.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from toolrig.errors import ErrorType, ToolError

SWITCHES = {
    "-i": "--ignore-case", "--ignore-case": "--ignore-case", "-s": "--case-sensitive",
    "--case-sensitive": "--case-sensitive", "-S": "--smart-case", "--smart-case": "--smart-case",
    "-w": "--word-regexp", "--word-regexp": "--word-regexp", "-x": "--line-regexp",
    "--line-regexp": "--line-regexp", "-F": "--fixed-strings", "--fixed-strings": "--fixed-strings",
    "-v": "--invert-match", "--invert-match": "--invert-match", "-U": "--multiline", "--multiline": "--multiline",
    "--multiline-dotall": "--multiline-dotall", "--hidden": "--hidden", "-.": "--hidden",
    "--no-ignore": "--no-ignore", "--no-ignore-vcs": "--no-ignore-vcs", "-a": "--text", "--text": "--text",
    "--crlf": "--crlf", "--no-unicode": "--no-unicode", "-L": "--follow", "--follow": "--follow",
    "--trim": "--trim", "--no-ignore-parent": "--no-ignore-parent",
}  # fmt: skip
VALUED = {
    "-t": "--type", "--type": "--type", "-T": "--type-not", "--type-not": "--type-not", "-g": "--glob",
    "--glob": "--glob", "--iglob": "--iglob", "-A": "--after-context", "--after-context": "--after-context",
    "-B": "--before-context", "--before-context": "--before-context", "-C": "--context", "--context": "--context",
    "-m": "--max-count", "--max-count": "--max-count", "-d": "--max-depth", "--max-depth": "--max-depth",
    "--max-filesize": "--max-filesize", "-E": "--encoding",
    "--encoding": "--encoding", "--ignore-file": "--ignore-file", "--sort": "--sort", "--sortr": "--sortr",
}  # fmt: skip
NUMERIC = {"--after-context", "--before-context", "--context", "--max-count", "--max-depth"}
# Not allowed either, though they run nothing: -e/--regexp and -f/--file would turn the positional pattern
# after "--" into a path to search, and --type-add/--pre-glob change what ripgrep reads.
REFUSED = {
    "--pre": "it runs a program on every file",
    "--pre-glob": "it chooses files for --pre, which runs programs",
    "--hostname-bin": "it runs a program",
    "-z": "it runs decompression programs",
    "--search-zip": "it runs decompression programs",
}


# Flags models add from habit (grep, rg on a terminal) that change nothing code_search returns: accepted and
# ignored with a note, never an error. The valued ones take their value along (``--color never``).
IGNORED = {
    "-n": "line numbers are always shown", "--line-number": "line numbers are always shown",
    "-N": "line numbers are always shown", "--no-line-number": "line numbers are always shown",
    "-H": "paths are always shown", "--with-filename": "paths are always shown",
    "--no-heading": "results are always one line each", "--heading": "results are always one line each",
    "-r": "the search is always recursive", "-R": "the search is always recursive",
    "--recursive": "the search is always recursive", "--column": "results show lines, not columns",
    "-p": "the output is never coloured", "--pretty": "the output is never coloured",
    "--no-messages": "errors are reported by the tool", "-q": "results are always returned",
}  # fmt: skip
IGNORED_VALUED = {"--color": "the output is never coloured", "--colour": "the output is never coloured"}


def split_flags(flags: str | Sequence[str]) -> list[str]:
    """Flags as argv items: a string is split like a shell does, list items stay whole.

    A list item that holds a short or long option followed by its value (``"-g '*.ts'"``) is split too:
    ripgrep would otherwise receive the quotes and the space as part of the glob and silently match nothing.
    """
    try:
        if isinstance(flags, str):
            return shlex.split(flags)
        out: list[str] = []
        for item in flags:
            head = item.strip()
            if head.startswith("-") and any(ch.isspace() for ch in head) and "=" not in head.split(None, 1)[0]:
                out += shlex.split(head)
            else:
                out.append(item)
        return out
    except ValueError as err:  # an unbalanced quote
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The flags cannot be split like a shell command line: {err}.",
            "Quote each value once, e.g. \"-g '*.test.ts' -i\", or pass a list such as ['-g', '*.test.ts'].",
        ) from None


@dataclass
class Flags:
    """Allowlisted flags as trusted argv, plus what the caller must still check or apply."""

    argv: list[str] = field(default_factory=list)
    globs: list[str] = field(default_factory=list)
    follow: bool = False
    hidden: bool = False
    ignore_files: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    def note(self) -> str:
        """What was ignored and why, for the result's message; empty when nothing was."""
        if not self.ignored:
            return ""
        return f"Ignored {', '.join(self.ignored)}."


def _refuse(flag: str, why: str) -> ToolError:
    return ToolError(
        ErrorType.DENIED,
        f"The flag '{flag}' is not allowed: {why}.",
        "Search without it; code_search only reads files inside the workspace and runs nothing else.",
    )


def _unknown(flag: str) -> ToolError:
    allowed = sorted(k for k in (*SWITCHES, *VALUED) if k.startswith("--"))
    return ToolError(
        ErrorType.INVALID_INPUT,
        f"Unknown or unsupported flag '{flag}'.",
        f"Use the tool's own fields (glob, context, multiline, output_mode) or one of: {', '.join(allowed)}.",
    )


def _expand(items: Sequence[str]) -> list[str]:
    """Split '-iw' into '-i -w' and '-C3' into '-C 3'; long options and values stay whole."""
    out: list[str] = []
    for item in items:
        item = item.strip()
        if item.startswith("--") or not item.startswith("-") or len(item) <= 2:
            out.append(item)
            continue
        letters = item[1:]
        for index, letter in enumerate(letters):
            short = f"-{letter}"
            if short in VALUED:
                out.append(short)
                if letters[index + 1 :]:
                    out.append(letters[index + 1 :].lstrip("="))
                break
            out.append(short)
    return out


def parse_flags(items: str | Sequence[str], rebase_glob: Callable[[str], str]) -> Flags:
    """Turn model-given flags into trusted argv; ``rebase_glob`` maps a glob from the search dir to the root."""
    flags = Flags()
    tokens = _expand(split_flags(items))
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        name, has_value, value = token.partition("=") if token.startswith("--") else (token, False, "")
        for refused, why in REFUSED.items():
            if name == refused or (refused.startswith("--") and name.startswith(refused + "=")):
                raise _refuse(name, why)
        if name.startswith("--pre"):
            raise _refuse(name, REFUSED["--pre"])
        if name in IGNORED and not has_value:
            flags.ignored.append(f"{name} ({IGNORED[name]})")
            continue
        if name in IGNORED_VALUED:
            if not has_value and index < len(tokens) and not tokens[index].startswith("-"):
                index += 1  # its value: --color never
            flags.ignored.append(f"{name} ({IGNORED_VALUED[name]})")
            continue
        if name in SWITCHES and not has_value:
            long = SWITCHES[name]
            flags.follow |= long == "--follow"
            flags.hidden |= long == "--hidden"
            if long != "--follow":
                flags.argv.append(long)
            continue
        if name not in VALUED:
            raise _unknown(token)
        long = VALUED[name]
        if not has_value:
            if index >= len(tokens):
                raise ToolError(ErrorType.INVALID_INPUT, f"The flag '{name}' needs a value.")
            value = tokens[index]
            index += 1
        if long in NUMERIC and not value.strip().isdigit():
            raise ToolError(ErrorType.INVALID_INPUT, f"The flag '{name}' needs a whole number, not '{value}'.")
        if long in ("--glob", "--iglob"):
            flags.globs.append(f"{long}={rebase_glob(value)}")
        elif long == "--ignore-file":
            flags.ignore_files.append(value)
        else:
            flags.argv.append(f"{long}={value.strip() if long in NUMERIC else value}")
    return flags


def rebase_glob(glob: str, prefix: str) -> str:
    """Make a glob written relative to ``prefix`` (a directory under the root) relative to the root."""
    negated = glob.startswith("!")
    body = glob[1:] if negated else glob
    if prefix in ("", ".") or "/" not in body.rstrip("/") or body.startswith("**/"):
        return glob
    body = body.lstrip("/")
    return ("!" if negated else "") + f"/{prefix.strip('/')}/{body}"
