"""Tool names in config that match no tool: a warning naming the closest tools, an error in strict mode.

Every profile's names count as names of their tools (``Bash`` is run_command's, ``read_file`` read_files'),
through ``registry.matches_any``; only a name no tool answers to under any profile is warned about.

A user who writes ``tools.deny: [Bash]`` (the spelling other agents use) believes the shell is off; a
pattern that matches nothing must say so, or the belief is wrong in silence. Every place a tool name or
glob is written is checked: ``tools``, ``rules``, ``approvals`` allowlists, ``agents`` and ``rate_limits``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolrig.profiles import Face, aliases_of, canonical_name
from toolrig.registry import AnyTool, Registry, matches_any

if TYPE_CHECKING:
    from toolrig.config import Config, LoadedConfig


@dataclass(frozen=True, slots=True)
class ConfigWarning:
    key: str  # like "tools.deny[0]"
    message: str
    file: Path | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file and self.line else (f"{self.file}: " if self.file else "")
        return f"{where}{self.key}: {self.message}"


def unmatched_names(config: Config, loaded: LoadedConfig | None, catalog: Registry) -> list[ConfigWarning]:
    """One warning per tool name or glob in config that matches no tool of the catalog."""
    patterns = list(_patterns(config))
    if not patterns:
        return []  # nothing to check: do not import the whole catalog to find that out
    tools = catalog.load_local()  # an MCP server's tools are not listed here: that would start it
    remote = catalog.has_remote_pending
    # A profile's name (Bash, read_file) is a name of its tool too: suggested, and matched by _matches.
    names = sorted({n for t in tools for n in (t.name, t.display_name, *aliases_of(t.name)) if n})
    groups = sorted({t.group for t in tools})
    warnings: list[ConfigWarning] = []
    for keys, pattern in patterns:
        if _matches(pattern, tools) or (remote and _may_be_remote(pattern)):
            continue
        file, line = loaded.where(*keys) if loaded is not None else (None, None)
        key = _label(keys)
        warnings.append(ConfigWarning(key, _message(pattern, names, groups), file, line))
    return warnings


def _may_be_remote(pattern: str) -> bool:
    """Could name a tool of an MCP server not listed yet (``server/tool``, ``server__tool``, ``group:mcp``)."""
    return "/" in pattern or "__" in pattern or pattern.startswith("group:") or pattern == "*"


def _matches(pattern: str, tools: list[AnyTool]) -> bool:
    return any(matches_any(tool, (pattern,)) for tool in tools)


def _message(pattern: str, names: list[str], groups: list[str]) -> str:
    import difflib  # only when a name in config matches nothing: not on every start-up

    if pattern.startswith("group:"):
        close = difflib.get_close_matches(pattern[len("group:") :], groups, n=3, cutoff=0.5)
        suggestion = ", ".join(f"group:{g}" for g in close)
    else:
        close = _closest(pattern, names)
        suggestion = ", ".join(close)
    text = f"{pattern!r} matches no tool"
    return f"{text}; did you mean {suggestion}?" if suggestion else f"{text} (see `toolrig tools list`)"


# What users bring from other agents, mapped to the tool that does the same here.
_FAMILIAR = {
    "bash": "run_command",
    "shell": "run_command",
    "exec": "run_command",
    "read": "read_files",
    "write": "write_file",
    "multiedit": "str_replace",
    "grep": "code_search",
    "ls": "list_directory",
    "webfetch": "fetch_url",
    "fetch": "fetch_url",
    "websearch": "web_search",
}


def _closest(pattern: str, names: list[str]) -> list[str]:
    familiar = _FAMILIAR.get(pattern.lower().replace("_", ""))
    if familiar in names:
        return [familiar]
    import difflib

    lowered = {n.lower(): n for n in names}
    close = difflib.get_close_matches(pattern.lower(), list(lowered), n=3, cutoff=0.6)
    return [lowered[c] for c in close]


def _label(keys: tuple[str, ...]) -> str:
    out = ""
    for key in keys:
        if key.isdigit():
            out += f"[{key}]"
        else:
            out += ("." if out else "") + key
    return out


def _allow_tool(pattern: str) -> str:
    """The tool part of an allowlist entry ``tool`` / ``tool:glob`` / ``group:NAME:glob``."""
    head = ""
    rest = pattern.strip()
    if rest.startswith("group:"):
        head, rest = "group:", rest[len("group:") :]
    return head + rest.partition(":")[0]


def _patterns(config: Config) -> Iterator[tuple[tuple[str, ...], str]]:
    from toolrig.config import ALLOW_NOTHING

    for field in ("allow", "deny"):
        for i, pattern in enumerate(getattr(config.tools, field)):
            if pattern != ALLOW_NOTHING:
                yield ("tools", field, str(i)), pattern
    for i, rule in enumerate(config.tools.rules):
        yield ("tools", "rules", str(i), "tool"), rule.tool
    for i, pattern in enumerate(config.approvals.allow):
        yield ("approvals", "allow", str(i)), _allow_tool(pattern)
    for name in config.rate_limits:
        yield ("rate_limits", name), name
    for agent, profile in config.agents.items():
        for i, pattern in enumerate(profile.tools or []):
            if pattern != ALLOW_NOTHING:
                yield ("agents", agent, "tools", str(i)), pattern
        for i, rule in enumerate(profile.rules):
            yield ("agents", agent, "rules", str(i), "tool"), rule.tool
        for i, pattern in enumerate(profile.approvals.allow):
            yield ("agents", agent, "approvals", "allow", str(i)), _allow_tool(pattern)
        for name in profile.rate_limits:
            yield ("agents", agent, "rate_limits", name), name


# ------------------------------------------------------------------------------ other systems' allowlists


def seed_subjects(tool: str, subject: str, root: Path | None) -> list[str | None]:
    """An allowlist subject written for another system's tool name, as toolrig globs meaning the same.

    CamelAGI (and Claude Code's ``Edit(...)`` rules) match ``Edit:/src/*`` with a ``*`` that crosses
    directories: "any file under /src/". Under such a name a path glob's ``*`` becomes ``**``; an absolute
    pattern inside the workspace becomes relative to it, and one outside keeps its absolute meaning and
    also reads as rooted at the workspace (``/src/*`` -> ``/src/**`` and ``src/**``), the two ways the
    seed's examples use it. ``apply_patch:*`` allows every patch (the only pattern the seed accepts there).
    Toolrig's own names keep toolrig's glob rules. None stands for "every call".
    """
    face = _seed_face(tool)
    if face is None or face.subject_style == "command":
        return [subject]
    if face.subject_style == "blanket":
        return [None] if subject.strip() in ("*", "**") else [subject]
    crossing = re.sub(r"(?<!\*)\*(?!\*)", "**", subject)
    if not crossing.startswith("/"):
        return [crossing]
    if root is not None:
        base = root.as_posix().rstrip("/") + "/"
        if crossing.startswith(base):
            return [crossing[len(base) :] or "**"]
    return [crossing, crossing.lstrip("/") or "**"]


def _seed_face(tool: str) -> Face | None:
    """The face of another system whose allowlist syntax ``tool`` is written in (Bash, Edit, apply_patch)."""
    from toolrig.profiles import NAMES, get_profile

    if canonical_name(tool) is None and tool != "apply_patch":
        return None  # a toolrig name: toolrig's rules
    for name in NAMES:
        face = get_profile(name).face(tool)
        if face is not None and face.subject_style is not None:
            return face
    return None
