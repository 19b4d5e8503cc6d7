"""Governance over the built-in tools that act on the world: run_command, fetch_url, send_email."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import Call
from tests.policy.conftest import last_row

POLICY = """\
tools:
  rules:
    - {tool: run_command, subject: "rm *", verdict: deny}
    - {tool: fetch_url, subject: "*://*.internal/*", verdict: deny, reason: internal hosts stay internal}
    - {tool: send_email, subject: "*@evil.io", verdict: deny}
approvals:
  mode: always
  allow: ["run_command:echo *", "run_command:pwd"]
"""


def test_an_allowed_command_really_runs(consumer: Call, user_config: Callable[[str], Path], workspace: Path) -> None:
    user_config(POLICY)
    result = consumer("run_command", {"command": "echo governed && pwd"})
    assert not result["is_error"], result
    assert result["output"]["stdout"] == f"governed\n{workspace.resolve()}\n"
    row = last_row(workspace)
    assert row.rule == "approvals.allow[0] (run_command:echo *), approvals.allow[1] (run_command:pwd)"
    assert row.subjects == ["echo governed && pwd"]


def test_a_denied_part_stops_the_whole_command_before_it_starts(
    consumer: Call, user_config: Callable[[str], Path], workspace: Path
) -> None:
    user_config(POLICY)
    (workspace / "keep.txt").write_text("x")
    result = consumer("run_command", {"command": "echo hi && sudo rm -f keep.txt"})
    assert result["error_type"] == "denied" and "tools.rules[0]" in result["message"]
    assert (workspace / "keep.txt").exists()
    result = consumer("run_command", {"command": "echo hi; touch made.txt"})  # not covered: asks, nobody answers
    assert result["error_type"] == "denied" and not (workspace / "made.txt").exists()


def test_urls_and_recipients_are_judged_before_any_connection(
    consumer: Call, user_config: Callable[[str], Path], workspace: Path
) -> None:
    user_config(POLICY)
    result = consumer("fetch_url", {"url": "https://db.internal/rows"})
    assert result["message"] == "Refused by policy: internal hosts stay internal."
    result = consumer("send_email", {"to": ["Boss <BOSS@EVIL.IO>"], "subject": "hi", "body": "x"})
    assert result["error_type"] == "denied" and last_row(workspace).rule == "tools.rules[2]"
