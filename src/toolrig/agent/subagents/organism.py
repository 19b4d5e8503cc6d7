"""The seed's ``organism.yaml``: each LLM listener as an agent type, its ``tools`` and ``tool_config`` kept.

Trust model: the file sits in the workspace, so it is read only once the workspace is trusted (like the
Markdown definitions); a symlink is refused. What it defines still goes through ``narrowing.py``: a child of
one of its types never exceeds its parent, whatever the file says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from toolrig.agent.subagents.types import (
    SPAWN_TOOLS,
    TYPE_NAME,
    AgentType,
    DefinitionProblem,
    name_list,
    toolrig_tool_names,
)
from toolrig.config import AgentConfig
from toolrig.errors import ConfigError
from toolrig.profiles import by_tool_name

FILE = "organism.yaml"
MAX_BYTES = 1_000_000

# The seed's listener keys that are toolrig's under another name (the rest of AgentConfig's keys pass as they are).
_RENAMED = {"prompt": "system_prompt", "max_iterations": "max_turns"}
# The seed's keys about its own message bus (handlers, payload classes): nothing here to map them to.
_SEED_ONLY = frozenset({"name", "agent", "payload_class", "handler", "broadcast", "cpu_bound", "peers", "llm"})


def load_organism(path: Path) -> tuple[list[AgentType], list[str]]:
    """The agent types ``path`` defines, and notes on what was skipped; a malformed file is a ConfigError."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror}", file=path) from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"larger than {MAX_BYTES} bytes", file=path)
    try:
        data = yaml.safe_load(raw.decode("utf-8", errors="replace").lstrip("\ufeff"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}", file=path, line=line) from None
    except RecursionError:
        raise ConfigError("invalid YAML: nested too deeply", file=path) from None
    if data is None:
        return [], []
    if not isinstance(data, dict):
        raise ConfigError(f"the file must be a mapping, not {_kind(data)}", file=path)
    listeners = data.get("listeners")
    if listeners is None:
        return [], [f"{path}: no 'listeners:' section, so no agent types"]
    if isinstance(listeners, dict):  # ``listeners: {name: {...}}``, the shape toolrig's own ``agents:`` has
        listeners = [{"name": k, **v} if isinstance(v, dict) else v for k, v in listeners.items()]
    if not isinstance(listeners, list):
        raise ConfigError(f"must be a list of listeners, not {_kind(listeners)}", file=path, key="listeners")
    agents = {str(item.get("name")) for item in listeners if isinstance(item, dict) and _is_agent(item)}
    found: list[AgentType] = []
    notes: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(listeners):
        key = f"listeners[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"must be a mapping, not {_kind(item)}", file=path, key=key)
        name = item.get("name")
        if not _is_agent(item):
            notes.append(f"{path}: listener {str(name)[:80]!r} is a code handler, not an agent type (skipped)")
            continue
        if not isinstance(name, str) or not TYPE_NAME.fullmatch(name):
            shown = repr(name)[:80]
            raise ConfigError(
                f"{shown} is not a valid agent name (letters, digits, '-', '_', up to 64)", file=path, key=f"{key}.name"
            )
        if name in seen:
            raise ConfigError(f"listener {name!r} is defined twice", file=path, key=f"{key}.name")
        seen.add(name)
        profile = _profile(item, agents - {name}, path, f"{key}", notes)
        found.append(AgentType(name, profile, "organism", f"{path} ({key})"))
    return found, notes


def _is_agent(listener: dict[Any, Any]) -> bool:
    """The seed's ``agent: true``; a listener with no ``handler`` (only tools and a prompt) is one too."""
    flag = listener.get("agent")
    return flag is True or (flag is None and "handler" not in listener)


def _profile(item: dict[Any, Any], agents: set[str], path: Path, key: str, notes: list[str]) -> AgentConfig:
    data: dict[str, Any] = {}
    for field, value in item.items():
        field = str(field)
        target = _RENAMED.get(field, field)
        if target in AgentConfig.model_fields:
            data[target] = value
        elif field not in _SEED_ONLY:
            notes.append(f"{path}: {key}.{field[:60]} is not an agent setting here (ignored)")
    try:
        if "tools" in data:
            data["tools"] = toolrig_tool_names(name_list(data["tools"]), notes)[0]
        if isinstance(data.get("tool_config"), dict):  # seeds (issue 38): `read_file:` is read_files' settings
            data["tool_config"] = by_tool_name(data["tool_config"])
        # The seed's ``peers`` are what a listener may call: other agents (spawnable types) and tools.
        peers = name_list(item.get("peers"))
        if peers:
            data["spawns"] = [*name_list(data.get("spawns")), *(p for p in peers if p in agents)]
            if data["spawns"] and data.get("tools") is not None:  # calling a peer agent is spawning it
                data["tools"] = [*data["tools"], *SPAWN_TOOLS]
            called = [p for p in peers if p not in agents]
            if called:
                data["tools"] = [*(data.get("tools") or []), *toolrig_tool_names(called, notes)[0]]
        for field in ("disallowed_tools", "spawns"):
            if field in data:
                data[field] = name_list(data[field])
    except DefinitionProblem as exc:
        raise ConfigError(str(exc), file=path, key=key) from None
    try:
        return AgentConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in (key, *first["loc"]))
        message = "unknown setting" if first["type"] == "extra_forbidden" else first["msg"]
        raise ConfigError(message, file=path, key=where) from None


def _kind(value: Any) -> str:
    names: dict[type, str] = {list: "a list", dict: "a mapping", str: "a string"}
    return names.get(type(value), type(value).__name__)
