"""Agent Skills (agentskills.io): discovery, parsing and what loading one grants; the capabilities summary.

The names below load on first use: a rig binds ``toolrig.skills.binding`` at every start-up, and a call
that never touches a skill should not pay for the parser (and YAML) underneath.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolrig.skills.discovery import SkillSet, discover
    from toolrig.skills.skill import Skill, SkillError, parse_skill

__all__ = ["Skill", "SkillError", "SkillSet", "discover", "parse_skill"]

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
