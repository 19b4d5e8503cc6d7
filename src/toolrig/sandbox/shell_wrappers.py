"""The wrappers ``shell_syntax`` unwraps (``env``, ``timeout``, ``sudo``, ``git -c`` ...) and the builtins it judges.

Part of ``shell_syntax`` (its trust model applies): each function says what the wrapper runs, or hides it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolrig.sandbox.shell_words import _base, _literal, _Word

if TYPE_CHECKING:  # the reading itself imports this module
    from toolrig.sandbox.shell_syntax import _Step, _Walk


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
