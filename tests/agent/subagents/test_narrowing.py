"""A child never exceeds its parent: the intersection, checked against the real policy for random configs."""

from __future__ import annotations

import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.sample_tools import agent_tools
from toolrig.agent.subagents.narrowing import child_profile, exact, stricter
from toolrig.config import AgentConfig
from toolrig.permissions import AgentView
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.sandbox.network import domain_matches
from toolrig.tools.shell import RunCommand, RunCommandConfig, RunCommandInput
from toolrig.tools.web import FetchUrl, FetchUrlConfig

RUN, FETCH = RunCommand(), FetchUrl()
TOOLS = [t.name for t in agent_tools()]
PATTERNS = [*TOOLS, "*", "a*", "n*", "s*", "group:*", "nothing_matches"]
RANK = {"allow": 0, "ask": 1, "deny": 2}

patterns = st.lists(st.sampled_from(PATTERNS), max_size=4)
rules = st.lists(
    st.fixed_dictionaries({"tool": st.sampled_from(PATTERNS), "verdict": st.sampled_from(["allow", "ask", "deny"])}),
    max_size=4,
)
modes = st.sampled_from([None, "off", "smart", "always"])

COMMAND_PATTERNS = ["git *", "git status", "ls *", "ls", "rm *", "curl *", "*"]
COMMANDS = ["git status", "git push", "ls", "ls -la", "rm -rf x", "curl http://x", "make", "git status; rm x"]
DOMAINS = ["example.com", "*.example.com", "github.com", "*.github.com", "evil.test"]
HOSTS = ["example.com", "api.example.com", "github.com", "raw.github.com", "evil.test", "other.org"]
# Values without a narrowing rule too: a type that sets them must not change what the child gets.
tool_configs = st.fixed_dictionaries(
    {},
    optional={
        "run_command": st.fixed_dictionaries(
            {},
            optional={
                "allow": st.lists(st.sampled_from(COMMAND_PATTERNS), max_size=3, unique=True),
                "deny": st.lists(st.sampled_from(COMMAND_PATTERNS), max_size=2, unique=True),
                "max_timeout_seconds": st.sampled_from([1.0, 30.0, 600.0, 10_000.0]),
                "allow_no_timeout": st.booleans(),
                "mode": st.sampled_from(["shell", "argv"]),
            },
        ),
        "fetch_url": st.fixed_dictionaries(
            {},
            optional={
                "allowed_domains": st.lists(st.sampled_from(DOMAINS), max_size=3, unique=True),
                "blocked_domains": st.lists(st.sampled_from(DOMAINS), max_size=2, unique=True),
                "allow_loopback": st.booleans(),
            },
        ),
    },
)


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
    if draw(st.booleans()):
        data["tool_config"] = draw(tool_configs)
    if child:
        data["disallowed_tools"] = draw(patterns)
    return data


def runs(settings: RunCommandConfig, command: str) -> bool:
    return RUN.refusal(RunCommandInput(command=command), settings) is None


def reaches(settings: FetchUrlConfig, host: str) -> bool:
    allowed = not settings.allowed_domains or any(domain_matches(p, host) for p in settings.allowed_domains)
    return allowed and not any(domain_matches(p, host) for p in settings.blocked_domains)


def assert_settings_no_wider(rig: Rig, child_offered: set[str], child: AgentView, parent: AgentView) -> None:
    """Every command the child may run and every host it may reach, its parent may too; bounds only lower."""
    if RUN.name in child_offered:
        assert_run_command_no_wider(rig, child, parent)
    if FETCH.name in child_offered:
        assert_fetch_url_no_wider(rig, child, parent)


def assert_run_command_no_wider(rig: Rig, child: AgentView, parent: AgentView) -> None:
    mine, theirs = rig.tool_settings(RUN, child), rig.tool_settings(RUN, parent)
    assert isinstance(mine, RunCommandConfig) and isinstance(theirs, RunCommandConfig)
    for command in COMMANDS:
        assert not runs(mine, command) or runs(theirs, command), command
    assert mine.max_timeout_seconds <= theirs.max_timeout_seconds
    assert (mine.mode, mine.allow_no_timeout) == (theirs.mode, theirs.allow_no_timeout)


def assert_fetch_url_no_wider(rig: Rig, child: AgentView, parent: AgentView) -> None:
    web, their_web = rig.tool_settings(FETCH, child), rig.tool_settings(FETCH, parent)
    assert isinstance(web, FetchUrlConfig) and isinstance(their_web, FetchUrlConfig)
    for host in HOSTS:
        assert not reaches(web, host) or reaches(their_web, host), host
    assert web.allow_loopback == their_web.allow_loopback


_RIG: dict[str, Rig] = {}


def rig_for(global_mode: str) -> Rig:
    if global_mode not in _RIG:
        root = tempfile.mkdtemp(prefix="narrowing-")
        config = {
            "approvals": {"mode": global_mode},
            "tools": {"rules": [{"tool": "step", "verdict": "ask"}]},
            "tool_config": {"run_command": {"deny": ["curl *"]}, "fetch_url": {"blocked_domains": ["evil.test"]}},
        }
        _RIG[global_mode] = Rig(root, config=config, registry=Registry([*agent_tools(), RUN, FETCH]))
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
    before = {name: agent.model_dump() for name, agent in rig.config.agents.items()}
    parent_view = rig.agent_view().child("parent", AgentConfig.model_validate(parent))
    # What the parent's run offers: its profile, narrowed further by the run's own deny list.
    offered = {t.name: t for t in rig.registry_for(parent_view).select((), run_deny).list()}
    profile = child_profile(
        parent_view.profile,
        policy.mode(parent_view),
        offered,
        AgentConfig.model_validate(child),
        lambda tool: rig.tool_settings(tool, parent_view),
    )
    child_view = parent_view.child("child", profile)
    child_offered = set(rig.registry_for(child_view).names())
    assert_settings_no_wider(rig, child_offered, child_view, parent_view)
    assert child_offered <= set(offered)
    for tool in rig.catalog.list():
        mine = policy.decide(tool, child_view, []).verdict
        theirs = policy.decide(tool, parent_view, []).verdict
        if tool.name not in offered:
            assert tool.name not in child_offered
            continue
        assert RANK[mine] >= RANK[theirs], (tool.name, mine, theirs)
    assert {name: agent.model_dump() for name, agent in rig.config.agents.items()} == before


def test_stricter_keeps_the_stricter_mode() -> None:
    assert stricter("smart", "off") == "smart"
    assert stricter("off", "always") == "always"
    assert stricter("always", None) == "always"


def test_exact_patterns_match_only_their_own_name() -> None:
    import fnmatch

    assert fnmatch.fnmatchcase("a*b", exact("a*b")) and not fnmatch.fnmatchcase("axb", exact("a*b"))
    assert fnmatch.fnmatchcase("srv/x[1]", exact("srv/x[1]"))
