"""Agent Skills (agentskills.io): discovery, parsing and what loading one grants; the capabilities summary."""

from __future__ import annotations

from toolrig.skills.discovery import SkillSet, discover
from toolrig.skills.skill import Skill, SkillError, parse_skill

__all__ = ["Skill", "SkillError", "SkillSet", "discover", "parse_skill"]
