"""A child's permissions: the intersection of its type and its parent, as an ordinary agent profile.

Nothing here decides a call: the result is an ``AgentConfig`` the child's own ``AgentView`` holds (never
registered on the Rig, never found by the child's id), so the one gate judges the child's calls with the
same per-agent machinery as a configured agent. What the intersection keeps:

- tools: the parent's offered tools (its profile and its run's own narrowing already applied) that the
  type allows and does not disallow, as exact names, so no glob can reach beyond the parent's list;
- rules: the parent's own rules, plus only the deny and ask rules of the type (an allow rule or allowlist
  entry of the type would let the child skip a question its parent must ask);
- approvals: the stricter of the parent's mode and the type's;
- rate limits: the parent's, drawn from the root's buckets (the view's ``owner``), so
  children share their parent's budget rather than multiply it;
- tool_config: the parent's effective settings of each tool, narrowed by the type's with the same
  ``Narrow`` rules that narrow an untrusted workspace's (``toolrig.config.narrow_settings``): a type may
  deny more, allow less, lower a bound; a setting without a rule keeps the parent's value, with a warning.
  Only ``agents:`` in config and a trusted workspace's organism.yaml can set a type's tool_config;
  Markdown definitions cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from toolrig.config import AgentApprovalsConfig, AgentConfig, ApprovalMode, RuleConfig, narrow_settings
from toolrig.registry import AnyTool, matches_any

NOT_WIDER = "a subagent keeps its parent's value of a setting that has no narrowing rule"
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


def child_tool_config(
    names: Iterable[str],
    parent_offered: Mapping[str, AnyTool],
    parent_settings: Callable[[AnyTool], BaseModel | None],
    child: AgentConfig,
    key: str,
    warnings: list[str],
) -> dict[str, dict[str, Any]]:
    """Each tool's settings for the child: the parent's effective ones, only narrowed by the type's.

    The parent's effective settings already hold everything that narrowed them (the global section, the
    parent's own profile, an untrusted workspace's values), so the child starts from those, never from raw
    config a layer below them.
    """
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        tool = parent_offered[name]  # a face's name (an alias) finds its tool: settings are by the tool's name
        if tool.name in out:
            continue
        settings = parent_settings(tool)
        if settings is None:
            continue  # the tool takes no settings
        proposed = child.tool_config.get(tool.name)
        if proposed:
            settings = narrow_settings(settings, dict(proposed), f"{key}.{tool.name}", warnings, why=NOT_WIDER)
        out[tool.name] = settings.model_dump()
    return out


def child_profile(
    parent: AgentConfig | None,
    parent_mode: ApprovalMode,
    parent_offered: Mapping[str, AnyTool],
    child: AgentConfig,
    parent_settings: Callable[[AnyTool], BaseModel | None],
    *,
    type_name: str = "child",
    warnings: list[str] | None = None,
) -> AgentConfig:
    """The child's effective profile; every field is at most what the parent had.

    ``parent_settings`` gives a tool's settings as the parent's run sees them (``Rig.tool_settings``).
    """
    own = parent or AgentConfig()
    names = child_tools(parent_offered, child)
    tool_config = child_tool_config(
        names,
        parent_offered,
        parent_settings,
        child,
        f"agents.{type_name}.tool_config",
        warnings if warnings is not None else [],
    )
    return AgentConfig(
        tools=[exact(n) for n in names],
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
