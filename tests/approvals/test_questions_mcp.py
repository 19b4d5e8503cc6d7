"""People in the loop over MCP with the official client: ask_user as an elicitation form (or skipped), todos."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from tests.support.mcp_peers import ROOT, stdio_session

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

QUESTIONS = {
    "questions": [
        {"question": "Which database?", "header": "Database", "options": ["PostgreSQL", "SQLite"]},
        {"question": "Anything else?"},
    ]
}


def serve(workspace: Path, home: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolrig", "mcp", "serve", "--root", str(workspace)],
        env={"TOOLRIG_HOME": str(home), "PYTHONPATH": str(ROOT)},
        cwd=str(workspace),
    )


def body(result: Any) -> dict[str, Any]:
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_ask_user_is_an_elicitation_whose_schema_comes_from_the_options(
    mode: str, workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    seen: list[ElicitRequestParams] = []

    async def user(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"q1": "SQLite", "q2_other": "use WAL"})

    async with stdio_session(
        serve(workspace, toolrig_home), tmp_path / "log", mode=mode, elicitation_callback=user
    ) as c:
        result = await c.call_tool("ask_user", QUESTIONS)
    assert result.is_error is False, result.content
    assert body(result) == {
        "answers": [{"selected": ["SQLite"], "other_text": None}, {"selected": None, "other_text": "use WAL"}],
        "skipped": False,
    }
    [params] = seen
    schema = params.requested_schema  # type: ignore[union-attr]
    assert [o["const"] for o in schema["properties"]["q1"]["oneOf"]] == ["PostgreSQL", "SQLite"]
    assert "Which database?" in params.message


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_declined_question_is_skipped(mode: str, workspace: Path, toolrig_home: Path, tmp_path: Path) -> None:
    async def user(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="decline")

    async with stdio_session(
        serve(workspace, toolrig_home), tmp_path / "log", mode=mode, elicitation_callback=user
    ) as c:
        result = await c.call_tool("ask_user", QUESTIONS)
    assert body(result)["skipped"] is True


async def test_a_client_without_elicitation_gets_skipped_never_a_wait(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    (toolrig_home / "config.yaml").write_text("approvals: {fallback: allow}\n")  # cannot invent an answer
    async with stdio_session(serve(workspace, toolrig_home), tmp_path / "log") as c:
        result = await c.call_tool("ask_user", QUESTIONS)
    assert body(result)["skipped"] is True


async def test_todos_and_followups_are_kept_with_the_mcp_session(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    todos = {"todos": [{"task": "Read", "completed": True}, {"task": "Fix", "status": "in_progress"}]}
    async with stdio_session(serve(workspace, toolrig_home), tmp_path / "log") as c:
        written = await c.call_tool("write_todos", todos)
        suggested = await c.call_tool("suggest_followups", {"followups": ["Run the tests", "Open a PR"]})
    assert body(written)["summary"] == "1 of 2 completed; in progress: Fix"
    assert body(suggested) == {"recorded": 2}
