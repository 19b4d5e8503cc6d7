"""A child never exceeds its parent: the intersection, checked against the real policy for random configs."""

from __future__ import annotations

import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.sample_tools import agent_tools
from toolrig.agent.subagents.narrowing import child_profile, exact, stricter
from toolrig.config import AgentConfig
from toolrig.registry import Registry
from toolrig.rig import Rig

TOOLS = [t.name for t in agent_tools()]
PATTERNS = [*TOOLS, "*", "a*", "n*", "s*", "group:*", "nothing_matches"]
RANK = {"allow": 0, "ask": 1, "deny": 2}

patterns = st.lists(st.sampled_from(PATTERNS), max_size=4)
rules = st.lists(
    st.fixed_dictionaries({"tool": st.sampled_from(PATTERNS), "verdict": st.sampled_from(["allow", "ask", "deny"])}),
    max_size=4,
)
modes = st.sampled_from([None, "off", "smart", "always"])


@st.composite
def profiles(draw: Any, *, child: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"rules": draw(rules)}
    if draw(st.booleans()):
        data["tools"] = draw(patterns)
    mode = draw(modes)
    if mode is not None:
        data["approvals"] = {"mode": mode}
    if draw(st.booleans()):
        data["approvals"] = {**data.get("approvals", {}), "allow": draw(st.lists(st.sampled_from(TOOLS), max_size=3))}
    if child:
        data["disallowed_tools"] = draw(patterns)
    return data


_RIG: dict[str, Rig] = {}


def rig_for(global_mode: str) -> Rig:
    if global_mode not in _RIG:
        root = tempfile.mkdtemp(prefix="narrowing-")
        config = {"approvals": {"mode": global_mode}, "tools": {"rules": [{"tool": "step", "verdict": "ask"}]}}
        _RIG[global_mode] = Rig(root, config=config, registry=Registry(agent_tools()))
    return _RIG[global_mode]


@settings(max_examples=150, deadline=None)
@given(
    global_mode=st.sampled_from(["off", "smart", "always"]),
    parent=profiles(child=False),
    child=profiles(child=True),
    run_deny=patterns,
)
def test_nothing_a_child_may_do_is_denied_to_its_parent(
    global_mode: str, parent: dict[str, Any], child: dict[str, Any], run_deny: list[str]
) -> None:
    rig = rig_for(global_mode)
    policy = rig.governance.policy
    rig.set_agent_profile("parent", AgentConfig.model_validate(parent))
    try:
        # What the parent's run offers: its profile, narrowed further by the run's own deny list.
        offered = {t.name: t for t in rig.registry_for("parent").select((), run_deny).list()}
        profile = child_profile(
            rig.config.agents["parent"], policy.mode("parent"), offered, AgentConfig.model_validate(child)
        )
        rig.set_agent_profile("child", profile)
        try:
            child_offered = set(rig.registry_for("child").names())
            assert child_offered <= set(offered)
            for tool in rig.catalog.list():
                mine = policy.decide(tool, "child", []).verdict
                theirs = policy.decide(tool, "parent", []).verdict
                if tool.name not in offered:
                    assert tool.name not in child_offered
                    continue
                assert RANK[mine] >= RANK[theirs], (tool.name, mine, theirs)
        finally:
            rig.set_agent_profile("child", None)
    finally:
        rig.set_agent_profile("parent", None)


def test_stricter_keeps_the_stricter_mode() -> None:
    assert stricter("smart", "off") == "smart"
    assert stricter("off", "always") == "always"
    assert stricter("always", None) == "always"


def test_exact_patterns_match_only_their_own_name() -> None:
    import fnmatch

    assert fnmatch.fnmatchcase("a*b", exact("a*b")) and not fnmatch.fnmatchcase("axb", exact("a*b"))
    assert fnmatch.fnmatchcase("srv/x[1]", exact("srv/x[1]"))
