"""An MCP server's tool has one name for people, ``server/tool``, wherever it is shown, and config takes it in
either spelling (``server__tool`` is what models send: providers refuse a slash). Issue 33 item 13."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from rich.console import Console

from tests.support.mcp_peers import ROOT
from toolrig.approvals.model import ApprovalDecision, ApprovalRequest
from toolrig.cli import app
from toolrig.commands._chat_ui import tool_rows
from toolrig.policy.audit import AuditLog
from toolrig.rig import Rig

TWO_LINES = "Describe the peer\nin two lines\n\nand a second paragraph that goes on."


@pytest.fixture
def peer_state(tmp_path: Path) -> Path:
    state = tmp_path / "peer"
    state.mkdir()
    (state / "description.txt").write_text(TWO_LINES, encoding="utf-8")
    return state


def peer(state: Path) -> dict[str, Any]:
    command = [sys.executable, str(ROOT / "tests" / "support" / "mcp_peer_server.py"), str(state)]
    return {"peer": {"command": command[0], "args": command[1:]}}


class Recording:
    """An approval channel that says yes and keeps what it was asked, as a person's screen would show it."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        self.asked.extend(requests)
        return [ApprovalDecision("allow_always", fingerprint=r.fingerprint) for r in requests]


def test_the_list_the_audit_and_the_approval_question_name_the_tool_server_slash_tool(
    workspace: Path, toolrig_home: Path, peer_state: Path
) -> None:
    channel = Recording()
    config = {"mcp_servers": peer(peer_state), "approvals": {"mode": "always"}}
    with Rig(workspace, config=config, approval_channel=channel) as rig:
        assert rig.call_sync("peer__echo", {"text": "hi"}).is_error is False  # the name a model sends
        assert rig.call_sync("peer/echo", {"text": "hi"}).is_error is False  # allowed always: not asked
    [request] = channel.asked
    assert request.tool == "peer/echo"
    assert all(p.startswith("peer/echo") for p in request.suggested), request.suggested
    log = AuditLog(workspace / ".toolrig")
    rows = log.query()
    assert [(r.tool, r.called_as) for r in rows] == [("peer/echo", None), ("peer/echo", None)]
    assert len(log.query(tool="peer/*")) == len(log.query(tool="peer__*")) == len(log.query(tool="peer__echo")) == 2
    log.close()

    (toolrig_home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": peer(peer_state)}), encoding="utf-8")
    listed = CliRunner().invoke(app, ["tools", "list", "--group", "mcp", "--root", str(workspace)])
    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.output.splitlines()] == [
        "peer/crash", "peer/describe", "peer/echo", "peer/sleep", "peer/whoami",
    ]  # fmt: skip
    audit = CliRunner().invoke(app, ["audit", "--tool", "peer__echo", "--root", str(workspace)])
    assert audit.output.count("peer/echo ") == 2 and "peer__echo" not in audit.output


@pytest.mark.parametrize("sep", ["/", "__"])
def test_config_names_an_mcp_tool_in_either_spelling_everywhere_a_tool_is_named(
    workspace: Path, toolrig_home: Path, peer_state: Path, sep: str
) -> None:
    def name(tool: str) -> str:
        return f"peer{sep}{tool}"

    config = {
        "mcp_servers": peer(peer_state),
        "tools": {"deny": [name("crash")], "rules": [{"tool": name("sleep"), "verdict": "deny"}]},
        "approvals": {"mode": "always", "allow": [name("echo"), name("describe") + ":*"]},
        "rate_limits": {name("whoami"): "1/hour"},
        "llm": {"tools": [name("*")]},
        "agents": {"helper": {"tools": [name("echo")]}},
    }
    with Rig(workspace, config=config) as rig:
        assert sorted(t.display_name or t.name for t in rig.tools("mcp")) == [
            "peer/describe",
            "peer/echo",
            "peer/whoami",
        ]
        assert rig.call_sync("peer__echo", {"text": "x"}).is_error is False  # approvals.allow
        assert rig.call_sync("peer/describe", {}).is_error is False
        assert rig.call_sync("peer__crash", {}).error_type == "denied"  # tools.deny
        assert rig.call_sync("peer__sleep", {"seconds": 0}).error_type == "denied"  # tools.rules
        assert rig.call_sync("peer__whoami", {}).error_type == "denied"  # asked, and nobody can answer
    with Rig(workspace, config=config, agent="helper") as helper:
        assert [t.display_name for t in helper.tools("mcp")] == ["peer/echo"]


def test_chat_tools_shows_one_line_per_tool_however_long_its_description(
    workspace: Path, toolrig_home: Path, peer_state: Path
) -> None:
    with Rig(workspace, config={"mcp_servers": peer(peer_state)}) as rig:
        tools = rig.tools()
        out = io.StringIO()
        console = Console(file=out, width=80, force_terminal=False)
        for row in tool_rows(tools, console.width):
            console.print(row, no_wrap=True, overflow="ellipsis")
    lines = out.getvalue().splitlines()
    assert len(lines) == len(tools)
    [described] = [line for line in lines if line.startswith("peer/describe ")]
    assert "Describe the peer in two lines and a second" in described and "[+" in described
    assert all(len(line) <= 80 for line in lines)
