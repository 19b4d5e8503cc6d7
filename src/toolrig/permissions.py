"""Whose permissions a call is judged by: one agent's view of the configuration, passed with the call.

A call used to name its agent by id, and the gate looked the id up in ``config.agents``; a subagent's
narrowed profile was registered there under its id while it ran and removed when it ended. A saved run
state is input, so a resumed child whose id named a configured agent replaced that agent's profile and then
deleted it (hostile review 2026-11-28, N1). Here the permissions are an object the caller holds: a
configured agent's view is built once with the policy, a child's is made from its parent's and handed to
the child's run; nothing is registered, and an id is only ever a label (the audit's, a memory namespace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolrig.config import AgentConfig


@dataclass(frozen=True, eq=False)
class AgentView:
    """One caller's permissions: a configured agent, the global settings (no agent), or a subagent's.

    ``name`` is the configured agent whose section of the config this is (None for the global settings and
    for a subagent, whose profile is its own object and never a key into the config). ``label`` is how rules,
    refusals and the audit name it. ``owner`` is the configured agent whose lasting answers ("allow always")
    and per-agent rate buckets it shares: itself, or a subagent's root. ``memo`` holds what the policy, the
    rate limiter and the rig work out for this view on first use; it lives and dies with the view.
    """

    name: str | None
    profile: AgentConfig | None
    label: str | None
    owner: str | None
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def configured(self) -> bool:
        """Whether this is a section of the config (a configured agent or the global settings), not a child's."""
        return self.name is not None or self.profile is None

    def child(self, label: str, profile: AgentConfig) -> AgentView:
        """A subagent's view: its own (narrowed) profile, sharing this view's owner."""
        return AgentView(None, profile, label, self.owner)


def configured(name: str | None, profile: AgentConfig | None) -> AgentView:
    """The view of a configured agent (or, with no name, of the global settings)."""
    return AgentView(name, profile if name is not None else None, name, name)
