"""Layering an untrusted workspace's config over the user's: each field moves only the way its rule allows.

Trust model: the user's values are trusted; the workspace's are input. A value that would widen access is
ignored with a warning that names the workspace's file, never turned into a setting that fails later.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ValidationError

from toolrig.config.base import per_second
from toolrig.config.schema import Config
from toolrig.config.sections import AgentApprovalsConfig, AgentConfig
from toolrig.narrowing import Narrow

ALLOW_NOTHING = "!nothing"  # an allow pattern no tool name can match ('!' is not allowed in names)

# The levels of STRICTER fields, least strict first.
_LEVELS: dict[str, tuple[str, ...]] = {
    "mode": ("off", "smart", "always"),
    "fallback": ("allow", "deny"),
    "sandbox": ("off", "auto", "required"),  # tool_config.run_command.sandbox
    "network": ("guarded", "none"),  # tool_config.run_command.network
}


def _rule(model: type[BaseModel], name: str) -> Narrow | None:
    for meta in model.model_fields[name].metadata:
        if isinstance(meta, Narrow):
            return meta
    return None


def _narrow_value(rule: Narrow, base: Any, proposed: Any, key: str, warnings: list[str], inherited: Any = None) -> Any:
    """``proposed`` applied over ``base`` as ``rule`` allows; what it may not change is kept, with a warning."""
    if rule is Narrow.STRICTER:
        return _stricter(base, proposed, key, warnings, inherited)
    return _RULES[rule](base, proposed, key, warnings)


def _restrictive(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    added = [item for item in proposed if item not in base]
    kept = [item for item in added if getattr(item, "verdict", "allow") != "allow"]
    if len(kept) < len(added):
        warnings.append(
            f"'{key}': {len(added) - len(kept)} allow rule(s) ignored: this workspace is not trusted "
            "(an untrusted workspace may only add rules that deny or ask; run `toolrig trust` to allow it)"
        )
    return [*base, *kept]


def _union(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    return [*base, *(item for item in proposed if item not in base)]


def _globs(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    # A later '!pattern' un-matches an earlier one: from an untrusted file it would lift the user's own.
    negations = [item for item in proposed if item.lstrip().startswith("!")]
    if negations:
        warnings.append(
            f"'{key}': {', '.join(map(repr, negations))} ignored: an untrusted workspace may add patterns "
            "but not '!' exceptions (run `toolrig trust` to allow it)"
        )
    return [*base, *(item for item in proposed if item not in base and item not in negations)]


def _stricter(base: Any, proposed: Any, key: str, warnings: list[str], inherited: Any) -> Any:
    levels = _LEVELS[key.rsplit(".", 1)[-1]]
    effective = inherited if base is None else base  # an agent's unset mode is the global one
    if proposed is None or effective is None or levels.index(proposed) >= levels.index(effective):
        return base if proposed is None else proposed
    warnings.append(
        f"'{key}: {proposed}' is ignored: it is less strict than {effective!r} and this workspace is not trusted"
    )
    return base


def _subset(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    if proposed is None:
        return base
    if base is None:
        return list(proposed)
    return _intersection(base, proposed, key, warnings)


def _intersect(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    if not proposed:
        return base
    if not base:
        return list(proposed)
    return _intersection(base, proposed, key, warnings)


def _intersection(base: list[str], proposed: list[str], key: str, warnings: list[str]) -> list[str]:
    """What both lists admit; never empty, since an empty allow list means "all" (``ALLOW_NOTHING`` instead).

    Tool name lists are globs (``matches_any``): the user's ``read_files`` survives a workspace's ``*``, and a
    workspace's ``read_files`` survives the user's ``read_*``. Other lists (paths, domains, commands) have their
    own matching, so only the entries both write alike survive there.
    """
    kept = [item for item in base if item in proposed]
    if _TOOL_NAME_LISTS.fullmatch(key):
        kept += [item for item in base if item not in kept and _covered(item, proposed)]
        kept += [item for item in proposed if item not in kept and _covered(item, base)]
    if kept:
        return kept
    warnings.append(
        f"'{key}': shares no entry with {base!r}, so nothing is allowed here "
        "(an untrusted workspace may only narrow this list; run `toolrig trust` to use its own)"
    )
    return [ALLOW_NOTHING]


def _covered(name: str, patterns: list[str]) -> bool:
    """A plain tool name that one of ``patterns`` (plain globs, not ``group:``) matches."""
    if name.startswith("group:") or any(c in name for c in "*?[!"):
        return False
    return any(not p.startswith("group:") and p != ALLOW_NOTHING and fnmatchcase(name, p) for p in patterns)


def _rate(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    if proposed is None:
        return base
    if base is None or per_second(proposed) <= per_second(base):
        return proposed
    warnings.append(f"'{key}: {proposed}' is ignored: it is higher than {base!r}")
    return base


def _rates(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    merged = dict(base)
    for pattern, text in proposed.items():
        if pattern not in merged or per_second(text) <= per_second(merged[pattern]):
            merged[pattern] = text
        else:
            warnings.append(f"'{key}.{pattern}: {text}' is ignored: it is higher than {merged[pattern]!r}")
    return merged


def _min(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    # None means "no bound" (a budget nobody set): any number narrows it.
    if base is None or proposed is None:
        return proposed if base is None else base
    return min(base, proposed)


def _true_wins(base: Any, proposed: Any, key: str, warnings: list[str]) -> Any:
    return bool(base or proposed)


_RULES: dict[Narrow, Callable[[Any, Any, str, list[str]], Any]] = {
    Narrow.RESTRICTIVE: _restrictive,
    Narrow.UNION: _union,
    Narrow.GLOBS: _globs,
    Narrow.SUBSET: _subset,
    Narrow.INTERSECT: _intersect,
    Narrow.RATE: _rate,
    Narrow.RATES: _rates,
    Narrow.MIN: _min,
    Narrow.TRUE_WINS: _true_wins,
}
# The keys whose lists hold tool name globs: the config's own, never a tool's settings (``tool_config.x.tools``).
_TOOL_NAME_LISTS = re.compile(r"tools\.allow|agents\.[^.]+\.tools")


UNTRUSTED = "this workspace is not trusted (run `toolrig trust` to allow it)"


def merge_narrowing(
    base: BaseModel,
    workspace: BaseModel,
    path: str,
    warnings: list[str],
    inherit: BaseModel | None = None,
    why: str = UNTRUSTED,
) -> BaseModel:
    """``base`` with the workspace's values applied by each field's rule; ``inherit`` fills unset levels.

    ``why`` ends the warning for a field without a rule, whose value is ignored: who may not widen it.
    """
    updates: dict[str, Any] = {}
    for name in workspace.model_fields_set:
        proposed = getattr(workspace, name)
        current = getattr(base, name)
        rule = _rule(type(base), name)
        key = f"{path}{name}"
        if name == "tool_config" and isinstance(base, Config | AgentConfig):
            continue  # kept in LoadedConfig.pending_tool_config, narrowed by each tool's own model
        if name == "agents" and isinstance(base, Config) and isinstance(workspace, Config):
            updates[name] = _narrow_agents(base, workspace.agents, warnings)
        elif rule is not None:
            inherited = getattr(inherit, name, None) if inherit is not None else None
            updates[name] = _narrow_value(rule, current, proposed, key, warnings, inherited)
        elif isinstance(current, BaseModel) and isinstance(proposed, BaseModel):
            inner = getattr(inherit, name, None) if inherit is not None else None
            updates[name] = merge_narrowing(
                current, proposed, f"{key}.", warnings, inner if isinstance(inner, BaseModel) else None, why
            )
        elif proposed != current:
            warnings.append(f"'{key}' is ignored: {why}")
    return base.model_copy(update=updates)


def _narrow_agents(user: Config, proposed: dict[str, AgentConfig], warnings: list[str]) -> dict[str, AgentConfig]:
    """An agent from an untrusted workspace narrows like the rest: over the user's agent, or a blank one.

    A blank agent inherits the global settings, so its unset approval mode stands for ``approvals.mode``:
    a workspace agent with ``approvals.mode: off`` under a global ``always`` is ignored, not obeyed.
    """
    merged = dict(user.agents)
    inherit = AgentConfig(approvals=AgentApprovalsConfig(mode=user.approvals.mode))
    for name, agent in proposed.items():
        base = user.agents.get(name) or AgentConfig()
        narrowed = merge_narrowing(base, agent, f"agents.{name}.", warnings, inherit)
        merged[name] = AgentConfig.model_validate(narrowed.model_dump())
    return merged


def pending_tool_config(workspace: Config) -> dict[tuple[str | None, str], dict[str, Any]]:
    """The untrusted workspace's tool settings, by (agent or None, tool), to narrow once the tools are known."""
    pending: dict[tuple[str | None, str], dict[str, Any]] = {
        (None, tool): dict(values) for tool, values in workspace.tool_config.items()
    }
    for name, agent in workspace.agents.items():
        pending.update({(name, tool): dict(values) for tool, values in agent.tool_config.items()})
    return pending


def narrow_settings(
    current: BaseModel, proposed: dict[str, Any], key: str, warnings: list[str], why: str = UNTRUSTED
) -> BaseModel:
    """A tool's settings with an untrusted workspace's values applied by each field's ``Narrow`` rule.

    Fields without a rule (a tool's ``mode``, ``allow_loopback``, ``env_set``...) can widen what the tool
    does, so the workspace's value is ignored with a warning until ``toolrig trust``. A subagent's type is
    narrowed against its parent's settings the same way (``why`` says so in the warning).
    """
    model = type(current)
    try:
        workspace = model.model_validate(proposed)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        source = "from an untrusted workspace" if why == UNTRUSTED else why
        warnings.append(f"'{key}' is ignored: {where}: {first['msg']} ({source})")
        return current
    narrowed = merge_narrowing(current, workspace, f"{key}.", warnings, why=why)
    return model.model_validate(narrowed.model_dump())
