"""What a tool's declarations say about it to a client: MCP's readOnly/destructive/openWorld hints.

A tool declares ``read_only``/``destructive``/``open_world`` and, on its input fields, the subjects it acts
on. A subject that is a URL, a recipient or a command line reaches beyond the workspace whatever the tool
remembered to set, so those kinds make a tool open-world (and a command line destructive unless the tool
is read-only). Nothing here names a tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OUTWARD_KINDS = frozenset({"url", "recipient", "command"})


@dataclass(frozen=True, slots=True)
class Hints:
    read_only: bool
    destructive: bool | None  # None for read-only tools: MCP ignores the hint there
    open_world: bool


def hints(tool: Any) -> Hints:
    kind = getattr(tool, "subject_kind", None)
    read_only = bool(getattr(tool, "read_only", False))
    destructive = bool(getattr(tool, "destructive", False)) or kind == "command"
    open_world = bool(getattr(tool, "open_world", False)) or kind in OUTWARD_KINDS
    return Hints(read_only, None if read_only else destructive, open_world)
