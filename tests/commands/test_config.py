from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from toolrig.cli import app
from toolrig.config import set_trust


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_config_path_lists_the_user_file_then_the_workspace_file_with_their_state(
    workspace: Path, toolrig_home: Path
) -> None:
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("limits:\n  timeout_seconds: 5\n")
    code, out, _ = run("config", "path", "--root", str(workspace))
    user, ws = out.splitlines()
    assert code == 0
    assert user.startswith("user") and str(toolrig_home / "config.yaml") in user and "missing" in user
    assert ws.startswith("workspace") and "exists, not trusted" in ws


def test_config_check_exits_two_with_file_and_line(workspace: Path) -> None:
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("llm:\n  model: x\n  max_turns: lots\n")
    code, _, err = run("config", "check", "--root", str(workspace))
    assert code == 2 and "config.yaml:3: llm.max_turns:" in err
    (workspace / ".toolrig/config.yaml").write_text("llm:\n  max_turns: 3\n")
    code, out, _ = run("config", "check", "--root", str(workspace))
    assert code == 0 and out.startswith("ok: ")


def test_config_show_names_file_line_and_whether_an_untrusted_value_holds(workspace: Path, toolrig_home: Path) -> None:
    (toolrig_home / "config.yaml").write_text("limits:\n  timeout_seconds: 60\nllm:\n  model: claude-x\n")
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("limits:\n  timeout_seconds: 5\nllm:\n  model: evil\n")
    code, out, _ = run("config", "show", "--json", "--root", str(workspace))
    rows = {(r["key"], r["file"].split("/")[-2]): r for r in map(json.loads, out.splitlines())}
    assert code == 0
    assert rows[("llm.model", ".toolrig")] | {"file": ""} == {
        "key": "llm.model",
        "value": "evil",
        "file": "",
        "line": 4,
        "status": "ignored",
    }
    assert rows[("limits.timeout_seconds", ".toolrig")]["status"] == "narrowed"
    assert rows[("llm.model", toolrig_home.name)]["status"] == "trusted"
    set_trust(workspace)
    _, out, _ = run("config", "show", "--root", str(workspace))
    assert 'llm.model = "evil"    # ' in out and "config.yaml:4 (trusted)" in out


def test_config_keys_lists_every_setting_with_type_default_and_meaning() -> None:
    code, out, _ = run("config", "keys")
    assert code == 0
    line = next(row for row in out.splitlines() if row.startswith("llm.api_key_env "))
    assert "text | null" in line and "The variable holding the key" in line
    code, out, _ = run("config", "keys", "--json")
    keys = {json.loads(row)["key"] for row in out.splitlines()}
    assert {"approvals.mode", "agents.<name>.tools", "stores.kv.backend"} <= keys


def test_the_unknown_setting_hint_names_a_command_that_exists(workspace: Path) -> None:
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("tools:\n  alow: []\n")
    _, _, err = run("config", "check", "--root", str(workspace))
    assert "`toolrig config keys` lists the settings" in err
    assert run("config", "keys")[0] == 0


def test_config_check_lists_every_problem_of_every_file_not_only_the_first(workspace: Path, toolrig_home: Path) -> None:
    # The local-models recipe appends an llm: block; a file that had one now holds two, and YAML keeps the last.
    (toolrig_home / "config.yaml").write_text(
        "llm:\n  model: a\ntools:\n  denny: [x]\noutput:\n  max_chars: lots\nllm:\n  model: b\n"
    )
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("limits:\n  timeout_seconds: -1\n")
    code, out, err = run("config", "check", "--root", str(workspace))
    user, ws = toolrig_home / "config.yaml", workspace / ".toolrig/config.yaml"
    assert code == 2 and out == ""
    assert [line.split(": ", 3)[2] for line in err.splitlines()] == [
        f"{user}:4",
        f"{user}:6",
        f"{user}:7",
        f"{ws}:2",
    ], err
    assert f"{user}:7: llm: written twice (first at line 1)" in err


def test_config_check_runs_the_start_up_checks_a_command_would(workspace: Path) -> None:
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("tool_config:\n  calculat: {}\n")
    set_trust(workspace)
    code, _, err = run("config", "check", "--root", str(workspace))
    assert code == 2 and "config.yaml:2: tool_config.calculat: no tool has this name" in err
