"""What a shell command line would really run, read with a real bash parser (bashlex).

Trust model: the command text is hostile. Every simple command hidden in it (after ``;``, ``&&``, ``||``,
``|``, inside subshells, ``$(...)``, backticks and process substitutions) is found so policy can judge
each one, and anything that is not provably plain is flagged so policy can refuse or ask.

"Plain" is decided only for what can be proven: a literal command word, arguments the shell does not
expand, and wrappers unwrapped exactly (``env`` with ``-S`` re-split and NAME=VALUE seen, ``timeout``, ``nice``,
``sudo``, ``xargs``, ``find -exec``, ``bash -c``, ``eval`` ...), with the command each one runs read in turn.
A wrapper given an option this reading does not know, an interpreter running inline code (``python -c``),
git options and aliases that can run programs, builtins that change later reading (``alias``, ``shopt``,
``hash``, ``set``, ``export X=``), environment assignments, and any expansion of a command word (braces,
globs, variables, ``$'...'``) make the command *opaque*: something may run that ``commands`` does not show.
``reasons`` is the single source of why a command is not plain; policy reads them, it does not re-derive them.

Two readings of each simple command serve two different questions:

- ``text`` answers "does an allow pattern approve this?": only the harmless wrappers ``timeout``, ``nice``
  and ``env`` are peeled, never ``sudo`` or ``xargs`` (``git *`` must not approve ``sudo git push``).
- ``deny_texts`` answers "could a deny pattern be evaded?": every form on the way from the outer wrapper to
  the innermost command (and, where a wrapper could not be unwrapped, every tail of its words).
"""

from __future__ import annotations

import fnmatch
import shlex
from dataclasses import dataclass, field
from typing import Any

from toolrig.sandbox.shell_words import _base, _evaluating, _expansion, _join_lines, _suffixes, _texts, _Word
from toolrig.sandbox.shell_wrappers import (
    _NAME,
    _OPAQUE_RUNNERS,
    _PACKAGE_RUNNERS,
    _SHELL_STATE,
    _SHELLS,
    _SPECS,
    _env,
    _f,
    _getopt,
    _git,
    _interpreter_code,
    _package_exec,
    _shell_state,
    _Spec,
)

_SAFE_REDIRECT_TARGETS = frozenset({"/dev/null"})


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
    if evaluated := _evaluating(command):
        walk.hide(evaluated)
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
    words: list[_Word] = []
    assignments: list[str] = []
    for part in node.parts:
        if part.kind == "assignment":
            if words:
                words.append(_word(part, walk))  # `env`-style words after the command name are arguments
            else:
                assignments.append(part.word)
                _word_parts(part, walk)
        elif part.kind == "word":
            words.append(_word(part, walk))
            _word_parts(part, walk)
        elif part.kind == "redirect":
            _redirect(part, walk)
        else:
            walk.hide(f"uses shell syntax '{part.kind}'")
    if not words:
        if assignments:
            names = ", ".join(a.split("=", 1)[0] for a in assignments)
            walk.hide(f"only sets shell variables ({names}), which can change what later commands run")
        return
    if assignments:
        # GIT_SSH_COMMAND=..., LD_PRELOAD=..., PATH=..., PAGER=... change what a "git *" really runs.
        names = ", ".join(a.split("=", 1)[0] for a in assignments)
        walk.hide(f"sets environment variables for '{_base(words[0].text)}' ({names})")
    _resolve(words, walk, prefixes=assignments)


def _word(node: Any, walk: _Walk) -> _Word:
    start, end = node.pos
    raw = walk.source[start:end]
    return _Word(_unquote(node, walk), raw, _expansion(raw))


def _resolve(words: list[_Word], walk: _Walk, prefixes: list[str]) -> None:
    """Follow wrappers down to the command they run, recording every form for deny patterns.

    A wrapper is unwrapped only when each of its options is known; otherwise what it runs is hidden from
    this reading. The allow text stops at the first wrapper that is not harmless (``sudo git`` is not ``git``).
    """
    slot = len(walk.commands)
    forms: list[list[str]] = []
    peeled = list(prefixes)
    allow_argv: list[str] | None = None
    extra: list[list[str]] = []
    current = words
    for _ in range(32):
        forms.append([w.text for w in current])
        head = current[0]
        if head.expands:
            walk.hide(f"the command name {head.raw!r} is changed by the shell at run time ({head.expands})")
            extra = _suffixes(current)
            break
        name = _base(head.text)
        if _NAME.match(head.text):
            walk.hide(f"runs a program named like an assignment ({head.text!r})")  # `timeout 5 A=1 touch X`
            extra = _suffixes(current)
        for word in current[1:]:
            if word.expands:
                walk.flag(f"an argument of '{name}' is changed by the shell at run time ({word.raw!r}: {word.expands})")
        hidden = len(walk.opaque)
        step = _step(name, current, walk)
        if len(walk.opaque) > hidden:
            extra = _suffixes(current)  # not unwrapped: a denied command may start at any word
        if step is None:
            break
        inner, harmless = step
        if not inner:
            break  # `env` or `timeout 5` alone: the wrapper is the command
        if allow_argv is None and harmless:
            kept = len(inner) if inner == current[len(current) - len(inner) :] else 0
            peeled.extend(w.text for w in current[: len(current) - kept])
        elif allow_argv is None:
            allow_argv = [w.text for w in current]
        current = inner
    else:
        walk.hide("wraps commands too deeply to read")
    if allow_argv is None:
        allow_argv = forms[-1]
    command = SimpleCommand(argv=tuple(allow_argv), prefixes=tuple(peeled), deny_texts=_texts(forms + extra))
    walk.commands.insert(slot, command)


_Step = tuple[list[_Word], bool] | None


def _step(name: str, words: list[_Word], walk: _Walk) -> _Step:
    """The command a wrapper runs and whether the wrapper is harmless; None when ``words`` is the command."""
    if name == "env":
        return _env(words, walk)
    if name in _SPECS:
        spec = _SPECS[name]
        start = _getopt(name, words, spec, walk)
        if start is None:
            return None
        if name == "xargs":
            walk.flag("xargs adds arguments read from its input")
        return words[start:], spec.harmless
    if name in _SHELLS:
        return _shell(name, words, walk)
    if name == "eval":
        walk.flag("runs code through 'eval'")
        _script(" ".join(w.text for w in words[1:]), walk)
        return None
    if name in ("source", "."):
        walk.hide(f"runs code from a file through '{name}'")
        return None
    if name == "find":
        _find(words, walk)
        return None
    if name == "git":
        _git(words, walk)
        return None
    if name == "flock":
        return _flock(words, walk)
    if name == "watch":
        walk.hide("'watch' runs its arguments through a shell repeatedly")
        return None
    if name in _SHELL_STATE:
        _shell_state(name, words, walk)
        return None
    if name in _PACKAGE_RUNNERS or (name in ("npm", "pnpm", "yarn", "bun", "uv") and _package_exec(words)):
        walk.hide(f"runs a package fetched or resolved by '{name}', which this reading cannot see")
        return None
    if _interpreter_code(name, words):
        walk.hide(f"runs inline code through '{name}'")
        return None
    if name in _OPAQUE_RUNNERS:
        walk.hide(f"runs a command through '{name}', whose options this reading does not unwrap")
        return None
    return None


def _shell(name: str, words: list[_Word], walk: _Walk) -> _Step:
    """``bash -c SCRIPT``: the script is read as a nested command line; a shell given a file or stdin is opaque."""
    walk.flag(f"starts a nested shell ({name})")
    i = 1
    has_c = False
    while i < len(words):
        word = words[i]
        text = word.text
        if word.expands and not has_c:
            walk.hide(f"an option of '{name}' is changed by the shell at run time ({word.raw!r})")
            return None
        if text == "--" or text == "-":
            i += 1
            break
        if text.startswith("--"):
            if text in ("--login", "--norc", "--noprofile", "--posix", "--noediting", "--restricted"):
                i += 1
                continue
            walk.hide(f"'{name}' is given an option this reading does not know ({text!r})")
            return None
        if text[:1] in "-+" and len(text) > 1:
            if "o" in text[1:] or "O" in text[1:]:
                i += 2  # -o pipefail
                has_c = has_c or "c" in text
                continue
            has_c = has_c or "c" in text[1:]
            if any(c in text[1:] for c in "li"):
                walk.flag(f"'{name}' reads the user's startup files")
            i += 1
            continue
        break
    if has_c and i < len(words):
        script = words[i]
        if script.expands:
            walk.hide(f"the script given to '{name} -c' is changed by the shell at run time ({script.raw!r})")
            return None
        _script(script.text, walk)
        return None
    walk.hide(f"'{name}' runs a script from a file or its input, which this reading cannot see")
    return None


def _script(script: str, walk: _Walk) -> None:
    """A second command line (``bash -c``, ``eval``): judge what it runs as well."""
    if walk.depth >= 4:
        walk.hide("nests shells too deeply to read")
        return
    nested = analyse(script, _depth=walk.depth + 1)
    walk.commands.extend(nested.commands)
    for reason in nested.reasons:
        if reason in nested.opaque or not nested.parsed:
            walk.hide(reason)
        else:
            walk.flag(reason)


def _find(words: list[_Word], walk: _Walk) -> None:
    """``find ... -exec CMD ;``: each command find runs is a command of its own."""
    i = 1
    while i < len(words):
        text = words[i].text
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            walk.flag(f"find runs a command for each file it finds ({text})")
            end = i + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            inner = words[i + 1 : end]
            if not inner:
                walk.hide(f"find {text} is given no command")
            else:
                _resolve(inner, walk, prefixes=[])
            i = end + 1
            continue
        if text in ("-delete", "-fls", "-fprint", "-fprint0", "-fprintf"):
            walk.flag(f"find deletes or writes files ({text})")
        i += 1


def _flock(words: list[_Word], walk: _Walk) -> _Step:
    spec = _Spec("sexunoFn", "wE", _f("--shared", "--exclusive", "--unlock", "--nonblock", "--close", "--no-fork"),
                 _f("--timeout", "--conflict-exit-code"))  # fmt: skip
    start = _getopt("flock", words, spec, walk)
    if start is None or start + 1 >= len(words):
        return None
    rest = words[start + 1 :]
    if rest[0].text in ("-c", "--command"):
        if len(rest) > 1 and not rest[1].expands:
            walk.flag("flock runs its command through a shell")
            _script(rest[1].text, walk)
        else:
            walk.hide("flock -c is given a script this reading cannot see")
        return None
    return rest, False


def _unquote(word: Any, walk: _Walk) -> str:
    """The word as the shell would pass it, quotes removed; bashlex's own ``word`` keeps some quotes."""
    start, end = word.pos
    text = walk.source[start:end]
    try:
        parts = shlex.split(_join_lines(text), posix=True)
    except ValueError:
        parts = []
    if len(parts) != 1:
        walk.flag(f"quoting not understood in {text!r}")
        return str(word.word)
    return parts[0]


def matches(pattern: str, text: str) -> bool:
    """A command pattern: a glob over the command's words joined by spaces (``git *``, ``rm -rf *``).

    ``git`` matches only ``git`` itself; ``git *`` matches ``git`` with any arguments.
    """
    if pattern.endswith(" *") and text == pattern[:-2]:
        return True
    return fnmatch.fnmatchcase(text, pattern)
