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
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True, slots=True)
class _Word:
    text: str  # the word as the program receives it (quotes removed)
    raw: str  # the word as written
    expands: str = ""  # what the shell would expand in it at run time ("" for a literal word)


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


# --------------------------------------------------------------------------------------- unwrapping


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


@dataclass(frozen=True, slots=True)
class _Spec:
    flags: str = ""  # short options without a value
    values: str = ""  # short options with a value (attached or the next word)
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    positionals: int = 0  # words between the options and the command (timeout's duration)
    harmless: bool = False  # peeled for allow patterns: changes how the command runs, not what it is
    numeric: bool = False  # accepts `-10` style options (nice)
    refuse: str = ""  # short options that make it run something else (sudo -s: a shell)


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_SPECS: dict[str, _Spec] = {
    "timeout": _Spec("v", "sk", _f("--preserve-status", "--foreground", "--verbose"), _f("--signal", "--kill-after"),
                     positionals=1, harmless=True),
    "nice": _Spec("", "n", _f(), _f("--adjustment"), harmless=True, numeric=True),
    "sudo": _Spec("AbEHKknPSV", "CDghpRTtUu", _f("--askpass", "--background", "--non-interactive", "--stdin",
                  "--preserve-env", "--set-home", "--reset-timestamp", "--remove-timestamp"),
                  _f("--user", "--group", "--chdir", "--host", "--prompt", "--close-from", "--chroot", "--role",
                     "--type", "--command-timeout", "--other-user"), refuse="siel"),
    "doas": _Spec("n", "Cu", refuse="s"),
    "xargs": _Spec("0rtpxil", "aEdIiLlnPs", _f("--null", "--no-run-if-empty", "--verbose", "--interactive",
                   "--exit", "--open-tty"),
                   _f("--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs",
                      "--max-chars", "--process-slot-var")),
    "nohup": _Spec(),
    "exec": _Spec("cl", "a"),
    "command": _Spec("pvV"),
    "builtin": _Spec(),
    "time": _Spec("apqv", "fo", _f("--append", "--portability", "--quiet", "--verbose"), _f("--format", "--output")),
    "setsid": _Spec("cfw", "", _f("--ctty", "--fork", "--wait")),
    "stdbuf": _Spec("", "ioe", _f(), _f("--input", "--output", "--error")),
    "ionice": _Spec("t", "cnp", _f("--ignore"), _f("--class", "--classdata")),
    "chrt": _Spec("abdefiormRv", "TPD", _f("--all-tasks", "--batch", "--deadline", "--fifo", "--idle", "--other",
                  "--rr", "--reset-on-fork", "--verbose"), _f("--sched-runtime", "--sched-period", "--sched-deadline"),
                  positionals=1),
    "taskset": _Spec("ac", "", _f("--all-tasks", "--cpu-list"), positionals=1),
    "unbuffer": _Spec("p"),
    "busybox": _Spec(),
}  # fmt: skip

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "ash", "rbash", "yash"})
_SHELL_STATE = frozenset(
    {"alias", "unalias", "shopt", "enable", "hash", "set", "trap", "export", "declare", "typeset", "local",
     "readonly", "bind", "complete", "compgen", "mapfile", "readarray", "read", "let", "printf"}
)  # fmt: skip
_PACKAGE_RUNNERS = frozenset({"npx", "pnpx", "bunx", "uvx", "pipx"})
_OPAQUE_RUNNERS = frozenset(
    {"strace", "ltrace", "nsenter", "unshare", "chroot", "su", "runuser", "setpriv", "sg", "newgrp", "systemd-run",
     "firejail", "bwrap", "proot", "fakeroot", "eatmydata", "catchsegv", "valgrind", "gdb", "perf", "parallel",
     "tmux", "screen", "script", "expect", "dbus-run-session", "xvfb-run", "capsh", "prlimit", "cgexec",
     "numactl", "torsocks", "proxychains", "proxychains4", "sshpass", "ssh", "rlwrap", "entr", "direnv",
     "scl", "with-contenv", "s6-setuidgid", "chpst", "daemonize", "start-stop-daemon", "at", "batch", "crontab"}
)  # fmt: skip
_INTERPRETER_CODE = {
    "python": "c", "pypy": "c", "node": "ep", "nodejs": "ep", "perl": "eE", "ruby": "e", "php": "r", "lua": "e",
    "Rscript": "e", "bun": "e", "deno": "", "tclsh": "", "osascript": "e", "jshell": "",
}  # fmt: skip
_INTERPRETER_LONG = frozenset({"--eval", "--print", "--command", "--exec"})
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
_SAFE_SET_OPTIONS = frozenset({"errexit", "nounset", "pipefail", "xtrace", "verbose", "noclobber", "noglob"})


def _getopt(name: str, words: list[_Word], spec: _Spec, walk: _Walk) -> int | None:
    """Index of the wrapped command in ``words`` after the wrapper's own options, or None if unclear."""
    i = 1
    while i < len(words):
        word = words[i]
        text = word.text
        if word.expands:
            walk.hide(f"an option of '{name}' is changed by the shell at run time ({word.raw!r})")
            return None
        if text == "--":
            i += 1
            break
        if not text.startswith("-") or text == "-":
            break
        if spec.numeric and re.fullmatch(r"--?[+-]?\d+", text):
            i += 1
            continue
        if text.startswith("--"):
            key, eq, _ = text.partition("=")
            if key in spec.long_flags or (key in spec.long_values and eq):
                i += 1
                continue
            if key in spec.long_values:
                i += 2
                continue
            walk.hide(f"'{name}' is given an option this reading does not know ({text!r})")
            return None
        j = 1
        while j < len(text):
            option = text[j]
            if option in spec.refuse:
                walk.hide(f"'{name} -{option}' runs a shell or another program")
                return None
            if option in spec.values and option not in spec.flags:
                if j + 1 == len(text):
                    i += 1  # the value is the next word
                break
            if option in spec.flags:
                j += 1
                continue
            walk.hide(f"'{name}' is given an option this reading does not know ({text!r})")
            return None
        i += 1
    start = i + spec.positionals
    for word in words[i:start]:
        if word.expands:
            walk.hide(f"an argument of '{name}' is changed by the shell at run time ({word.raw!r})")
            return None
    return min(start, len(words))


_ENV_LONG_FLAGS = _f("--ignore-environment", "--null", "--debug", "--list-signal-handling")
_ENV_LONG_VALUES = _f("--unset", "--chdir", "--split-string")
_ENV_OPTIONAL = _f("--block-signal", "--default-signal", "--ignore-signal")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _env(words: list[_Word], walk: _Walk) -> _Step:
    """``env``: options, NAME=VALUE words, and ``-S STRING`` that splits STRING into more command words."""
    i = 1
    names: list[str] = []
    split: str | None = None
    options = True
    while i < len(words):
        word = words[i]
        text = word.text
        if word.expands:
            walk.hide(f"an argument of 'env' is changed by the shell at run time ({word.raw!r})")
            return None
        if _NAME.match(text):
            names.append(text.split("=", 1)[0])
            i += 1
            continue
        if not options or not text.startswith("-"):
            break
        if text == "--":
            options = False
            i += 1
            continue
        if text == "-":
            i += 1
            continue
        if text.startswith("--"):
            key, eq, value = text.partition("=")
            if key in _ENV_LONG_FLAGS or key in _ENV_OPTIONAL:
                i += 1
                continue
            if key in _ENV_LONG_VALUES:
                if not eq:
                    if i + 1 >= len(words):
                        break
                    value = words[i + 1].text
                    i += 1
                if key == "--split-string":
                    split = value if split is None else f"{split} {value}"
                i += 1
                continue
            walk.hide(f"'env' is given an option this reading does not know ({text!r})")
            return None
        j = 1
        while j < len(text):
            option = text[j]
            if option in "i0v":
                j += 1
                continue
            if option in "uCS":
                value = text[j + 1 :]
                if not value:
                    if i + 1 >= len(words):
                        walk.hide(f"'env -{option}' has no value")
                        return None
                    value = words[i + 1].text
                    i += 1
                if option == "S":
                    split = value if split is None else f"{split} {value}"
                break
            walk.hide(f"'env' is given an option this reading does not know ({text!r})")
            return None
        i += 1
    inner = words[i:]
    if names:
        target = _base(inner[0].text) if inner else "env"
        walk.hide(f"sets environment variables for '{target}' ({', '.join(names)})")
    if split is not None:
        walk.flag("'env -S' splits a string into more words of the command")
        if any(c in split for c in "\\$#`;|&<>(){}*?[~\n"):
            walk.hide("'env -S' is given a string with escapes, variables or shell syntax this reading does not follow")
            return None
        try:
            parts = shlex.split(split)
        except ValueError:
            walk.hide("'env -S' is given a string whose quoting is not understood")
            return None
        # env puts the split words where -S stood: they are read as env's own options and NAME=VALUE again.
        return [_literal("env"), *(_literal(p) for p in parts), *inner], True
    return inner, True


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


_GIT_FLAGS = _f(
    "--no-pager", "-P", "--paginate", "-p", "--bare", "--no-replace-objects", "--literal-pathspecs",
    "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--version", "--help",
    "-h", "--html-path", "--man-path", "--info-path", "--exec-path", "--no-lazy-fetch", "--no-advice",
)  # fmt: skip
# Git's own commands; any other word may be an alias, and an alias can run any program ("!cmd").
_GIT_COMMANDS = frozenset(
    [
        "add",
        "am",
        "annotate",
        "apply",
        "archive",
        "bisect",
        "blame",
        "branch",
        "bundle",
        "cat-file",
        "check-attr",
        "check-ignore",
        "check-mailmap",
        "check-ref-format",
        "checkout",
        "checkout-index",
        "cherry",
        "cherry-pick",
        "citool",
        "clean",
        "clone",
        "column",
        "commit",
        "commit-graph",
        "commit-tree",
        "count-objects",
        "credential",
        "describe",
        "diff",
        "diff-files",
        "diff-index",
        "diff-tree",
        "difftool",
        "fetch",
        "fetch-pack",
        "filter-branch",
        "for-each-ref",
        "for-each-repo",
        "format-patch",
        "fsck",
        "gc",
        "get-tar-commit-id",
        "grep",
        "gui",
        "hash-object",
        "help",
        "init",
        "instaweb",
        "interpret-trailers",
        "log",
        "ls-files",
        "ls-remote",
        "ls-tree",
        "maintenance",
        "merge",
        "merge-base",
        "merge-file",
        "merge-tree",
        "mergetool",
        "mktag",
        "mktree",
        "mv",
        "name-rev",
        "notes",
        "pack-objects",
        "pack-refs",
        "prune",
        "pull",
        "push",
        "range-diff",
        "read-tree",
        "rebase",
        "reflog",
        "remote",
        "repack",
        "replace",
        "request-pull",
        "reset",
        "restore",
        "rev-list",
        "rev-parse",
        "revert",
        "rm",
        "shortlog",
        "show",
        "show-branch",
        "show-ref",
        "sparse-checkout",
        "stage",
        "stash",
        "status",
        "stripspace",
        "submodule",
        "switch",
        "symbolic-ref",
        "tag",
        "update-index",
        "update-ref",
        "var",
        "verify-commit",
        "verify-pack",
        "verify-tag",
        "version",
        "whatchanged",
        "worktree",
        "write-tree",
        "lfs",
    ]
)
_GIT_RUNS_PROGRAMS = {
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd", "-t", "--tool"),
    "bisect": ("run",),
    "submodule": ("foreach",),
    "filter-branch": ("",),
    "mergetool": ("",),
    "credential": ("",),
    "instaweb": ("",),
}


def _git(words: list[_Word], walk: _Walk) -> None:
    """Git's global options and aliases can run any program (``-c core.pager=``, ``--exec-path=``, ``!cmd``)."""
    i = 1
    while i < len(words):
        word = words[i]
        text = word.text
        if not text.startswith("-"):
            break
        if word.expands:
            walk.hide(f"an option of 'git' is changed by the shell at run time ({word.raw!r})")
            return
        if text in _GIT_FLAGS:
            i += 1
            continue
        if text == "-C":
            i += 2
            continue
        walk.hide(f"git is given '{text.split('=', 1)[0]}', which can make it run other programs")
        return
    if i >= len(words):
        return
    sub = words[i]
    if sub.expands or sub.text not in _GIT_COMMANDS:
        walk.hide(f"'git {sub.text}' is not a git command and may be an alias, which can run any program")
        return
    rest = [w.text for w in words[i + 1 :]]
    for option in _GIT_RUNS_PROGRAMS.get(sub.text, ()):
        if option == "" or any(
            r == option
            or r.startswith(option + "=")
            or (option.startswith("-") and len(option) == 2 and r.startswith(option))
            for r in rest
        ):
            walk.hide(f"'git {sub.text}' {option or 'runs'} runs other programs")
            return
    if sub.text == "config" and not any(
        r in ("--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list", "--show-origin") for r in rest
    ):
        walk.hide("'git config' changes git's configuration, which can make later git commands run programs")


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


def _shell_state(name: str, words: list[_Word], walk: _Walk) -> None:
    """Builtins that change how later words are read (aliases, options, PATH lookups, traps)."""
    args = [w.text for w in words[1:]]
    if name == "set" and _harmless_set(args):
        return
    declares = name in ("export", "declare", "typeset", "local", "readonly")
    if declares and not any("=" in a or (a.startswith("-") and "f" in a) for a in args):
        return
    if name == "printf" and not any(a.startswith("-v") for a in args):
        return
    if name == "let" and not any(re.search(r"[A-Za-z_\[]", a) for a in args):
        return  # only numbers: a name's value would be evaluated (a subscript in it runs a command)
    walk.hide(f"'{name}' changes how the shell reads or runs later commands")


def _harmless_set(args: list[str]) -> bool:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-o", "+o"):
            if i + 1 >= len(args) or args[i + 1] not in _SAFE_SET_OPTIONS:
                return False
            i += 2
            continue
        if not re.fullmatch(r"[-+][euxvCf]+", arg):
            return False
        i += 1
    return True


def _package_exec(words: list[_Word]) -> bool:
    return len(words) > 1 and words[1].text in ("exec", "x", "dlx", "run", "tool")


def _interpreter_code(name: str, words: list[_Word]) -> bool:
    """``python -c``, ``node -e``, ``perl -e``, awk's ``system()``: code this reading cannot follow."""
    if name in _AWKS:
        program = next((w.text for w in words[1:] if not w.text.startswith("-")), "")
        return any(token in program for token in ("system", "|", ">", "getline", "ENVIRON"))
    key = re.sub(r"[\d.]+$", "", name)
    short = _INTERPRETER_CODE.get(key)
    if short is None:
        return False
    if name == "deno" or key == "deno":
        return any(w.text in ("eval", "repl") for w in words[1:2])
    for word in words[1:]:
        text = word.text
        if text.startswith("--"):
            if text.split("=", 1)[0] in _INTERPRETER_LONG:
                return True
            continue
        if text.startswith("-") and any(c in text[1:] for c in short):
            return True
        if not text.startswith("-"):
            return False  # a script file: what it does is the file's business, named by the allow pattern
    return False


def _suffixes(words: list[_Word]) -> list[list[str]]:
    """Every tail of the words: for a command that cannot be unwrapped, where a denied command may start."""
    return [[w.text for w in words[i:]] for i in range(1, len(words))]


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


def matches(pattern: str, text: str) -> bool:
    """A command pattern: a glob over the command's words joined by spaces (``git *``, ``rm -rf *``).

    ``git`` matches only ``git`` itself; ``git *`` matches ``git`` with any arguments.
    """
    if pattern.endswith(" *") and text == pattern[:-2]:
        return True
    return fnmatch.fnmatchcase(text, pattern)
