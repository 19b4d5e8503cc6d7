from __future__ import annotations

from pathlib import Path
from typing import Any

from toolrig.rig import Rig
from toolrig.skills import capabilities


def refreshed(workspace: Path, config: dict[str, Any]) -> str:
    with Rig(workspace, config) as rig:
        result = rig.call_sync("capabilities_refresh", {})
        assert not result.is_error, result
        text = (workspace / ".toolrig" / "capabilities.md").read_text()
        assert result.output["summary"] == text
        return text


def line(text: str, title: str) -> str:
    return next(row for row in text.splitlines() if row.startswith(f"- **{title}**"))


def test_the_summary_follows_the_approval_mode_in_force(workspace: Path) -> None:
    smart = refreshed(workspace, {"approvals": {"mode": "smart"}})
    assert line(smart, "Editing").endswith("Policy: needs approval: edit, str_replace, write_file.")  # not the dry runs
    assert line(smart, "Files").endswith("Policy: no approval needed.")
    off = refreshed(workspace, {"approvals": {"mode": "off"}})
    assert line(off, "Editing").endswith("Policy: no approval needed.")


def test_changing_a_rule_and_refreshing_changes_the_summary(workspace: Path) -> None:
    base: dict[str, Any] = {"approvals": {"mode": "off"}}
    before = refreshed(workspace, base)
    ruled = {
        **base,
        "tools": {"rules": [{"tool": "run_command", "subject": "git push *", "verdict": "deny"}]},
        "rate_limits": {"send_email": "5/hour"},
        "workspace": {"deny_globs": ["secrets/**"]},
        "tool_config": {"fetch_url": {"blocked_domains": ["evil.example"]}},
    }
    after = refreshed(workspace, ruled)
    assert before != after
    assert "run_command refused for 'git push *'" in line(after, "Shell")
    assert "send_email rate limit 5/hour" in line(after, "Messages")
    assert "denied paths: secrets/**" in line(after, "Files")
    assert "fetch_url never reaches evil.example" in line(after, "Web")
    denied = refreshed(workspace, {**base, "tools": {"rules": [{"tool": "send_email", "verdict": "deny"}]}})
    assert "send_email" not in line(denied, "Messages")  # denied outright: not offered, so not summarised


def test_the_user_s_own_front_matter_survives_a_refresh(workspace: Path) -> None:
    state = workspace / ".toolrig"
    state.mkdir()
    (state / "capabilities.md").write_text("---\nowner: ops team\ngrouping: stale\n---\nold text\n")
    text = refreshed(workspace, {})
    front = capabilities.front_matter(text)
    assert front["owner"] == "ops team" and front["grouping"] == "by tool group"
    assert "old text" not in text


def test_mcp_tools_get_a_theme_per_server(workspace: Path) -> None:
    from tests.adapters.mcp_peers import everything_server

    command = everything_server()
    config = {"mcp_servers": {"everything": {"command": command[0], "args": command[1:]}}}
    text = refreshed(workspace, config)
    assert "everything/get-sum" in line(text, "MCP server everything")
