"""The list of workspaces the user trusts (``toolrig trust``), kept in ``~/.toolrig/trusted.json``.

Trust model: only the user writes this file; a workspace's own files never decide whether it is trusted.
"""

from __future__ import annotations

import json
from pathlib import Path

from toolrig.errors import ConfigError
from toolrig.sandbox.atomic import atomic_write_text
from toolrig.sandbox.paths import toolrig_home

TRUST_FILE = "trusted.json"


def _trust_path() -> Path:
    return toolrig_home() / TRUST_FILE


def trusted_directories() -> list[Path]:
    path = _trust_path()
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"the trust list is unreadable: {exc}", file=path) from None
    return [Path(p) for p in data.get("trusted", []) if isinstance(p, str)]


def is_trusted(root: Path) -> bool:
    root = root.resolve()
    return root in trusted_directories()


def set_trust(root: Path, trusted: bool = True) -> list[Path]:
    root = root.resolve()
    current = [p for p in trusted_directories() if p != root]
    if trusted:
        current.append(root)
    home = toolrig_home()
    home.mkdir(parents=True, exist_ok=True)
    atomic_write_text(_trust_path(), json.dumps({"trusted": [str(p) for p in current]}, indent=2) + "\n")
    return current
