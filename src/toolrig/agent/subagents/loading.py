"""Where agent types come from: config, organism.yaml, the user's and a trusted workspace's Markdown definitions.

``toolrig.agent.subagents.types`` parses one definition; this module finds and gathers them all.

Trust model: as ``types``: a workspace's definitions are read only once the workspace is trusted; symlinks
are never followed to a definition.
"""

from __future__ import annotations

import logging
from pathlib import Path

from toolrig.agent.subagents.organism import FILE, load_organism
from toolrig.agent.subagents.types import (
    GENERAL,
    PROJECT_DIRS,
    USER_DIR,
    AgentType,
    AgentTypes,
    DefinitionProblem,
    builtin_general,
    parse_definition,
)
from toolrig.config import LoadedConfig, is_trusted
from toolrig.sandbox.paths import toolrig_home

log = logging.getLogger("toolrig.agent")


def load_agent_types(root: Path, loaded: LoadedConfig, *, log_warnings: bool = True) -> AgentTypes:
    """Every type this workspace offers, the first definition of a name winning.

    The order: config, the workspace's organism.yaml, project Markdown, user Markdown, built-in.
    """
    found = AgentTypes()
    for name, profile in loaded.config.agents.items():
        file, line = loaded.where("agents", name)
        where = f"{file}:{line}" if file and line else str(file or "config")
        found.types[name] = AgentType(name, profile, "config", where)
    trusted = is_trusted(root)
    _add_organism(found, root, trusted)
    for rel in PROJECT_DIRS:
        directory = root / rel
        if not directory.is_dir():
            continue
        files = _definition_files(directory)
        if not trusted:
            if files:
                found.warnings.append(
                    f"{directory}: {len(files)} agent definition(s) ignored: this workspace is not trusted "
                    "(run `toolrig trust` to use them)"
                )
            continue
        _add_files(found, files, "project")
    _add_files(found, _definition_files(toolrig_home() / USER_DIR), "user")
    found.types.setdefault(GENERAL, builtin_general())
    if log_warnings:
        for warning in found.warnings:
            log.warning("%s", warning)
    return found


def _add_organism(found: AgentTypes, root: Path, trusted: bool) -> None:
    """The seed's ``organism.yaml`` in the workspace root: each listener a type (trusted workspaces only)."""
    path = root / FILE
    if not path.is_symlink() and not path.is_file():
        return
    if not trusted:
        found.warnings.append(
            f"{path}: its listeners are ignored as agent types: this workspace is not trusted "
            "(run `toolrig trust` to use them)"
        )
        return
    if path.is_symlink() or not path.is_file():
        found.warnings.append(f"{path}: ignored: agent definitions are regular files, not symlinks")
        return
    types, notes = load_organism(path)  # a malformed file is a ConfigError, like a malformed config file
    found.warnings.extend(notes)
    for agent in types:
        found.types.setdefault(agent.name, agent)  # config's ``agents:`` wins over the same name here


def _definition_files(directory: Path) -> list[Path]:
    if not directory.is_dir() or directory.is_symlink():
        return []
    # A symlink could point a trusted name at any file on the machine: definitions are regular files only.
    return sorted(p for p in directory.glob("*.md") if p.is_file() and not p.is_symlink())


def _add_files(found: AgentTypes, files: list[Path], source: str) -> None:
    for path in files:
        try:
            agent = parse_definition(path, source)
        except DefinitionProblem as exc:
            found.warnings.append(f"{path}: {exc} (definition ignored)")
            continue
        if agent.name in found.types:
            continue  # an earlier source (config, then project, then user) defines it
        found.types[agent.name] = agent
