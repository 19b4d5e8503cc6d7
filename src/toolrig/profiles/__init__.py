"""Tool profiles: toolrig's one catalog under the names and shapes other systems' models are trained on.

``get_profile("claude")`` gives a ``Profile``; ``aliases_of("run_command")`` every name any built-in profile
gives that tool (``Bash``, ``run_terminal_command``), which config patterns match like the tool's own name.
Built in: ``toolrig`` (the identity), ``claude``, ``codebuff``, ``native``, ``camelagi``.
"""

from __future__ import annotations

from functools import cache

from toolrig.errors import UsageError
from toolrig.profiles.profile import Face, Profile, Shaped

DEFAULT = "toolrig"
NAMES = ("toolrig", "claude", "codebuff", "native", "camelagi")

__all__ = [
    "DEFAULT",
    "NAMES",
    "Face",
    "Profile",
    "Shaped",
    "aliases_of",
    "all_faces",
    "canonical_name",
    "get_profile",
    "tools_named",
]

# Names other agents' skill and agent files use that no built-in profile serves as a face: Claude Code's ``LS``
# (gone from its SDK's tool list, still in older files), and its rule that ``Edit`` covers every file-editing
# tool (``MultiEdit`` too).
_UNSERVED: dict[str, tuple[str, ...]] = {"LS": ("list_directory",), "Edit": ("str_replace",)}


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
    return {tool: tuple(names) for tool, names in table.items()}


def aliases_of(tool: str) -> tuple[str, ...]:
    """The names built-in profiles give ``tool`` besides its own (``run_command`` -> Bash, run_terminal_command)."""
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
