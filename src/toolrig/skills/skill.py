"""One Agent Skill: a folder ``<name>/SKILL.md`` with YAML front matter, parsed the lenient way.

Trust model: a SKILL.md comes from a repository or a download and is hostile text. Parsing never runs
anything, never follows the file outside its folder, and caps what it reads; a skill that cannot be read
well enough is skipped with a warning rather than half-loaded.

The format is agentskills.io's: ``name`` and ``description`` are required, ``license``, ``compatibility``,
``metadata`` and ``allowed-tools`` optional. Other agents' extra keys (Claude Code's
``disable-model-invocation``, ``argument-hint``, ``model``...) are kept in ``extra`` and otherwise ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 512_000
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
SPEC_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# What we still accept, with a warning, from skills written before the spec settled (underscores, capitals).
LENIENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_KNOWN = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})


class SkillError(Exception):
    """A SKILL.md that cannot be loaded at all (the reason is the message)."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    directory: Path
    body: str
    scope: str  # "project", "user" or "config": where discovery found it
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def location(self) -> Path:
        return self.directory / SKILL_FILE


def name_problems(name: str) -> list[str]:
    """What the specification says is wrong with a skill name (empty when it is a valid one)."""
    problems = []
    if not 1 <= len(name) <= MAX_NAME:
        problems.append(f"the name must be 1-{MAX_NAME} characters")
    if not SPEC_NAME.match(name):
        problems.append(
            "the name may use only lowercase letters, digits and single hyphens, not at the start or the end"
        )
    return problems


def parse_skill(directory: Path, text: str, scope: str) -> Skill:
    """Parse a SKILL.md's text; raise ``SkillError`` when it cannot be a skill, warn about everything else."""
    warnings: list[str] = []
    match = _FRONT.match(text)
    if match is None:
        raise SkillError("SKILL.md does not start with YAML front matter between '---' lines")
    data = _load_yaml(match.group(1), warnings)
    body = text[match.end() :].lstrip("\r\n")
    description = data.get("description")
    if isinstance(description, list | dict) or description is None or not str(description).strip():
        raise SkillError("the front matter has no description, so a model could never know when to use it")
    description = " ".join(str(description).split())
    if len(description) > MAX_DESCRIPTION:
        warnings.append(f"the description is {len(description)} characters; the limit is {MAX_DESCRIPTION}")
    raw_name = data.get("name")
    if raw_name is None or not str(raw_name).strip():
        warnings.append(f"the front matter has no name; using the folder's name {directory.name!r}")
        raw_name = directory.name
    name = str(raw_name).strip()
    problems = name_problems(name)
    if problems:
        if not LENIENT_NAME.match(name):
            raise SkillError(f"the name {name!r} is not usable: " + "; ".join(problems))
        warnings.extend(f"{p} (got {name!r})" for p in problems)
    if name != directory.name:
        warnings.append(f"the name {name!r} differs from its folder's name {directory.name!r}")
    compatibility = _optional_text(data, "compatibility", warnings)
    if compatibility is not None and len(compatibility) > MAX_COMPATIBILITY:
        warnings.append(f"compatibility is {len(compatibility)} characters; the limit is {MAX_COMPATIBILITY}")
    return Skill(
        name=name,
        description=description,
        directory=directory,
        body=body,
        scope=scope,
        license=_optional_text(data, "license", warnings),
        compatibility=compatibility,
        metadata=_metadata(data.get("metadata"), warnings),
        allowed_tools=split_allowed_tools(data.get("allowed-tools"), warnings),
        extra={k: v for k, v in data.items() if k not in _KNOWN},
        warnings=tuple(warnings),
    )


def read_skill(directory: Path, scope: str) -> Skill:
    """Read ``directory/SKILL.md`` (a regular file, not a link out of the folder) and parse it."""
    path = directory / SKILL_FILE
    if path.is_symlink() or not path.is_file():
        raise SkillError("SKILL.md is missing or is not a regular file")
    with path.open("rb") as handle:
        data = handle.read(MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise SkillError(f"SKILL.md is larger than {MAX_SKILL_BYTES:,} bytes")
    return parse_skill(directory, data.decode("utf-8", errors="replace"), scope)


def split_allowed_tools(value: object, warnings: list[str] | None = None) -> tuple[str, ...]:
    """``allowed-tools`` as the spec writes it (space-separated), as Claude Code does (commas) or as a list.

    Parentheses group: ``Bash(git add:*) Read`` is two entries, the first with its space kept.
    """
    if value is None:
        return ()
    if isinstance(value, list):
        items = [str(v) for v in value if isinstance(v, str | int | float)]
        return tuple(entry for item in items for entry in split_allowed_tools(item))
    if not isinstance(value, str):
        if warnings is not None:
            warnings.append("allowed-tools is neither a string nor a list; ignored")
        return ()
    entries: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in value:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (ch.isspace() or ch == ","):
            if current:
                entries.append("".join(current))
                current = []
            continue
        current.append(ch)
    if current:
        entries.append("".join(current))
    return tuple(entries)


def _load_yaml(text: str, warnings: list[str]) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        # The usual breakage in the wild: an unquoted colon in a one-line value ("description: Use when: ...").
        data = _load_yaml_quoted(text)
        if data is None:
            raise SkillError("the front matter is not valid YAML") from None
        warnings.append("the front matter is not valid YAML; read it with its values quoted")
    if not isinstance(data, dict):
        raise SkillError("the front matter is not a YAML mapping")
    return {str(k): v for k, v in data.items()}


def _load_yaml_quoted(text: str) -> dict[str, Any] | None:
    lines = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        value = value.strip()
        if sep and key and not key.startswith((" ", "\t", "-")) and value and value[0] not in "'\"|>[{":
            line = f"{key}: '{value.replace(chr(39), chr(39) * 2)}'"
        lines.append(line)
    try:
        data = yaml.safe_load("\n".join(lines))
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def _optional_text(data: dict[str, Any], key: str, warnings: list[str]) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, list | dict):
        warnings.append(f"{key} should be text; ignored")
        return None
    return str(value).strip() or None


def _metadata(value: object, warnings: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        warnings.append("metadata should be a mapping of strings; ignored")
        return {}
    kept: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, str | int | float | bool) or item is None:
            kept[str(key)] = "" if item is None else str(item)
        else:  # nested values are not in the spec; never serialised (a YAML alias bomb would explode here)
            warnings.append(f"metadata.{key} is not a plain value; ignored")
    return kept
