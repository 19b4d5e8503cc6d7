"""Loading: the user's ``~/.toolrig/config.yaml``, then the workspace's ``.toolrig/config.yaml``, merged.

Trust model: the user's own file is trusted. A workspace's file comes with the code it sits in, so until
the user runs ``toolrig trust`` it may only narrow what the user allows (``toolrig.config.narrowing``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolrig.config.base import defaults
from toolrig.config.narrowing import merge_narrowing, pending_tool_config
from toolrig.config.schema import Config
from toolrig.config.source import validate_file
from toolrig.config.trust import is_trusted
from toolrig.errors import ConfigError
from toolrig.sandbox.paths import STATE_DIR_NAME, toolrig_home

log = logging.getLogger("toolrig.config")

CONFIG_FILE = "config.yaml"


@dataclass
class LoadedConfig:
    """The merged config and where each part came from, so later errors can still name file and line."""

    config: Config
    files: list[Path] = field(default_factory=list)
    trusted: bool = False
    warnings: list[str] = field(default_factory=list)
    # An untrusted workspace's tool settings, by (agent or None, tool): narrowed field by field against each
    # tool's own settings model when the Rig resolves them (`narrow_settings`), since only the tool knows it.
    pending_tool_config: dict[tuple[str | None, str], dict[str, Any]] = field(default_factory=dict)
    locations: dict[tuple[str, ...], tuple[Path, int]] = field(default_factory=dict)

    def where(self, *keys: str) -> tuple[Path | None, int | None]:
        """The file and line that set ``keys`` (e.g. ``("tool_config", "fetch_url")``), best effort."""
        for depth in range(len(keys), 0, -1):
            found = self.locations.get(tuple(keys[:depth]))
            if found:
                return found
        return (self.files[-1] if self.files else None), None


def _applied_lines(
    lines: dict[tuple[str, ...], int], workspace: Config, merged: Config, user: Config
) -> dict[tuple[str, ...], int]:
    """The workspace file's line numbers for the values that reached the merged config, keyed where they landed."""
    ws, into, base = workspace.model_dump(), merged.model_dump(), user.model_dump()
    out: dict[tuple[str, ...], int] = {}
    for key, line in lines.items():
        landed = _landed(key, ws, into, base)
        if landed is not None:
            out[landed] = line
    return out


def _landed(key: tuple[str, ...], ws: Any, into: Any, base: Any) -> tuple[str, ...] | None:
    out: list[str] = []
    for part in key:
        if isinstance(ws, list) and isinstance(into, list) and part.isdigit() and int(part) < len(ws):
            item = ws[int(part)]
            start = len(base) if isinstance(base, list) else 0
            index = next((j for j in range(start, len(into)) if into[j] == item), None)
            if index is None:
                return None
            out.append(str(index))
            ws, into, base = item, into[index], None
        elif isinstance(ws, dict) and isinstance(into, dict) and part in ws and part in into:
            out.append(part)
            ws, into, base = ws[part], into[part], base.get(part) if isinstance(base, dict) else None
        else:
            return None
    return tuple(out) if ws == into else None


def _merge_trusted(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_trusted(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(root: str | os.PathLike[str] = ".", *, user_file: Path | None = None) -> LoadedConfig:
    """Read, validate and merge the user's and the workspace's config files."""
    root_path = Path(root).resolve()
    user_path = user_file or toolrig_home() / CONFIG_FILE
    workspace_path = root_path / STATE_DIR_NAME / CONFIG_FILE
    user_config = defaults(Config)
    loaded = LoadedConfig(user_config)
    user_data: dict[str, Any] = {}
    if user_path.is_file():
        user_config, lines = validate_file(user_path)
        user_data = user_config.model_dump(exclude_unset=True)
        loaded.files.append(user_path)
        loaded.locations.update({k: (user_path, v) for k, v in lines.items()})
    loaded.config = user_config
    if workspace_path.is_file() and workspace_path.resolve() != user_path.resolve():
        workspace_config, lines = validate_file(workspace_path)
        loaded.files.append(workspace_path)
        loaded.trusted = is_trusted(root_path)
        if loaded.trusted:
            loaded.locations.update({k: (workspace_path, v) for k, v in lines.items()})
            merged = _merge_trusted(user_data, workspace_config.model_dump(exclude_unset=True))
            loaded.config = Config.model_validate(merged)
        else:
            narrowed = merge_narrowing(user_config, workspace_config, "", loaded.warnings)
            loaded.pending_tool_config = pending_tool_config(workspace_config)
            loaded.config = Config.model_validate(narrowed.model_dump())
            # Only the lines that took effect, at the index they landed on: an ignored line never decides.
            applied = _applied_lines(lines, workspace_config, loaded.config, user_config)
            loaded.locations.update({k: (workspace_path, v) for k, v in applied.items()})
            for warning in loaded.warnings:
                log.warning("%s: %s", workspace_path, warning)
    return loaded


def config_from(value: LoadedConfig | Config | dict[str, Any] | str | os.PathLike[str]) -> LoadedConfig:
    """Accept loaded files, a Config, a plain dict, or the path of a YAML file, for ``Rig(config=...)``."""
    if isinstance(value, LoadedConfig):
        return value
    if isinstance(value, Config):
        return LoadedConfig(value, trusted=True)
    if isinstance(value, dict):
        try:
            return LoadedConfig(Config.model_validate(value), trusted=True)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            key = ".".join(str(p) for p in first["loc"])
            raise ConfigError(first["msg"], key=key) from None
    path = Path(value)
    config, lines = validate_file(path)
    return LoadedConfig(config, files=[path], trusted=True, locations={k: (path, v) for k, v in lines.items()})
