"""The agent loop against hostile results and arguments (hostile review D6, D13): the run goes on, both providers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.conftest import agent_config
from tests.policy.conftest import last_row
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig import Rig
from toolrig.agent import RunOptions, run_agent

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("name", "args", "error"),
    [
        ("calculate", '{"expression": "2**99999"}', "invalid_input"),  # refused before it runs (D5)
        ("read_files", '{"paths": ["plans.txt", "\\ud800"]}', "invalid_input"),
    ],
)
async def test_the_run_survives_a_huge_integer_and_a_lone_surrogate(
    name: str, args: str, error: str | None, llm: FakeLLM, provider: str, workspace: Path
) -> None:
    (workspace / "plans.txt").write_text("TOPSECRET-AGENT\n")
    llm.script(reply(Call("c1", name, args)), reply(Text("done")))
    rig = Rig(workspace, config=agent_config(llm, provider))
    result = await run_agent("go", RunOptions(max_turns=3), rig=rig)
    assert result.response == "done"
    row = last_row(workspace)
    assert row.tool == name and row.error_type == error
    assert "TOPSECRET-AGENT" not in str(llm.bodies()[1])
