"""What a rig hands the skill and catalog tools through their ToolContext (``ctx.skills``, ``ctx.catalog``).

A rig builds these once and hands them to its executor; tools see only the narrow protocols in
``toolrig.context``, never the rig. (Was ``toolrig.skills.binding``: it reads the rig, skills sit below tools.)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolrig.catalog import RigParts
from toolrig.profiles import Profile, get_profile

# What these bind is used by a few tools only; its modules (the skill parser, YAML, the capabilities summary)
# load on first use, not at every rig's start-up.
if TYPE_CHECKING:
    from toolrig.catalog.capabilities import Theme
    from toolrig.skills.discovery import SkillSet
    from toolrig.skills.skill import Skill

log = logging.getLogger("toolrig.skills")


def for_schemas(rig: RigParts, tools: list[Any]) -> list[Any]:
    """The tools as a model is shown them: a skill tool lists this workspace's skill names as an enum."""
    if not any(getattr(t, "lists_skills", False) for t in tools):
        return tools
    names = skills_of(rig).names()
    return [t.with_skill_names(names) if getattr(t, "lists_skills", False) else t for t in tools]


def skills_of(rig: RigParts) -> SkillSet:
    """The skills this rig's workspace offers (trust and ``skills.paths`` applied)."""
    from toolrig.skills.discovery import workspace_skills

    return workspace_skills(rig.workspace.root, rig.config.skills.paths)


AsyncGrouper = Callable[[list["Theme"]], Awaitable["list[Theme] | None"]]


class RigCatalog:
    """``grouper``, when given (by whoever holds a model: an agent run, the CLI), phrases the themes.

    The Rig's own has none; a run passes ``with_grouper``'s copy in its call scope, so one run's model never
    answers for another's calls.
    """

    def __init__(self, rig: RigParts, grouper: AsyncGrouper | None = None, profile: Profile | None = None) -> None:
        self._rig = rig
        self.grouper = grouper
        self.profile = profile  # the names the calling model speaks (None: the tools' own)

    def for_caller(self, *, grouper: AsyncGrouper | None = None, profile: Profile | None = None) -> RigCatalog:
        """A copy for one caller's scope: its model phrases the themes, its profile names the tools."""
        return RigCatalog(self._rig, grouper or self.grouper, profile or self.profile)

    def offered(self, agent: str | None) -> list[Any]:
        """The tools ``agent`` is offered, under the names the calling model speaks (its profile's)."""
        from toolrig.catalog import verdicts

        tools = verdicts.offered(self._rig, agent)
        from toolrig.adapters.faces import faced

        return faced(tools, self.profile or get_profile(None))  # each capability once, as the model is shown

    async def refresh_capabilities(self, agent: str | None) -> tuple[str, str]:
        from toolrig.catalog import capabilities

        regrouped = None
        if self.grouper is not None:
            try:
                regrouped = await self.grouper(capabilities.themes(self._rig, agent))
            except Exception as exc:  # the model is a nicety here: the deterministic grouping stands in
                log.warning("capabilities: the model's grouping failed, grouping by tool group: %s", exc)
        return capabilities.refresh(self._rig, agent, regrouped)


class RigSkills:
    """Discovery on demand, and per run: which skills are loaded and what their ``allowed-tools`` granted."""

    def __init__(self, rig: RigParts) -> None:
        self._rig = rig
        self._lock = threading.Lock()
        self._loaded: dict[str, set[str]] = {}
        self._warned: set[str] = set()

    def skills(self) -> SkillSet:
        found = skills_of(self._rig)
        for warning in found.warnings:  # each once per rig, not at every call
            if warning not in self._warned:
                self._warned.add(warning)
                log.warning("toolrig skills: %s", warning)
        return found

    def activate(
        self, skill: Skill, run: str, agent: str | None, session: str | None = None
    ) -> tuple[bool, list[str], list[str]]:
        from toolrig.catalog import verdicts
        from toolrig.skills.allowed import to_patterns

        with self._lock:
            loaded = self._loaded.setdefault(run, set())
            if skill.name in loaded:
                return False, [], []
            loaded.add(skill.name)
        offered = self._rig.registry_for(agent)
        patterns, notes = to_patterns(
            skill.allowed_tools, lambda name: offered.find(name) is not None, self._folder_spellings(skill)
        )
        if patterns and session is None:  # a grant holds for one run, and this call names none
            return True, [], [*notes, "allowed-tools were not applied: this call is not part of a session (a run)"]
        try:
            verdicts.preapprove(self._rig, patterns, f"skills.{skill.name}.allowed-tools", agent, session or "")
        except ValueError as exc:  # a pattern the allowlist cannot read: grant nothing rather than half
            return True, [], [*notes, f"allowed-tools were not applied: {exc}"]
        if patterns:
            log.info("skill %s pre-approved %s for run %s", skill.name, patterns, run)
        return True, patterns, notes

    def _folder_spellings(self, skill: Skill) -> list[str]:
        """Where a model may say the skill's folder is: as load_skill shows it, resolved, from the workspace."""
        shown = str(skill.directory)
        resolved = skill.directory.resolve()
        spellings = [shown, str(resolved)]
        if resolved.is_relative_to(self._rig.workspace.root.resolve()):
            spellings.append(str(resolved.relative_to(self._rig.workspace.root.resolve())))
        elif resolved.is_relative_to(Path.home().resolve()):  # a user skill: load_skill shows ~/...
            spellings.append("~/" + resolved.relative_to(Path.home().resolve()).as_posix())
        return list(dict.fromkeys(spellings))
