"""load_skill and read_skill_resource: Agent Skills for a model, one progressive step at a time.

Trust model: skill names and resource paths come from the model and are hostile. A name must be one the
workspace's discovery found; a resource path is read relative to that skill's folder only, component by
component without following any symlink, so nothing outside the folder can be reached through it.

A skill's image (decided by its first bytes, never by its name) is attached as an image part, within the
same limits as an image read from the workspace; other binary files are refused (scripts use them).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field

from toolrig.content import DEFAULT_MAX_IMAGE_BYTES, ImagePart
from toolrig.context import SkillAccess, ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput
from toolrig.documents import MAX_IMAGE_SIDE, image_size, image_type
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox import fdwalk
from toolrig.skills.skill import SKILL_FILE, Skill

MAX_RESOURCES = 200
MAX_RESOURCE_BYTES = 256_000
MAX_IMAGE_BYTES = DEFAULT_MAX_IMAGE_BYTES
# Text media types by file name; content decides text, image or refused, a name only which kind of text.
TEXT_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".csv": "text/csv",
    ".html": "text/html",
    ".htm": "text/html",
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".xml": "application/xml",
    ".toml": "application/toml",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
}


class LoadSkillInput(ToolInput):
    name: str = Field(description="The skill's name, exactly as the list of available skills gives it.")


class LoadSkillOutput(ToolOutput):
    name: str
    directory: str = Field(
        description="The skill's folder, from the workspace (or ~/... for your own skills); its scripts run there."
    )
    instructions: str = Field(description="SKILL.md without its front matter: follow it.")
    resources: list[str] = Field(description="Files in the skill's folder, for read_skill_resource.")
    already_loaded: bool = Field(description="True when this run loaded the skill before; instructions are empty.")
    pre_approved: list[str] = Field(description="Calls the skill's allowed-tools pre-approve for the rest of the run.")
    notes: list[str] = Field(default_factory=list)


class ReadSkillResourceInput(ToolInput):
    name: str = Field(description="The skill's name.")
    path: str = Field(
        description="A file inside the skill's folder, as load_skill listed it (e.g. 'references/api.md')."
    )


class ReadSkillResourceOutput(ToolOutput):
    name: str
    path: str
    media_type: str = Field(description="What the file is, judged by its content: a text type, or an image's.")
    content: str = Field(description="The text; for an image, a line saying it is attached.")
    truncated: bool


def _access(ctx: ToolContext) -> SkillAccess:
    if ctx.skills is None:
        raise ToolError(ErrorType.UNAVAILABLE, "Skills are not available in this context.")
    return ctx.skills


def find_skill(ctx: ToolContext, name: str) -> Skill:
    found = _access(ctx).skills()
    skill = found.get(name)
    if skill is None:
        known = ", ".join(found.names()) or "none"
        raise ToolError(
            ErrorType.NOT_FOUND,
            f"There is no skill named {name!r}.",
            f"Use one of the available skills: {known}.",
        )
    return skill


def shown_folder(directory: Path, root: Path) -> str:
    """The skill's folder as the model is shown it: from the workspace, or ``~/...``, never the user's home.

    The model needs a path its commands can use (run_command runs in the workspace, and a shell expands
    ``~``), not the user's name and home layout, which would then travel in every transcript and log.
    """
    for base, prefix in ((root, ""), (Path.home(), "~/")):
        for folder, start in ((directory, base), (directory.resolve(), base.resolve())):
            if folder.is_relative_to(start):
                relative = folder.relative_to(start).as_posix()
                return prefix + relative if relative != "." else (prefix.rstrip("/") or ".")
    return str(directory)  # outside the workspace and the home (a TOOLRIG_HOME elsewhere): nothing personal in it


def run_key(ctx: ToolContext) -> str:
    return ctx.session_id or ctx.agent_id or "run"


class _NamesSkills:
    """A skill tool whose schema can list the skills found (``name`` as an enum), per workspace."""

    lists_skills = True
    skill_names: tuple[str, ...] = ()

    def with_skill_names(self, names: list[str]) -> Any:
        bound = copy.copy(self)
        bound.skill_names = tuple(names)
        return bound

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = super().input_schema()  # type: ignore[misc]
        if self.skill_names:
            schema = copy.deepcopy(schema)
            schema["properties"]["name"]["enum"] = list(self.skill_names)
        return schema


class LoadSkill(_NamesSkills, Tool[LoadSkillInput, LoadSkillOutput]):
    name = "load_skill"
    aliases = ("skill",)  # the name other agents (Codebuff) give the same tool
    group = "skills"
    read_only = True
    description = (
        "Load an Agent Skill: specialised instructions for a kind of task (listed with their descriptions in "
        "your instructions). Returns the skill's instructions, its folder and its resource files; read those "
        "with read_skill_resource when the instructions point to them. Load a skill once per task."
    )

    def subjects(self, input: LoadSkillInput) -> list[str]:
        return [input.name]

    def execute(self, input: LoadSkillInput, ctx: ToolContext) -> LoadSkillOutput:
        skill = find_skill(ctx, input.name)
        first, granted, notes = _access(ctx).activate(skill, run_key(ctx), ctx.agent_id, ctx.session_id)
        return LoadSkillOutput(
            name=skill.name,
            directory=shown_folder(skill.directory, ctx.workspace.root),
            instructions=skill.body if first else "",
            resources=list_resources(skill.directory),
            already_loaded=not first,
            pre_approved=granted,
            notes=notes if first else ["This skill is already loaded in this run; its instructions are above."],
        )


class ReadSkillResource(_NamesSkills, Tool[ReadSkillResourceInput, ReadSkillResourceOutput]):
    name = "read_skill_resource"
    group = "skills"
    read_only = True
    description = (
        "Read one file of a loaded skill (a reference, a template, a script's source, an image) by its path "
        "inside the skill's folder. Only files inside that folder can be read; an image comes back attached. "
        "To run a skill's script, use run_command."
    )

    def subjects(self, input: ReadSkillResourceInput) -> list[str]:
        # The file the tool opens ('./x', 'a//x' read as 'x', 'a/x'): a rule on 'skill/private/*' sees that.
        try:
            return [f"{input.name}/{'/'.join(resource_parts(input.path))}"]
        except ToolError:  # refused by the tool as well
            return [f"{input.name}/{input.path}"]

    def execute(self, input: ReadSkillResourceInput, ctx: ToolContext) -> ReadSkillResourceOutput:
        skill = find_skill(ctx, input.name)
        parts = resource_parts(input.path)
        root = skill.directory.resolve()
        _refuse_links(root, parts, input.path)
        try:
            fd = fdwalk.open_regular(root, parts)
        except FileNotFoundError:
            raise ToolError(
                ErrorType.NOT_FOUND,
                f"The skill {skill.name!r} has no file {input.path!r}.",
                "Use one of the resources load_skill listed.",
            ) from None
        except NotADirectoryError:
            raise ToolError(ErrorType.NOT_FOUND, f"The skill {skill.name!r} has no file {input.path!r}.") from None
        try:
            data = fdwalk.read_fd(fd, MAX_RESOURCE_BYTES)
            media_type = image_type(data)
            if media_type is not None and len(data) > MAX_RESOURCE_BYTES:
                data += fdwalk.read_fd(fd, MAX_IMAGE_BYTES - len(data))
        finally:
            os.close(fd)
        shown = "/".join(parts)
        if media_type is not None:
            return _image(skill.name, shown, data, media_type)
        if b"\x00" in data[:8192]:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"{input.path!r} is a binary file.",
                "Binary assets are used by the skill's scripts; run them with run_command instead of reading them.",
            )
        truncated = len(data) > MAX_RESOURCE_BYTES
        text = data[:MAX_RESOURCE_BYTES].decode("utf-8", errors="replace")
        kind = TEXT_TYPES.get(PurePosixPath(shown).suffix.lower(), "text/plain")
        return ReadSkillResourceOutput(name=skill.name, path=shown, media_type=kind, content=text, truncated=truncated)


def _image(skill: str, shown: str, data: bytes, media_type: str) -> ReadSkillResourceOutput:
    """The image attached, within the limits a provider accepts (bytes, pixels a side), or a clear refusal."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolError(
            ErrorType.TOO_LARGE,
            f"{shown!r} is an image larger than {MAX_IMAGE_BYTES:,} bytes.",
            "Images in a skill's folder must be small enough for a model to take.",
        )
    size = image_size(data, media_type)
    if size is None:
        raise ToolError(ErrorType.INVALID_INPUT, f"{shown!r} starts like a {media_type} image but is damaged.")
    if max(size) > MAX_IMAGE_SIDE:
        raise ToolError(
            ErrorType.TOO_LARGE, f"{shown!r} is a {size[0]}x{size[1]} image; at most {MAX_IMAGE_SIDE} pixels a side."
        )
    line = f"{shown} ({media_type}, {size[0]}x{size[1]}, {len(data):,} bytes) is attached as an image."
    output = ReadSkillResourceOutput(name=skill, path=shown, media_type=media_type, content=line, truncated=False)
    return output.attach_content(ImagePart.of(data, media_type))


def resource_parts(path: str) -> list[str]:
    """The path's components, refused when it is absolute, climbs out or names something hidden."""
    if not path or "\x00" in path or "\\" in path:
        raise ToolError(ErrorType.INVALID_INPUT, "The path is empty or contains a NUL byte or a backslash.")
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        raise _outside(path)
    parts = [p for p in pure.parts if p != "."]
    if not parts or any(p == ".." for p in parts):
        raise _outside(path)
    return parts


def _refuse_links(root: Path, parts: list[str], spelled: str) -> None:
    """A clear refusal for a link on the way (the no-follow open refuses it anyway, with a vaguer message)."""
    current = root
    for part in parts:
        current = current / part
        if current.is_symlink():
            raise ToolError(
                ErrorType.DENIED,
                f"{spelled!r} goes through a symbolic link; a skill's resources are read only from its own folder.",
            )


def _outside(path: str) -> ToolError:
    return ToolError(
        ErrorType.DENIED,
        f"{path!r} is outside the skill's folder.",
        "Give a path relative to the skill's folder, as load_skill listed it.",
    )


def list_resources(directory: Path) -> list[str]:
    """The skill's files (not SKILL.md, nothing hidden, no links followed), shallowest first, capped."""
    found: list[str] = []
    root = directory.resolve()
    for current, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(current, d)))
        here = Path(current)
        for name in sorted(files):
            path = here / name
            if name.startswith(".") or path.is_symlink() or (here == root and name == SKILL_FILE):
                continue
            found.append(path.relative_to(root).as_posix())
            if len(found) >= MAX_RESOURCES:
                return found
    return found


TOOLS = [LoadSkill(), ReadSkillResource()]
