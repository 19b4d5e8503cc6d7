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
    # The workspace's file while it is not trusted: what it set may narrow, never stop toolrig (see `reject`).
    untrusted_file: Path | None = None

    def warn(self, text: str, line: int | None = None) -> None:
        """Record and log, once, a warning about the untrusted workspace's file, naming it (and the line)."""
        where = f"{self.untrusted_file}:{line}" if line else str(self.untrusted_file)
        if self.untrusted_file is not None and not text.startswith(str(self.untrusted_file)):
            text = f"{where}: {text}"
        if text not in self.warnings:
            self.warnings.append(text)
            log.warning("%s", text)

    def reject(self, message: str, keys: tuple[str, ...], key: str) -> None:
        """A configured value that cannot be used: the user's error, or a warning if the untrusted workspace set it.

        A cloned repository's file must never stop toolrig or send the user off to fix their own valid file:
        the value is left unused (it narrows nothing it cannot name) and the warning names the workspace's line.
        """
        file, line = self.where(*keys)
        if file is None or self.untrusted_file is None or file != self.untrusted_file:
            raise ConfigError(message, file=file, key=key, line=line)
        self.warn(f"{key}: {message} (ignored: this workspace is not trusted)", line)

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


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``, section by section (a mapping merges into a mapping; anything else replaces)."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
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
            merged = deep_merge(user_data, workspace_config.model_dump(exclude_unset=True))
            loaded.config = Config.model_validate(merged)
        else:
            _narrow_into(loaded, workspace_path, workspace_config, lines)
    return loaded


def _narrow_into(loaded: LoadedConfig, path: Path, workspace: Config, lines: dict[tuple[str, ...], int]) -> None:
    """The untrusted workspace's file applied over the user's config by each field's rule."""
    user_config = loaded.config
    loaded.untrusted_file = path
    warnings: list[str] = []
    narrowed = merge_narrowing(user_config, workspace, "", warnings)
    loaded.pending_tool_config = pending_tool_config(workspace)
    loaded.config = Config.model_validate(narrowed.model_dump())
    # A user's line whose value the workspace changed no longer describes it: the workspace's line does.
    user, merged = user_config.model_dump(), loaded.config.model_dump()
    for key in [k for k in loaded.locations if _at(user, k) != _at(merged, k)]:
        source = next((key[:d] for d in range(len(key), 0, -1) if key[:d] in lines), None)
        if source is None:
            del loaded.locations[key]
        else:
            loaded.locations[key] = (path, lines[source])
    # Only the lines that took effect, at the index they landed on: an ignored line never decides.
    applied = _applied_lines(lines, workspace, loaded.config, user_config)
    loaded.locations.update({k: (path, v) for k, v in applied.items()})
    # Tool settings wait for each tool's model (pending_tool_config): their lines name this file.
    for key, line in lines.items():
        pending = key[:1] == ("tool_config",) or (key[:1] == ("agents",) and key[2:3] == ("tool_config",))
        if pending and len(key) > (1 if key[0] == "tool_config" else 3):
            loaded.locations.setdefault(key, (path, line))
    for warning in warnings:
        loaded.warn(warning, _warning_line(warning, lines))


_MISSING = object()


def _at(data: Any, key: tuple[str, ...]) -> Any:
    for part in key:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return data


def _warning_line(warning: str, lines: dict[tuple[str, ...], int]) -> int | None:
    """The line of the key a narrowing warning quotes first (``'agents.x.tools'`` or ``'llm.max_turns: 90'``)."""
    quoted = warning.split("'", 2)[1] if warning.count("'") >= 2 else ""
    keys = tuple(quoted.split(":", 1)[0].strip().split("."))
    return next((lines[keys[:d]] for d in range(len(keys), 0, -1) if keys[:d] in lines), None)


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
