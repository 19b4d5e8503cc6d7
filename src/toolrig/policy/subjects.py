"""What a call acts on, read the way a rule must read it: commands split, paths resolved, URLs canonical.

Trust model: subjects come from the model's arguments and are hostile. Each is turned into *units* an
allow pattern must cover one by one, and *deny texts* a deny or ask pattern is tried against (every
spelling that could hide the real target); what cannot be read plainly is listed in ``unclear``.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from toolrig.registry import AnyTool
from toolrig.sandbox.paths import Workspace, is_within

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_URL_TRICKS = re.compile(r"[\s\\\x00-\x1f\x7f]")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class SubjectView:
    kind: str
    raw: tuple[str, ...]
    units: tuple[str, ...]  # each must be covered by an allow pattern for a subject-based allow
    deny_texts: tuple[str, ...]  # any one matching a deny/ask pattern makes the rule hit
    unclear: tuple[str, ...] = ()  # why the subjects cannot be proven plain (then allow patterns only ask)


def kind_of(tool: AnyTool) -> str:
    """How a tool's subjects are read: from its own declaration (``Subject`` marks), else plain text."""
    return tool.subject_kind or "text"


def view(kind: str, subjects: list[str], workspace: Workspace) -> SubjectView:
    units: list[str] = []
    texts: list[str] = []
    unclear: list[str] = []
    for subject in subjects:
        if kind == "command":
            from toolrig.sandbox.shell_syntax import analyse  # the shell parser loads with the first command

            analysis = analyse(subject)
            units.extend(c.text for c in analysis.commands)
            texts.append(subject)
            for command in analysis.commands:
                texts.extend(_spellings(command.deny_texts))
                assigned = [p.split("=", 1)[0] for p in command.prefixes if _ASSIGNMENT.match(p)]
                if assigned:
                    # GIT_SSH_COMMAND=..., LD_PRELOAD=..., PAGER=... change what a "git *" really runs.
                    unclear.append(f"sets environment variables for '{command.name}' ({', '.join(assigned)})")
            unclear.extend(analysis.reasons)
        elif kind == "path":
            path, problem = _path(subject, workspace)
            texts.extend((path, subject))
            if problem:
                unclear.append(problem)
            else:
                units.append(path)
        elif kind == "url":
            canonical, problem = _url(subject)
            texts.extend((canonical, subject, subject.lower()))
            if problem:
                unclear.append(problem)
            else:
                units.append(canonical)
        elif kind == "recipient":
            address, problem = _recipient(subject)
            texts.extend((address, subject.lower()))
            if problem:
                unclear.append(problem)
            else:
                units.append(address)
        else:
            units.append(subject)
            texts.append(subject)
    return SubjectView(kind, tuple(subjects), tuple(units), tuple(dict.fromkeys(texts)), tuple(dict.fromkeys(unclear)))


def _spellings(texts: tuple[str, ...]) -> list[str]:
    """Each text, and the same with the program named by its base name (``/bin/rm -rf /`` -> ``rm -rf /``)."""
    out = list(texts)
    for text in texts:
        program, sep, rest = text.partition(" ")
        if "/" in program and program.rstrip("/"):
            out.append(program.rstrip("/").rsplit("/", 1)[-1] + sep + rest)
    return out


def matches(kind: str, pattern: str, text: str) -> bool:
    """Whether a rule's subject glob matches one unit or deny text of the given kind."""
    if kind == "command":
        from toolrig.sandbox.shell_syntax import matches as command_matches

        return command_matches(pattern, text)
    if kind == "path":
        return _path_glob(pattern).fullmatch(text) is not None
    if kind == "recipient":
        return fnmatch.fnmatchcase(text.lower(), pattern.lower())
    return fnmatch.fnmatchcase(text, pattern)


def _path(subject: str, workspace: Workspace) -> tuple[str, str]:
    """The path as the workspace sees it after resolving ``..`` and symlinks: relative inside, absolute outside."""
    if "\x00" in subject or not subject.strip():
        return subject, f"the path {subject!r} cannot be read"
    candidate = Path(subject).expanduser() if subject.startswith("~") else Path(subject)
    if not candidate.is_absolute():
        candidate = workspace.root / candidate
    try:
        resolved = Path(os.path.realpath(candidate))
    except (OSError, ValueError) as exc:
        return subject, f"the path {subject!r} cannot be resolved: {exc}"
    if is_within(resolved, workspace.root):
        return resolved.relative_to(workspace.root).as_posix() or ".", ""
    return resolved.as_posix(), ""


def _url(subject: str) -> tuple[str, str]:
    """scheme://host[:port]/path?query with userinfo dropped and case folded where case does not matter."""
    from urllib.parse import urlsplit

    if _URL_TRICKS.search(subject):
        return subject, f"the URL {subject!r} contains whitespace, a backslash or a control character"
    try:
        parts = urlsplit(subject)
        port = parts.port
    except ValueError as exc:
        return subject, f"the URL {subject!r} cannot be parsed: {exc}"
    if not parts.scheme or not parts.hostname:
        return subject, f"the URL {subject!r} has no scheme or host"
    scheme = parts.scheme.lower()
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    canonical = f"{scheme}://{netloc}{parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")
    problem = f"the URL {subject!r} carries user info (user@host)" if "@" in parts.netloc else ""
    return canonical, problem


def _recipient(subject: str) -> tuple[str, str]:
    from email.utils import getaddresses

    if any(c in subject for c in "\r\n\x00"):
        return subject.lower(), f"the recipient {subject!r} contains a line break"
    found = getaddresses([subject])
    address = found[0][1].strip().lower() if len(found) == 1 else ""
    local, _, domain = address.partition("@")
    if not local or not domain or "@" in domain or ("," in subject and len(found) != 1):
        return subject.lower(), f"{subject!r} is not exactly one email address"
    return address, ""


@lru_cache(maxsize=1024)
def _path_glob(pattern: str) -> re.Pattern[str]:
    """A path glob: ``*`` and ``?`` stay within one directory, ``**`` crosses them, ``dir/**`` includes ``dir``."""
    pattern = pattern.removeprefix("./")
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + "".join(c if c == "-" else re.escape(c) for c in body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def escape(text: str) -> str:
    """A glob that matches exactly ``text`` (for "allow always" patterns made from a real subject)."""
    return re.sub(r"([*?\[])", r"[\1]", text)
