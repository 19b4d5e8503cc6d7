"""Each capability is offered once per profile: two names for one thing cost tokens and split the model's choice."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from tests.agent.conftest import agent_config
from tests.support.fake_llm import FakeLLM, Text, reply
from toolrig.adapters.faces import shown_capability
from toolrig.agent import RunOptions, run_agent
from toolrig.profiles import NAMES, capability_of
from toolrig.registry import Registry
from toolrig.rig import Rig


def duplicates(names_and_capabilities: list[tuple[str, str]]) -> dict[str, list[str]]:
    by_capability: dict[str, list[str]] = defaultdict(list)
    for name, capability in names_and_capabilities:
        by_capability[capability].append(name)
    return {c: names for c, names in by_capability.items() if len(names) > 1}


@pytest.mark.parametrize("profile", NAMES)
def test_no_two_names_a_profile_offers_stand_for_one_capability(workspace: Path, profile: str) -> None:
    with Rig(workspace, {}) as rig:
        shown = rig.tools(profile=profile)
    assert duplicates([(t.name, shown_capability(t)) for t in shown]) == {}
    # ... and the capability is still offered (once), under the profile's name for it.
    spawn = [t.name for t in shown if shown_capability(t) == "spawn_agents"]
    assert spawn == (["Agent"] if profile in ("claude", "camelagi") else ["spawn_agents"])


def test_tools_that_share_one_implementation_share_a_capability() -> None:
    """The capability table is complete: a new alias tool (one ``execute`` under two names) must join it."""
    by_code: dict[object, list[str]] = defaultdict(list)
    for tool in Registry.default(entry_points=False).list():
        by_code[type(tool).execute].append(tool.name)
    for names in by_code.values():
        assert len({capability_of(n) for n in names}) == 1, names


def test_a_face_that_doubles_another_is_not_listed_but_stays_a_face(workspace: Path) -> None:
    from toolrig.profiles import get_profile

    claude = get_profile("claude")
    with Rig(workspace, {}) as rig:
        names = [t.name for t in rig.tools(profile=claude)]
    assert "Read" in names and "NotebookRead" not in names
    assert claude.face("NotebookRead") is not None  # a model trained on it still reaches read_files by it


@pytest.mark.anyio
@pytest.mark.parametrize("profile", ["toolrig", "camelagi"])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("tools", ["all", "search"])
async def test_a_run_sends_each_capability_once(
    workspace: Path, llm: FakeLLM, provider: str, profile: str, tools: str
) -> None:
    llm.script(reply(Text("ok")))
    config = {**agent_config(llm, provider, tool_profile=profile, tools=tools), "approvals": {"mode": "off"}}
    with Rig(workspace, config) as rig:
        await run_agent("hi", RunOptions(), rig=rig)
    sent = [t["name"] if "name" in t else t["function"]["name"] for t in llm.bodies()[0]["tools"]]
    spawn = [n for n in sent if n in ("Agent", "Task", "spawn_agents")]
    assert spawn == (["Agent"] if profile == "camelagi" else ["spawn_agents"])
    assert len(sent) == len(set(sent))
