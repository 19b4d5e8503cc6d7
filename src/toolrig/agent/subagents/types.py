"""Agent types: what a parent may spawn, from config (``agents:``), organism.yaml and Markdown definitions.

This module defines and parses them; ``loading`` gathers them from every source (organism.yaml included).

Trust model: a definition under the workspace (``organism.yaml``, ``.toolrig/agents``, ``.agents/agents``,
``.claude/agents``) comes with the code it sits in, so it is read only once the workspace is trusted; the
user's own (``~/.toolrig/agents``) always is. Whatever a definition says, a child never exceeds its parent
(``narrowing.py``): a hostile definition can only make a child weaker.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from toolrig.config import AgentConfig
from toolrig.profiles import tools_named

log = logging.getLogger("toolrig.agent")

PROJECT_DIRS = (".toolrig/agents", ".agents/agents", ".claude/agents")
USER_DIR = "agents"  # under the user's toolrig home
MAX_DEFINITION_BYTES = 256_000
TYPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
GENERAL = "general"

# Claude Code's delegation tool, under every name toolrig serves it by.
SPAWN_TOOLS = ("spawn_agents", "Task", "Agent")
_SPAWN_SPEC = re.compile(r"^(?:Agent|Task)\((.*)\)$")
_MCP_FOREIGN = re.compile(r"^mcp__([A-Za-z0-9_-]+?)__(.+)$")
_MODEL_ALIASES = frozenset({"inherit", "sonnet", "opus", "haiku", "default"})


@dataclass(frozen=True)
class AgentType:
    """One spawnable type: its settings as an agent profile, and where it was defined."""

    name: str
    profile: AgentConfig
    source: str  # "config", "organism", "project", "user" or "built-in"
    location: str  # the file (and line) it came from

    @property
    def description(self) -> str:
        return self.profile.description


@dataclass
class AgentTypes:
    types: dict[str, AgentType] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> AgentType | None:
        return self.types.get(name)

    def names(self) -> list[str]:
        return sorted(self.types)


def builtin_general() -> AgentType:
    profile = AgentConfig(description="A general-purpose agent with its parent's tools, for any delegated task.")
    return AgentType(GENERAL, profile, "built-in", "toolrig")


class DefinitionProblem(ValueError):
    """A Markdown definition that cannot be used, with the reason."""


def parse_definition(path: Path, source: str = "user") -> AgentType:
    """Read one ``*.md`` definition: YAML front matter (Claude Code's keys and toolrig's), the body as prompt."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DefinitionProblem(f"cannot read the file: {exc.strerror}") from None
    if len(raw) > MAX_DEFINITION_BYTES:
        raise DefinitionProblem(f"larger than {MAX_DEFINITION_BYTES} bytes")
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    meta, body = split_front_matter(text)
    name = str(meta.get("name") or path.stem)
    if not TYPE_NAME.fullmatch(name):
        raise DefinitionProblem(f"{name[:80]!r} is not a valid agent name (letters, digits, '-', '_', up to 64)")
    notes: list[str] = []
    profile = profile_from_front_matter(meta, body, notes)
    for note in notes:
        log.warning("%s: %s", path, note)
    return AgentType(name, profile, source, str(path))


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text.strip()
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip() == "---":
            head = "\n".join(lines[1:index])
            body = "\n".join(lines[index + 1 :])
            try:
                meta = yaml.safe_load(head) if head.strip() else {}
            except yaml.YAMLError as exc:
                raise DefinitionProblem(f"invalid YAML front matter: {getattr(exc, 'problem', exc)}") from None
            if not isinstance(meta, dict):
                raise DefinitionProblem("the front matter must be a mapping")
            return meta, body.strip()
    raise DefinitionProblem("the front matter has no closing '---'")


def name_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, list):
        return [str(p).strip() for p in value if str(p).strip()]
    raise DefinitionProblem(f"expected a comma-separated string or a list, got {type(value).__name__}")


def toolrig_tool_names(names: list[str], notes: list[str]) -> tuple[list[str], list[str]]:
    """Claude Code's names (Read, Bash, mcp__srv__tool, Agent(a, b)) as toolrig's; also the spawnable types."""
    tools: list[str] = []
    spawns: list[str] = []
    for name in names:
        spec = _SPAWN_SPEC.match(name)
        if spec:
            spawns += [p.strip() for p in spec.group(1).split(",") if p.strip()]
            tools += SPAWN_TOOLS
            continue
        if name in ("Task", "Agent"):
            tools += SPAWN_TOOLS
            continue
        if foreign := tools_named(name):
            tools += foreign
            continue
        mcp = _MCP_FOREIGN.match(name)
        if mcp:
            tools.append(f"{mcp.group(1)}/{mcp.group(2)}")
            continue
        tools.append(name)
    return list(dict.fromkeys(tools)), spawns


_KEYS = {
    "name": "name",
    "description": "description",
    "tools": "tools",
    "disallowedTools": "disallowed_tools",
    "disallowed_tools": "disallowed_tools",
    "model": "model",
    "maxTurns": "max_turns",
    "max_turns": "max_turns",
    "output_mode": "output_mode",
    "outputMode": "output_mode",
    "output_schema": "output_schema",
    "outputSchema": "output_schema",
    "spawns": "spawns",
    "shared_memory": "shared_memory",
    "sharedMemory": "shared_memory",
    "max_budget_usd": "max_budget_usd",
    "timeout_seconds": "timeout_seconds",
    "permissionMode": "permission_mode",
}
# Claude Code keys that mean nothing here; read without a warning.
_QUIET = frozenset({"color", "skills", "hooks", "memory", "mcpServers", "background", "isolation", "effort"})


def profile_from_front_matter(meta: dict[str, Any], body: str, notes: list[str]) -> AgentConfig:
    data: dict[str, Any] = {}
    for key, value in meta.items():
        target = _KEYS.get(str(key))
        if target is None:
            if key not in _QUIET:
                notes.append(f"unknown front matter key {str(key)[:60]!r} ignored")
            continue
        data[target] = value
    data.pop("name", None)
    if "tools" in data:
        tools, spawns = toolrig_tool_names(name_list(data["tools"]), notes)
        data["tools"] = tools
        if spawns:
            data["spawns"] = [*name_list(data.get("spawns")), *spawns]
    if "disallowed_tools" in data:
        data["disallowed_tools"] = toolrig_tool_names(name_list(data["disallowed_tools"]), notes)[0]
    if "spawns" in data:
        data["spawns"] = name_list(data["spawns"])
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or model.strip().lower() in _MODEL_ALIASES):
        data.pop("model")  # 'inherit' and Claude's aliases: the parent's model (toolrig cannot map an alias)
    mode = data.pop("permission_mode", None)
    if mode == "plan":
        data["approvals"] = {"mode": "always"}  # plan mode: nothing changes without asking
    if body:
        data["system_prompt"] = body
    try:
        return AgentConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DefinitionProblem(f"{where}: {first['msg']}") from None
