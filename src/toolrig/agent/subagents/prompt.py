"""What a child is told about being a child: how to hand back its result."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from toolrig.agent.subagents.types import AgentType

if TYPE_CHECKING:
    from toolrig.agent.subagents.hub import SubagentHub

MAX_LISTED = 50

CHILD_NOTE = (
    "\n\n# Delegated task\nYou are a subagent: another agent gave you one task. Do it with your tools and end with "
    "a short answer for that agent; nobody else reads your messages."
)
STRUCTURED_NOTE = (
    "\nYour result is structured: before you answer, call set_output with a value matching this JSON Schema "
    "(if it reports an error, fix the value and call it again):\n{schema}"
)


def child_instructions(kind: AgentType) -> str:
    text = CHILD_NOTE
    schema = kind.profile.output_schema
    if kind.profile.output_mode == "structured" and schema is not None:
        text += STRUCTURED_NOTE.format(schema=json.dumps(schema, ensure_ascii=False)[:8000])
    return text


def agent_types_section(hub: SubagentHub, kind: AgentType | None) -> str:
    """The types a run may spawn (all of them for a root run, its type's ``spawns`` for a child)."""
    names = hub.types.names() if kind is None else [n for n in kind.profile.spawns if hub.types.get(n)]
    if not names:
        return ""
    lines = ["\n\n# Agent types", "spawn_agents (and Agent/Task) can start subagents of these types:"]
    for name in names[:MAX_LISTED]:
        found = hub.types.get(name)
        description = (found.description if found else "").strip().replace("\n", " ")[:300]
        lines.append(f"- {name}: {description}" if description else f"- {name}")
    return "\n".join(lines)
