from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from tests.agent.subagents.test_types import REVIEWER, write
from toolrig.cli import app
from toolrig.config import set_trust


def test_agents_list_and_show_print_where_each_type_came_from(workspace: Path) -> None:
    set_trust(workspace)
    write(workspace / ".claude" / "agents", "reviewer.md", REVIEWER)
    runner = CliRunner()
    listed = runner.invoke(app, ["agents", "list", "--root", str(workspace)])
    assert listed.exit_code == 0, listed.output
    assert "reviewer" in listed.output and "project" in listed.output and "reviewer.md" in listed.output
    shown = runner.invoke(app, ["agents", "show", "reviewer", "--root", str(workspace)])
    assert shown.exit_code == 0 and "You review code." in shown.output and "run_command" in shown.output
    missing = runner.invoke(app, ["agents", "show", "nobody", "--root", str(workspace)])
    assert missing.exit_code == 1 and "no agent type" in missing.output
