"""``allowed-tools`` entries turned into toolrig allowlist patterns (``tool`` or ``tool:subject glob``).

Skills are written for many agents: other systems' names (``Bash(git diff:*)``, ``Read``, ``WebFetch``) mean
the tools the tool profiles give those names (``profiles.tools_named``), toolrig's own spellings
(``run_command:git *``) pass through.
The tool part must name an offered tool exactly: a skill can never pre-approve ``*`` or a group.
A skill's own paths (``python3 scripts/*``) are relative to its folder, which is rarely where the command runs:
each pattern with such a path is granted as written and once per spelling of the folder the model is shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from toolrig.profiles import tools_named

_ENTRY = re.compile(r"^(?P<tool>[A-Za-z0-9_./-]+)(?:\((?P<paren>.*)\)|:(?P<colon>.+))?$", re.DOTALL)


def to_patterns(
    entries: Iterable[str], known: Callable[[str], bool], folders: Iterable[str] = ()
) -> tuple[list[str], list[str]]:
    """(patterns, notes): what each entry pre-approves, and why an entry approves nothing.

    ``folders`` are spellings of the skill's folder (absolute, workspace-relative): a relative path in a
    pattern is also granted under each of them, so ``python3 scripts/*`` covers the script where it lives.
    """
    folders = list(folders)
    patterns: list[str] = []
    notes: list[str] = []
    for entry in entries:
        match = _ENTRY.match(entry.strip())
        if match is None:
            notes.append(f"{entry!r} is not a tool name or 'Tool(pattern)'; ignored")
            continue
        tool = match.group("tool")
        subject = _subject(match.group("paren"), match.group("colon"))
        names = [n for n in (tools_named(tool) or (tool,)) if known(n)]
        if not names:
            notes.append(f"{entry!r}: no offered tool is called {tool!r}; ignored")
            continue
        if subject is not None and ("\n" in subject or not subject.strip()):
            notes.append(f"{entry!r}: the pattern in it is empty or spans lines; ignored")
            continue
        subjects = [subject, *_in_folders(subject, folders)] if subject is not None else [None]
        patterns += [f"{name}:{s}" if s is not None else name for name in names for s in subjects]
    return list(dict.fromkeys(patterns)), notes


def _in_folders(subject: str, folders: list[str]) -> list[str]:
    """The subject with each skill-relative path word (``scripts/*``, ``./run.sh``) put under each folder."""
    words = subject.split(" ")
    relative = [i for i, word in enumerate(words) if _skill_relative(word)]
    if not relative:
        return []
    spelled = []
    for folder in folders:
        prefix = re.sub(r"([*?\[])", r"[\1]", folder.rstrip("/"))  # the folder's own name is literal, not a glob
        moved = list(words)
        for i in relative:
            moved[i] = f"{prefix}/{words[i].removeprefix('./')}"
        spelled.append(" ".join(moved))
    return spelled


def _skill_relative(word: str) -> bool:
    return "/" in word and "://" not in word and not word.startswith(("/", "~", "$", "-", "*", "[", "../"))


def _subject(paren: str | None, colon: str | None) -> str | None:
    """Claude Code writes ``Bash(npm run test:*)`` for "npm run test" and anything after: ``npm run test *``."""
    if colon is not None:
        return colon
    if paren is None:
        return None
    text = paren.strip()
    if text.startswith("domain:"):
        return "*://" + text[len("domain:") :] + "/*"
    if text.endswith(":*"):
        return text[:-2] + " *" if text[:-2] else "*"
    return text
