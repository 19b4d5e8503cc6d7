"""Agent Skills (agentskills.io): discovery, parsing and what loading one grants, at the tools' level.

What reads a rig (the skills binding, the capabilities summary, policy's verdicts) is ``toolrig.catalog``.

The names below load on first use: a rig binds ``toolrig.catalog.binding`` at every start-up, and a call
that never touches a skill should not pay for the parser (and YAML) underneath.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolrig.skills.discovery import SkillSet, discover
    from toolrig.skills.skill import Skill, SkillError, parse_skill

__all__ = ["CAPABILITIES_FILE", "Skill", "SkillError", "SkillSet", "discover", "parse_skill"]

CAPABILITIES_FILE = "capabilities.md"  # in the state dir: the summary of what an agent may do (toolrig.catalog)

_HOMES = {
    "Skill": "toolrig.skills.skill",
    "SkillError": "toolrig.skills.skill",
    "parse_skill": "toolrig.skills.skill",
    "SkillSet": "toolrig.skills.discovery",
    "discover": "toolrig.skills.discovery",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
