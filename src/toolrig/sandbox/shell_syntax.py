"""What a shell command line would really run, read with a real bash parser (bashlex).

Trust model: the command text is hostile. Every simple command hidden in it (after ``;``, ``&&``, ``||``,
``|``, inside subshells, ``$(...)``, backticks and process substitutions) is found so policy can judge
each one, and anything that is not provably plain is flagged so policy can refuse or ask.

Two readings of each simple command serve two different questions:

- ``text`` answers "does an allow pattern approve this?": assignments and the harmless wrappers
  ``timeout``, ``nice`` and ``env`` are peeled, but never ``sudo`` or ``xargs`` (``git *`` must not approve
  ``sudo git push``).
- ``deny_texts`` answers "could a deny pattern be evaded?": it also lists the command with every known
  wrapper peeled (``sudo``, ``xargs``, ``nohup``, ``exec``, ``command`` ...), so ``rm *`` catches ``sudo rm``.
"""

from __future__ import annotations

import fnmatch
import shlex
from dataclasses import dataclass, field
from typing import Any

# Wrappers peeled for allow-matching: they change how a command runs, not what it is.
_ALLOW_PEEL = frozenset({"timeout", "nice", "env"})
# Wrappers that run their argument as a command; peeled only to look for denied commands inside.
_DENY_PEEL = frozenset(
    {"sudo", "doas", "xargs", "nohup", "exec", "command", "builtin", "time", "stdbuf", "ionice", "setsid",
     "timeout", "nice", "env", "chrt", "taskset", "unbuffer", "flock", "watch", "strace", "busybox"}
)  # fmt: skip
_SAFE_REDIRECT_TARGETS = frozenset({"/dev/null"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "busybox"})


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    argv: tuple[str, ...]  # the words after leading assignments and allow-peeled wrappers, quotes removed
    prefixes: tuple[str, ...] = ()  # what was peeled (assignments, timeout 10, nice -n 5, env X=1)
    deny_texts: tuple[str, ...] = ()  # the command itself plus every wrapper-peeled form of it

    @property
    def text(self) -> str:
        return " ".join(self.argv)

    @property
    def name(self) -> str:
        return self.argv[0] if self.argv else ""


@dataclass(frozen=True, slots=True)
class ShellAnalysis:
    source: str
    parsed: bool
    commands: tuple[SimpleCommand, ...] = ()
    reasons: tuple[str, ...] = ()  # why it is not plain (or why it could not be parsed)
    opaque: tuple[str, ...] = ()  # the reasons that mean something may run that ``commands`` does not show

    @property
    def readable(self) -> bool:
        """True when every command that could run is in ``commands`` (deny patterns can judge it)."""
        return self.parsed and not self.opaque

    @property
    def plain(self) -> bool:
        """True only for simple commands joined by ; && || | with no substitution, expansion or file writes."""
        return self.parsed and not self.reasons


@dataclass
class _Walk:
    source: str
    commands: list[SimpleCommand] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    depth: int = 0

    def flag(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)

    def hide(self, reason: str) -> None:
        """Flag a construct that can run something this reading cannot see."""
        self.flag(reason)
        if reason not in self.opaque:
            self.opaque.append(reason)


def analyse(command: str, *, _depth: int = 0) -> ShellAnalysis:
    """Split a command line into its simple commands and say whether it is plain."""
    import bashlex

    if "\x00" in command:
        return ShellAnalysis(command, parsed=False, reasons=("the command contains a NUL byte",))
    if not command.strip():
        return ShellAnalysis(command, parsed=False, reasons=("the command is empty",))
    try:
        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises several unrelated exception types for syntax it cannot read
        return ShellAnalysis(command, parsed=False, reasons=(f"bash syntax not understood: {exc}",))
    walk = _Walk(command, depth=_depth)
    for tree in trees:
        _visit(tree, walk)
    if not walk.commands:
        walk.flag("no command to run")
    return ShellAnalysis(
        command, parsed=True, commands=tuple(walk.commands), reasons=tuple(walk.reasons), opaque=tuple(walk.opaque)
    )


def _visit(node: Any, walk: _Walk) -> None:
    kind = node.kind
    if kind == "command":
        _command(node, walk)
    elif kind in ("list", "pipeline"):
        for part in node.parts:
            if part.kind == "operator" and part.op == "&":
                walk.flag("runs a job in the background (&)")
            elif part.kind == "pipe" and part.pipe == "|&":
                continue
            else:
                _visit(part, walk)
    elif kind == "compound":
        for part in node.list:
            if part.kind in ("if", "for", "while", "until", "case"):
                walk.flag(f"uses a '{part.kind}' statement")
            _visit(part, walk)
        for redirect in getattr(node, "redirects", []) or []:
            _redirect(redirect, walk)
    elif kind in ("if", "for", "while", "until", "case"):
        for part in node.parts:
            if part.kind not in ("reservedword", "word"):
                _visit(part, walk)
            elif part.kind == "word":
                _word_parts(part, walk)
    elif kind == "function":
        walk.flag("defines a shell function")
        _visit(node.body, walk)
    elif kind in ("reservedword", "operator", "pipe"):
        return
    else:
        walk.hide(f"uses shell syntax '{kind}'")


def _word_parts(word: Any, walk: _Walk) -> None:
    for part in getattr(word, "parts", []) or []:
        if part.kind == "commandsubstitution":
            walk.flag("uses command substitution ($(...) or backticks)")
            _visit(part.command, walk)
        elif part.kind == "processsubstitution":
            walk.flag("uses process substitution (<(...) or >(...))")
            _visit(part.command, walk)
        elif part.kind == "parameter":
            continue  # $VAR in an argument: judged by its position in _command
        elif part.kind == "tilde":
            continue
        else:
            walk.hide(f"uses shell syntax '{part.kind}'")


def _redirect(node: Any, walk: _Walk) -> None:
    target = node.output
    if isinstance(target, int):
        return  # 2>&1 and friends: fd duplication
    if node.type in ("<", "<>") and getattr(target, "kind", "") == "word":
        _word_parts(target, walk)
        return  # reading a file is no more than naming it as an argument
    word = getattr(target, "word", None)
    if word in _SAFE_REDIRECT_TARGETS:
        return
    if node.type in ("<<", "<<-", "<<<"):
        walk.flag("uses a here-document")
        return
    walk.flag(f"redirects output to a file ({node.type} {word})")
    if target is not None and getattr(target, "kind", "") == "word":
        _word_parts(target, walk)


def _command(node: Any, walk: _Walk) -> None:
    words: list[Any] = []
    assignments: list[str] = []
    for part in node.parts:
        if part.kind == "assignment":
            if words:
                words.append(part)  # `env`-style words after the command name are arguments
            else:
                assignments.append(part.word)
                _word_parts(part, walk)
        elif part.kind == "word":
            words.append(part)
            _word_parts(part, walk)
        elif part.kind == "redirect":
            _redirect(part, walk)
        else:
            walk.hide(f"uses shell syntax '{part.kind}'")
    if not words:
        if assignments:
            walk.flag("only sets shell variables")
        return
    if any(p.kind == "parameter" for p in getattr(words[0], "parts", []) or []):
        walk.hide("the command name comes from a variable")
    argv = [_unquote(w, walk) for w in words]
    peeled, rest = _peel(argv, _ALLOW_PEEL)
    if not rest:  # `env` or `timeout 5` alone: the wrapper is the command
        peeled, rest = [], argv
    walk.commands.append(
        SimpleCommand(argv=tuple(rest), prefixes=tuple(assignments + peeled), deny_texts=_deny_texts(argv))
    )
    _nested_script(argv, walk)


def _unquote(word: Any, walk: _Walk) -> str:
    """The word as the shell would pass it, quotes removed; bashlex's own ``word`` keeps some quotes."""
    start, end = word.pos
    text = walk.source[start:end]
    try:
        parts = shlex.split(text, posix=True)
    except ValueError:
        parts = []
    if len(parts) != 1:
        walk.flag(f"quoting not understood in {text!r}")
        return str(word.word)
    return parts[0]


def _nested_script(argv: list[str], walk: _Walk) -> None:
    """``bash -c '...'`` and ``eval '...'`` run a second command line: judge what it runs as well."""
    _, rest = _peel(argv, _DENY_PEEL)
    if not rest:
        return
    name = rest[0].rsplit("/", 1)[-1]
    script: str | None = None
    if name in _SHELLS and "-c" in rest[1:]:
        index = rest.index("-c", 1)
        script = rest[index + 1] if index + 1 < len(rest) else None
    elif name in ("eval", "source", "."):
        script = " ".join(rest[1:]) if name == "eval" else None
        if name == "eval":
            walk.flag("runs code through 'eval'")
        else:
            walk.hide(f"runs code from a file through '{name}'")
    if name in _SHELLS:
        walk.flag(f"starts a nested shell ({name})")
    if script and walk.depth >= 4:
        walk.hide("nests shells too deeply to read")
    elif script:
        nested = analyse(script, _depth=walk.depth + 1)
        walk.commands.extend(nested.commands)
        for reason in nested.reasons:
            if reason in nested.opaque or not nested.parsed:
                walk.hide(reason)
            else:
                walk.flag(reason)


def _peel(argv: list[str], wrappers: frozenset[str]) -> tuple[list[str], list[str]]:
    """Strip leading wrappers (and their options) from argv; return (peeled words, the rest)."""
    peeled: list[str] = []
    rest = list(argv)
    while rest and rest[0] in wrappers:
        wrapper = rest.pop(0)
        peeled.append(wrapper)
        takes_value = _OPTION_VALUES.get(wrapper, frozenset())
        while rest and (rest[0].startswith("-") or (wrapper == "env" and "=" in rest[0])):
            option = rest.pop(0)
            peeled.append(option)
            if option in takes_value and rest:
                peeled.append(rest.pop(0))
            if option == "--":
                break
        if wrapper == "timeout" and rest:
            peeled.append(rest.pop(0))  # the duration
    return peeled, rest


_OPTION_VALUES = {
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "sudo": frozenset({"-u", "--user", "-g", "--group", "-C", "-D", "--chdir", "-h", "--host", "-p", "--prompt"}),
    "xargs": frozenset({"-n", "-I", "-L", "-P", "-d", "-E", "-s", "-a", "--max-args", "--max-procs"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "chrt": frozenset({"-p"}),
    "taskset": frozenset({"-p", "-c"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "flock": frozenset({"-w", "-E", "-c"}),
    "watch": frozenset({"-n", "-d"}),
    "strace": frozenset({"-o", "-e", "-p", "-s"}),
}


def _deny_texts(argv: list[str]) -> tuple[str, ...]:
    """The command and every wrapper-peeled form of it.

    Each form also appears with a path-named program by its base name: ``/bin/rm -rf /`` is ``rm -rf /``.
    """
    forms = [argv]
    rest = list(argv)
    while rest and _base(rest[0]) in _DENY_PEEL:
        rest[0] = _base(rest[0])
        _, rest = _peel(rest, frozenset({rest[0]}))
        if rest and rest[0] not in _DENY_PEEL and rest[0].isdigit():
            rest = rest[1:]  # `nice 5 cmd`, `chrt 10 cmd`: a bare number before the command
        if rest:
            forms.append(rest)
    texts: list[str] = []
    for form in forms:
        texts.append(" ".join(form))
        if "/" in form[0] and _base(form[0]):
            texts.append(" ".join([_base(form[0]), *form[1:]]))
    return tuple(dict.fromkeys(texts))


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def matches(pattern: str, text: str) -> bool:
    """A command pattern: a glob over the command's words joined by spaces (``git *``, ``rm -rf *``).

    ``git`` matches only ``git`` itself; ``git *`` matches ``git`` with any arguments.
    """
    if pattern.endswith(" *") and text == pattern[:-2]:
        return True
    return fnmatch.fnmatchcase(text, pattern)
