"""Issue 38: the seeds' own example calls and configs, used verbatim, under every profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolrig.profiles import NAMES, SPAWNING, tools_named
from toolrig.rig import Rig

# Names other systems use for a capability that several toolrig tools make up.
CAPABILITIES = ("Agent", "Task", "Edit", "LS")


def offered(rig: Rig) -> set[str]:
    return {schema["name"] for schema in rig.schemas("json", profile=rig.profile)}


@pytest.mark.parametrize("profile", NAMES)
def test_seed_002s_deny_agent_removes_every_spawning_tool_in_every_profile(workspace: Path, profile: str) -> None:
    rig = Rig(workspace, config={"tools": {"deny": ["Agent"]}}, profile=profile)
    assert offered(rig) & {*SPAWNING, "Agent", "Task"} == set()
    for name in SPAWNING:
        result = rig.call_sync(name, {"description": "x", "prompt": "x"})
        assert result.is_error, name


@pytest.mark.parametrize("profile", NAMES)
@pytest.mark.parametrize("capability", CAPABILITIES)
def test_a_capability_name_denies_each_tool_it_stands_for(workspace: Path, profile: str, capability: str) -> None:
    tools = set(tools_named(capability))
    assert len(tools) >= 1
    rig = Rig(workspace, config={"tools": {"deny": [capability]}}, profile=profile)
    names = {t.name for t in rig.tools()}
    assert names & tools == set()
    kept = Rig(workspace, config={"tools": {"allow": [capability]}})
    assert {t.name for t in kept.tools()} >= tools
