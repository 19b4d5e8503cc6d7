from __future__ import annotations

import json
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from toolrig.cli import app
from toolrig.commands.audit import parse_since
from toolrig.rig import Rig


def audit(workspace: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["audit", *args, "--root", str(workspace)], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def history(workspace: Path, user_config: object) -> Path:
    (workspace.parent / "cfg.yaml").write_text("agents:\n  a: {}\n  b: {}\n")
    Rig(workspace, config=workspace.parent / "cfg.yaml", agent="a").call_sync("calculate", {"expression": "1+1"})
    Rig(workspace, config=workspace.parent / "cfg.yaml", agent="b").call_sync("calculate", {"expression": "x"})
    Rig(workspace, config={}).call_sync(
        "read_output", {"handle": "out_0000000000000000", "token": "sk-abcdefghijklmnop1234"}
    )
    return workspace


def test_audit_lists_every_call_oldest_first(history: Path) -> None:
    code, out, _ = audit(history)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == [
        "time",
        "agent",
        "tool",
        "decision",
        "rule",
        "approval",
        "result",
        "ms",
        "arguments",
    ]
    assert [line.split()[2:4] for line in lines[1:]] == [["a", "calculate"], ["b", "calculate"], ["-", "read_output"]]
    assert "invalid_input" in lines[2] and '{"expression": "1+1"}' in lines[1]
    assert "sk-abcdefghijklmnop1234" not in out and "[REDACTED]" in out


def test_audit_filters_by_tool_agent_and_time(history: Path) -> None:
    code, out, _ = audit(history, "--json", "--tool", "calc*", "--agent", "b")
    rows = json.loads(out)
    assert code == 0 and [(r["tool"], r["agent"], r["error_type"]) for r in rows] == [
        ("calculate", "b", "invalid_input")
    ]
    assert json.loads(audit(history, "--json", "--since", "1h")[1]).__len__() == 3
    assert json.loads(audit(history, "--json", "--since", "2999-01-01")[1]) == []
    assert len(json.loads(audit(history, "--json", "--limit", "2")[1])) == 2


def test_audit_without_a_log_says_so(workspace: Path) -> None:
    code, out, err = audit(workspace)
    assert code == 0 and out == "" and "no calls recorded" in err
    assert audit(workspace, "--json")[1].strip() == "[]"
    assert not (workspace / ".toolrig").exists()  # reading never creates the log


def test_since_takes_durations_and_dates() -> None:
    now = 1_000_000.0
    assert parse_since("15m", now) == now - 900
    assert parse_since("2h", now) == now - 7200
    assert parse_since("1.5d", now) == now - 1.5 * 86400
    assert parse_since("2026-05-01T12:00:00+00:00") == 1777636800.0
    assert parse_since("2026-05-01") == time.mktime((2026, 5, 1, 0, 0, 0, 0, 0, -1))
    with pytest.raises(click.BadParameter, match="neither a duration"):
        parse_since("yesterday")
