"""What a rig offers, as the tools that describe tools see it: the catalog, the skills binding, the summary.

The rig's level, below the Rig itself: ``binding`` (``ctx.catalog`` and ``ctx.skills``, built once per Rig),
``capabilities`` (the capabilities summary, ``.toolrig/capabilities.md``) and ``verdicts`` (the one place they
read policy). They are handed the parts of a rig they read (``RigParts``), never the ``Rig`` class: the Rig
builds them, so they cannot import it. Skill parsing and discovery, which tools use, stay in ``toolrig.skills``.
"""

from __future__ import annotations

from typing import Protocol

from toolrig.config import Config
from toolrig.permissions import AgentView
from toolrig.policy.governance import Governance
from toolrig.registry import Registry
from toolrig.sandbox.paths import Workspace


class RigParts(Protocol):
    """The parts of a Rig the catalog reads: its workspace, config and governance, and what an agent is offered."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def config(self) -> Config: ...

    @property
    def governance(self) -> Governance: ...

    def registry_for(self, agent: AgentView | str | None) -> Registry: ...
