"""Tool profiles: toolrig's one catalog under the names and shapes other systems' models are trained on.

``get_profile("claude")`` gives a ``Profile``; ``aliases_of("run_command")`` every name any built-in profile
gives that tool (``Bash``, ``run_terminal_command``), which config patterns match like the tool's own name.
Built in: ``toolrig`` (the identity), ``claude``, ``codebuff``, ``native``, ``camelagi``, ``botholomew``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from toolrig.errors import UsageError
from toolrig.profiles.profile import Face, Profile, Shaped

DEFAULT = "toolrig"
NAMES = ("toolrig", "claude", "codebuff", "native", "camelagi", "botholomew")

__all__ = [
    "DEFAULT",
    "NAMES",
    "Face",
    "Profile",
    "Shaped",
    "aliases_of",
    "all_faces",
    "by_tool_name",
    "canonical_name",
    "capability_of",
    "get_profile",
    "tools_named",
]

# Every tool that starts, lists or stops a subagent: the capability Claude's ``Agent`` / ``Task`` stand for.
SPAWNING = ("spawn_agents", "Agent", "Task", "subagent_list", "cancel_task")

# Names other systems use for a capability rather than one face, each meaning every tool listed: Claude Code's
# ``LS`` (gone from its SDK's tool list, still in older files), its rule that ``Edit`` covers every
# file-editing tool (``MultiEdit`` too), and ``Agent`` / ``Task`` (seed 002 disables spawning with
# ``tools.deny: [Agent]``: a deny that left spawn_agents or Task offered would be lost in silence).
_UNSERVED: dict[str, tuple[str, ...]] = {
    "LS": ("list_directory",),
    "Edit": ("str_replace",),
    "Agent": SPAWNING,
    "Task": SPAWNING,
}


# Registered tools that are another tool's capability in another system's call shape (Claude Code's Agent, and
# Task, its name before v2.1.63, on spawn_agents' machinery), and the name each profile offers it under: a
# model is offered each capability once; the other names stay callable. A test checks this table against the
# catalog (tools sharing one implementation must share a capability here).
SAME_CAPABILITY: dict[str, str] = {"Agent": "spawn_agents", "Task": "spawn_agents"}
PREFERRED: dict[str, tuple[str, ...]] = {"claude": ("Agent",), "camelagi": ("Agent",)}


def capability_of(tool: str) -> str:
    """The capability a registered tool stands for (``Task`` -> ``spawn_agents``); most tools are their own."""
    return SAME_CAPABILITY.get(tool, tool)


@cache
def get_profile(name: str | None) -> Profile:
    """A built-in profile by name (None: the default); an unknown name is a usage error naming the known ones."""
    key = (name or DEFAULT).strip().lower()
    if key == "toolrig":
        return Profile("toolrig", "toolrig's own names and shapes.")
    if key == "claude":
        from toolrig.profiles.claude import PROFILE

        return PROFILE
    if key == "codebuff":
        from toolrig.profiles.codebuff import PROFILE as CODEBUFF

        return CODEBUFF
    if key == "native":
        from toolrig.profiles.native import PROFILE as NATIVE

        return NATIVE
    if key == "camelagi":
        from toolrig.profiles.camelagi import PROFILE as CAMELAGI

        return CAMELAGI
    if key == "botholomew":
        from toolrig.profiles.botholomew import PROFILE as BOTHOLOMEW

        return BOTHOLOMEW
    raise UsageError(f"no tool profile named {name!r}; the profiles are: {', '.join(NAMES)}")


@cache
def all_faces() -> tuple[Face, ...]:
    """Every face of every built-in profile whose name differs from its tool's (the names policy must know)."""
    faces: dict[tuple[str, str], Face] = {}
    for name in NAMES:
        for face in get_profile(name).faces:
            if face.name != face.tool:
                faces.setdefault((face.name, face.tool), face)
    return tuple(faces.values())


@cache
def _aliases() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for face in all_faces():
        names = table.setdefault(face.tool, [])
        if face.name not in names:
            names.append(face.name)
    for capability, tools in _UNSERVED.items():
        for tool in tools:
            names = table.setdefault(tool, [])
            if capability not in names and capability != tool:
                names.append(capability)
    return {tool: tuple(names) for tool, names in table.items()}


def aliases_of(tool: str) -> tuple[str, ...]:
    """The names built-in profiles give ``tool`` besides its own (``run_command`` -> Bash, run_terminal_command).

    A capability name counts as a name of each of its tools (``subagent_list`` answers to ``Agent``), so config
    that names the capability (``tools.deny: [Agent]``, a rule, an agent's tools) reaches all of them.
    """
    return _aliases().get(tool, ())


def canonical_name(name: str) -> str | None:
    """The toolrig tool a profile name stands for (``Bash`` -> ``run_command``); None when no profile uses it."""
    for face in all_faces():
        if face.name == name:
            return face.tool
    return None


def face_named(name: str) -> Face | None:
    """The face of a built-in profile called ``name`` (for its policy subject and pattern style), if any."""
    return next((face for face in all_faces() if face.name == name), None)


def tools_named(name: str) -> tuple[str, ...]:
    """The toolrig tools a name from another system stands for (``Edit`` -> edit, str_replace); () when none.

    The one table skills' ``allowed-tools`` and agent definitions' ``tools`` read, so a name means the same
    tool there as when a model calls it under a profile.
    """
    tools = [face.tool for face in all_faces() if face.name == name]
    return tuple(dict.fromkeys([*tools, *_UNSERVED.get(name, ())]))


def by_tool_name(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Per-tool settings (a ``tool_config``) keyed by toolrig's tool names: ``read_file:`` is read_files'.

    A name a profile gives a tool stands for that tool (several, for a capability name); a tool's own name
    wins over an alias of it written beside it, whatever the order. Names no profile uses are kept as they are.
    """
    out: dict[str, Any] = {}
    aliases: list[tuple[str, Any]] = []
    for name, value in settings.items():
        tools = tools_named(name)
        if not tools or name in tools:
            out[name] = value
        else:
            aliases.append((name, value))
    for name, value in aliases:
        for tool in tools_named(name):
            out.setdefault(tool, value)
    return out
