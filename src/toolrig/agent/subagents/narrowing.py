"""A child's permissions: the intersection of its type and its parent, as an ordinary agent profile.

Nothing here decides a call: the result is an ``AgentConfig`` registered under the child's agent id
(``Rig.set_agent_profile``), so the one gate judges the child's calls with the same per-agent machinery as
a configured agent. What the intersection keeps:

- tools: the parent's offered tools (its profile and its run's own narrowing already applied) that the
  type allows and does not disallow, as exact names, so no glob can reach beyond the parent's list;
- rules: the parent's own rules, plus only the deny and ask rules of the type (an allow rule or allowlist
  entry of the type would let the child skip a question its parent must ask);
- approvals: the stricter of the parent's mode and the type's;
- rate limits: the parent's, so a child is limited like its parent;
- tool_config: the parent's, with the type's settings over it. Only ``agents:`` in config and a trusted
  workspace's organism.yaml can set a type's tool_config; Markdown definitions cannot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from toolrig.config import AgentApprovalsConfig, AgentConfig, ApprovalMode, RuleConfig
from toolrig.registry import AnyTool, matches_any

_MODES: tuple[ApprovalMode, ...] = ("off", "smart", "always")


def stricter(a: ApprovalMode, b: ApprovalMode | None) -> ApprovalMode:
    if b is None:
        return a
    return a if _MODES.index(a) >= _MODES.index(b) else b


def exact(name: str) -> str:
    """A tool name as a pattern that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def child_tools(parent_offered: Mapping[str, AnyTool], child: AgentConfig) -> list[str]:
    """The names a child may call: offered to its parent, allowed by its type, not disallowed."""
    return [
        name
        for name, tool in parent_offered.items()
        if (child.tools is None or matches_any(tool, child.tools)) and not matches_any(tool, child.disallowed_tools)
    ]


def restrictive(rules: Iterable[RuleConfig]) -> list[RuleConfig]:
    return [r for r in rules if r.verdict != "allow"]


def child_profile(
    parent: AgentConfig | None,
    parent_mode: ApprovalMode,
    parent_offered: Mapping[str, AnyTool],
    child: AgentConfig,
) -> AgentConfig:
    """The child's effective profile; every field is at most what the parent had."""
    own = parent or AgentConfig()
    tool_config = {name: dict(settings) for name, settings in own.tool_config.items()}
    for name, settings in child.tool_config.items():
        tool_config[name] = {**tool_config.get(name, {}), **settings}
    return AgentConfig(
        tools=[exact(n) for n in child_tools(parent_offered, child)],
        tool_config=tool_config,
        rules=[*own.rules, *restrictive(child.rules)],
        approvals=AgentApprovalsConfig(
            mode=stricter(parent_mode, child.approvals.mode), allow=list(own.approvals.allow)
        ),
        rate_limit=own.rate_limit,
        rate_limits=dict(own.rate_limits),
        description=child.description,
        system_prompt=child.system_prompt,
        model=child.model,
        output_mode=child.output_mode,
        output_schema=child.output_schema,
        spawns=list(child.spawns),
        shared_memory=child.shared_memory,
    )


def min_or_none(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None
