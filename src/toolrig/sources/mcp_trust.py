"""Trusted MCP tool definitions: what each configured server's tools looked like when the user accepted them.

Trust model: a tool's name, description and schemas are read by the model, so a server that changes them
later could steer it (prompt injection). The first listing of a server is trusted on first use; after
that a changed definition is blocked until the user accepts it with ``toolrig mcp trust NAME``. The store
is one JSON file under the user's toolrig home, written atomically; it holds definitions, never secrets.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrig.config import McpServerConfig
from toolrig.errors import ConfigError
from toolrig.sandbox.atomic import atomic_write_text
from toolrig.sandbox.paths import toolrig_home

log = logging.getLogger("toolrig.mcp")

TRUST_FILE = "mcp_trust.json"
_FINGERPRINTED = ("name", "description", "inputSchema", "outputSchema")
# Fingerprinted only when present (a definition without them hashes as it always did): the title stands in
# for a missing description, and with ``trust_annotations`` a readOnlyHint decides whether a call asks.
_WHEN_PRESENT = ("title", "annotations")


def definition_fingerprint(definition: dict[str, Any]) -> str:
    """A hash of what the model reads and approvals rely on: name, description, schemas, title, annotations."""
    picked = {key: definition.get(key) for key in _FINGERPRINTED}
    picked.update({key: definition[key] for key in _WHEN_PRESENT if definition.get(key) is not None})
    canonical = json.dumps(picked, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def launch_fingerprint(config: McpServerConfig) -> str:
    """What identifies a server's program (not its secrets): a new command or URL is a new server."""
    spec = {"command": config.command, "args": config.args, "cwd": config.cwd, "url": config.url}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]


@dataclass
class TrustDiff:
    """How a live listing differs from the trusted one, tool name by tool name."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def _stored_print(entry: dict[str, Any]) -> str:
    """The fingerprint of the stored definition as computed now (a store written before titles counted)."""
    stored = entry.get("definition")
    return definition_fingerprint(stored) if isinstance(stored, dict) else ""


class TrustStore:
    """Trusted definitions per server, keyed by server name and bound to the server's launch fingerprint."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or toolrig_home() / TRUST_FILE

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"the MCP trust store is unreadable: {exc}", file=self.path) from None
        servers = data.get("servers") if isinstance(data, dict) else None
        return servers if isinstance(servers, dict) else {}

    def trusted(self, server: str, config: McpServerConfig) -> dict[str, dict[str, Any]] | None:
        """The trusted definitions by tool name, or None when this server (as configured) was never seen."""
        record = self._read().get(server)
        if not isinstance(record, dict) or record.get("launch") != launch_fingerprint(config):
            return None
        tools = record.get("tools")
        if not isinstance(tools, dict):
            return None
        return {name: entry for name, entry in tools.items() if isinstance(entry, dict)}

    def diff(self, server: str, config: McpServerConfig, live: list[dict[str, Any]]) -> TrustDiff:
        trusted = self.trusted(server, config) or {}
        names = {d["name"] for d in live}
        result = TrustDiff(removed=sorted(set(trusted) - names))
        for definition in live:
            known = trusted.get(definition["name"])
            if known is None:
                result.added.append(definition["name"])
            elif definition_fingerprint(definition) not in (known.get("fingerprint"), _stored_print(known)):
                result.changed.append(definition["name"])
        return result

    def accept(self, server: str, config: McpServerConfig, live: list[dict[str, Any]]) -> None:
        """Trust exactly this listing of the server's tools (replacing what was trusted before)."""
        servers = self._read()
        servers[server] = {
            "launch": launch_fingerprint(config),
            "tools": {d["name"]: {"fingerprint": definition_fingerprint(d), "definition": d} for d in live},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"servers": servers}, indent=1, sort_keys=True, ensure_ascii=False)
        atomic_write_text(self.path, text + "\n")
        log.info("trusted %d tool definitions of MCP server %r", len(live), server)
