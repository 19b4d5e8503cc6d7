"""The one place skills and capabilities read policy verdicts and add pre-approvals.

Everything here goes through today's governance API (``Policy.decide``, ``Policy.add_allow``,
``RateLimiter.limits_for``, ``Rig.registry_for``); when the gate is rebuilt, only this module rebinds.
It reads; the only change it makes is ``preapprove``, an allow rule that ask and deny rules still beat.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolrig.catalog import RigParts
from toolrig.registry import AnyTool, matches_any


@dataclass(frozen=True, slots=True)
class ToolStanding:
    """What policy says about every call of one tool, before any argument is known."""

    tool: AnyTool
    verdict: str  # allow, ask or deny (the default for a call no subject rule catches)
    decided_by: str
    reason: str
    rate_limits: tuple[str, ...]
    subject_rules: tuple[tuple[str, str], ...]  # (verdict, subject glob) of deny/ask rules on its subjects
    blocked_domains: tuple[str, ...]
    allowed_domains: tuple[str, ...]


def offered(rig: RigParts, agent: str | None) -> list[AnyTool]:
    """The tools ``agent`` is offered (config allow/deny and its own list applied)."""
    return rig.registry_for(agent).list()


def standing(rig: RigParts, tool: AnyTool, agent: str | None) -> ToolStanding:
    policy = rig.governance.policy
    decision = policy.decide(tool, agent, [], None)
    limiter = rig.governance.limiter
    from toolrig.policy.ratelimit import describe

    limits = tuple(describe(limiter.limits_for(tool, agent))) if limiter is not None else ()
    rules: list[Any] = list(rig.config.tools.rules)
    profile = rig.config.agents.get(agent) if agent else None
    if profile is not None:
        rules += profile.rules
    on_subjects = tuple(
        (r.verdict, r.subject)
        for r in rules
        if r.subject is not None and r.verdict in ("deny", "ask") and matches_any(tool, (r.tool,))
    )
    settings = rig.config.tool_config.get(tool.name, {})
    return ToolStanding(
        tool=tool,
        verdict=decision.verdict,
        decided_by=decision.rule,
        reason=decision.reason,
        rate_limits=limits,
        subject_rules=on_subjects,
        blocked_domains=tuple(settings.get("blocked_domains") or ()),
        allowed_domains=tuple(settings.get("allowed_domains") or ()),
    )


def denied_paths(rig: RigParts) -> tuple[str, ...]:
    return tuple(rig.workspace.deny_globs)


def preapprove(rig: RigParts, patterns: Sequence[str], source: str, agent: str | None, session: str) -> list[str]:
    """Allow calls matching ``patterns`` for the rest of the run (``session`` as ``agent``); deny, ask rules first.

    Never beyond the run: granted to the agent (or, with none, to everyone), a skill one run loaded pre-approved
    commands for every later session and agent of the rig. ``source`` becomes the rule's name, which the audit
    log records as what allowed each such call.
    """
    if not patterns:
        return []
    rules = rig.governance.policy.add_allow(list(patterns), source, agent, session=session)
    return [r.source for r in rules]
