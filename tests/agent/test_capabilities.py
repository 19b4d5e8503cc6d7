from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import agent_config
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.skill_helpers import install_samples, isolate_home
from toolrig.agent import RunOptions, run_agent
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio

TOOLS = ["read_files", "write_file", "calculate", "capabilities_refresh", "load_skill"]


def make(workspace: Path, llm: FakeLLM, provider: str) -> Rig:
    config: dict[str, Any] = {
        **agent_config(llm, provider),
        "tools": {"allow": TOOLS},
        "approvals": {"mode": "smart", "fallback": "deny"},
    }
    return Rig(workspace, config)


def system_text(body: dict[str, Any]) -> str:
    if "system" in body:
        system = body["system"]
        return system if isinstance(system, str) else "".join(part["text"] for part in system)
    return str(body["messages"][0]["content"])


async def test_every_system_prompt_carries_the_skills_catalog_and_the_capabilities(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, llm: FakeLLM, provider: str
) -> None:
    isolate_home(tmp_path, monkeypatch)
    install_samples(workspace)
    llm.script(reply(Text("ok")))
    with make(workspace, llm, provider) as rig:
        await run_agent("hi", RunOptions(), rig=rig)
    system = system_text(llm.bodies()[0])
    assert "- pdf-forms: Fill in PDF forms" in system
    assert (
        "**Editing** (write_file): create, change and preview changes to files. Policy: every call needs approval"
        in system
    )


async def test_with_a_model_configured_capabilities_refresh_asks_it_to_group_the_themes(
    workspace: Path, llm: FakeLLM, provider: str
) -> None:
    themes = {
        "themes": [
            {"title": "Project files", "summary": "read and write the project", "tools": ["read_files", "write_file"]},
            {"title": "Know-how", "summary": "maths and skills", "tools": ["calculate", "load_skill"]},
            {"title": "Self-knowledge", "summary": "refresh this summary", "tools": ["capabilities_refresh"]},
        ]
    }
    llm.script(
        reply(Call("c1", "capabilities_refresh", "{}")),
        reply(Text("Here you go: ", json.dumps(themes))),
        reply(Text("done")),
    )
    with make(workspace, llm, provider) as rig:
        result = await run_agent("refresh", RunOptions(), rig=rig)
    assert result.response == "done"
    text = (workspace / ".toolrig" / "capabilities.md").read_text()
    assert "grouping: by the configured model" in text
    assert "- **Project files** (read_files, write_file): read and write the project. Policy: needs approval" in text
    assert "- **Know-how** (calculate, load_skill)" in text
    grouping_request = json.dumps(llm.bodies()[1])
    assert "read_files" in grouping_request and "needs approval" in grouping_request  # the verdicts went along


async def test_a_model_grouping_that_drops_a_tool_falls_back_to_tool_groups(
    workspace: Path, llm: FakeLLM, provider: str
) -> None:
    partial = {"themes": [{"title": "Files", "summary": "files", "tools": ["read_files"]}]}
    llm.script(
        reply(Call("c1", "capabilities_refresh", "{}")),
        reply(Text(json.dumps(partial))),
        reply(Text("done")),
    )
    with make(workspace, llm, provider) as rig:
        await run_agent("refresh", RunOptions(), rig=rig)
    text = (workspace / ".toolrig" / "capabilities.md").read_text()
    assert "grouping: by tool group" in text and "**Editing** (write_file)" in text
