from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from toolrig.cli import app


def explain(workspace: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["policy", "explain", *args, "--root", str(workspace)], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


CONFIG = """\
tools:
  deny: [read_output]
  rules:
    - {tool: shell, subject: 'rm *', verdict: deny, reason: no deleting}
approvals:
  mode: smart
  allow: ['shell:git *']
rate_limits:
  shell: 30/minute
agents:
  reader:
    tools: [peek, calculate]
"""


def test_explain_names_the_deciding_rule_with_file_and_line(
    workspace: Path, user_config: Callable[[str], Path], governed_catalog: None
) -> None:
    path = user_config(CONFIG)
    code, out, _ = explain(workspace, "shell", "--json", '{"command": "git status && sudo rm -rf build"}')
    assert code == 0
    assert "acts on (command): git status && sudo rm -rf build" in out
    assert "runs: 'git status' | 'sudo rm -rf build'" in out
    assert "decision: DENY" in out and f"decided by: tools.rules[0]  ({path}:4)" in out
    assert "reason: no deleting" in out
    assert "tools.rules[0]: deny shell 'rm *': matches 'rm -rf build'" in out
    assert "rate limits: 30/minute (rate_limits.shell)" in out


def test_explain_as_json_shows_the_trace_and_approval_settings(
    workspace: Path, user_config: Callable[[str], Path], governed_catalog: None
) -> None:
    path = user_config(CONFIG)
    code, out, _ = explain(workspace, "shell", "--json", '{"command": "git log > out.txt"}', "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["verdict"] == "ask"
    assert report["rule"] == "approvals.allow[0] (shell:git *)" and (report["file"], report["line"]) == (str(path), 7)
    assert report["not_plain"] == ["redirects output to a file (> out.txt)"]
    assert report["approvals"] == {"mode": "smart", "fallback": "deny", "timeout_seconds": 300.0}
    assert report["units"] == ["git log"]


def test_explain_for_an_agent_and_for_tools_the_config_does_not_offer(
    workspace: Path, user_config: Callable[[str], Path], governed_catalog: None
) -> None:
    user_config(CONFIG)
    code, out, _ = explain(workspace, "shell", "--json", '{"command": "ls"}', "--agent", "reader")
    assert code == 0 and "decided by: agents.reader.tools" in out and "(agent: reader)" in out
    code, out, _ = explain(workspace, "peek", "--json", '{"paths": ["a"]}', "--agent", "reader")
    assert "decision: ALLOW" in out and "read-only" in out
    code, out, _ = explain(workspace, "read_output", "--json", '{"handle": "x"}')
    # Names the one setting that hides it, as the real call's audit row does (issue 11, 4-5).
    assert code == 0 and "decision: DENY" in out and "decided by: tools.deny" in out


def test_explain_refuses_bad_arguments_and_unknown_tools(
    workspace: Path, user_config: Callable[[str], Path], governed_catalog: None
) -> None:
    user_config(CONFIG)
    code, _, err = explain(workspace, "shell", "--json", '{"comand": "ls"}')  # a typo: `cmd` is read as command
    assert code == 2 and "command" in err
    code, _, err = explain(workspace, "nope")
    assert code == 2 and "no tool named 'nope'" in err
    code, _, err = explain(workspace, "shell", "--json", "[1]")
    assert code == 2 and "JSON object" in err


PROFILE_CONFIG = """\
tools:
  rules:
    - {tool: Bash, subject: 'git push*', verdict: deny, reason: no pushing}
approvals:
  mode: always
  allow: ['Bash:git *']
"""


def test_explain_reads_a_profile_name_and_its_arguments_as_the_real_call_is_decided(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    from toolrig.policy.audit import AuditLog
    from toolrig.rig import Rig

    path = user_config(PROFILE_CONFIG)
    code, out, _ = explain(workspace, "Bash", "--json", '{"command": "git push", "timeout": 5000}')
    assert code == 0, out
    assert "tool: Bash = run_command (profile claude)" in out
    assert "decision: DENY" in out and f"decided by: tools.rules[0]  ({path}:3)" in out
    code, out, _ = explain(workspace, "run_terminal_command", "--profile", "codebuff", "--format", "json",
                           "--json", '{"command": "git status"}')  # fmt: skip
    report = json.loads(out)
    assert code == 0 and report["canonical_tool"] == "run_command" and report["profile"] == "codebuff"
    assert report["verdict"] == "allow" and report["rule"] == "approvals.allow[0] (Bash:git *)"
    with Rig(workspace, profile="claude") as rig:
        assert rig.call_sync("Bash", {"command": "git push", "timeout": 5000}).error_type == "denied"
    log = AuditLog(workspace / ".toolrig")
    [row] = log.query(limit=None)
    log.close()
    assert (row.tool, row.called_as, row.decision, row.rule) == ("run_command", "Bash", "deny", "tools.rules[0]")
