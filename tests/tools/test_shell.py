from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolrig import Rig
from toolrig.errors import ConfigError
from toolrig.result import ToolResult


def shell(workspace: Path, **settings: Any) -> Rig:
    return Rig(workspace, config={"tool_config": {"run_command": settings}} if settings else {})


def run(rig: Rig, command: str, session_id: str | None = None, **args: Any) -> ToolResult:
    return rig.call_sync("run_command", {"command": command, **args}, session_id=session_id)


def test_a_command_returns_its_output_and_exit_code(workspace: Path) -> None:
    result = run(shell(workspace), "echo hello; echo oops >&2; exit 4")
    assert result.output["stdout"] == "hello\n"
    assert result.output["stderr"] == "oops\n"
    assert result.output["exit_code"] == 4
    assert result.output["timed_out"] is False
    assert result.output["cwd"] == "."


def test_the_working_directory_persists_within_a_session_but_variables_do_not(workspace: Path) -> None:
    (workspace / "pkg" / "inner").mkdir(parents=True)
    rig = shell(workspace)
    first = run(rig, "cd pkg && export FLAVOUR=mint && cd inner", session_id="s1")
    assert not first.is_error, first
    assert first.output["cwd"] == "pkg/inner"
    second = run(rig, 'pwd; echo "flavour=${FLAVOUR-unset}"', session_id="s1")
    assert second.output["stdout"] == f"{workspace / 'pkg' / 'inner'}\nflavour=unset\n"
    other = run(rig, "pwd", session_id="s2")
    assert other.output["stdout"] == f"{workspace}\n"


def test_remembered_directories_are_bounded_and_the_least_recent_session_forgets_first(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session per sessionless MCP request (2026-07-28 HTTP) must not grow the table without limit."""
    from toolrig.tools import shell as shell_module

    monkeypatch.setattr(shell_module, "MAX_SESSIONS", 2)
    (workspace / "pkg").mkdir()
    rig = shell(workspace)
    for session in ("a", "b", "c"):
        assert run(rig, "cd pkg", session_id=session).output["cwd"] == "pkg"
    assert run(rig, "pwd", session_id="b").output["stdout"] == f"{workspace / 'pkg'}\n"
    assert run(rig, "pwd", session_id="a").output["stdout"] == f"{workspace}\n"  # forgotten first
    for session in "defgh":
        run(rig, "true", session_id=session)  # sessions that stay at the root keep no entry
    assert run(rig, "pwd", session_id="b").output["stdout"] == f"{workspace / 'pkg'}\n"


def test_an_explicit_cwd_is_used_and_then_remembered(workspace: Path) -> None:
    (workspace / "docs").mkdir()
    rig = shell(workspace)
    assert run(rig, "pwd", cwd="docs").output["stdout"] == f"{workspace / 'docs'}\n"
    assert run(rig, "pwd").output["stdout"] == f"{workspace / 'docs'}\n"


def test_cwd_outside_the_workspace_is_refused(workspace: Path) -> None:
    result = run(shell(workspace), "pwd", cwd="../")
    assert result.error_type == "denied"


def test_a_cd_that_leaves_the_workspace_is_not_carried_into_the_next_call(workspace: Path) -> None:
    rig = shell(workspace)
    left = run(rig, "cd / && pwd")
    assert left.output["stdout"] == "/\n"
    assert left.output["cwd"] == "."
    assert run(rig, "pwd").output["stdout"] == f"{workspace}\n"


def test_a_timeout_stops_the_command_and_says_so(workspace: Path) -> None:
    result = run(shell(workspace), "echo started; sleep 30", timeout_seconds=0.5)
    assert result.output["timed_out"] is True
    assert result.output["stopped"] == "timeout"
    assert result.output["stdout"] == "started\n"
    assert result.output["exit_code"] == -15  # SIGTERM was enough


def test_no_timeout_is_refused_unless_config_allows_it(workspace: Path) -> None:
    refused = run(shell(workspace), "true", timeout_seconds=-1)
    assert refused.error_type == "denied"
    allowed = run(shell(workspace, allow_no_timeout=True), "true", timeout_seconds=-1)
    assert allowed.output["exit_code"] == 0


@pytest.mark.parametrize("timeout", [0, -2, -0.5])
def test_a_timeout_must_be_positive_or_minus_one(workspace: Path, timeout: float) -> None:
    result = run(shell(workspace), "true", timeout_seconds=timeout)
    assert result.error_type == "invalid_input" and "timeout_seconds" in result.message


def test_a_timeout_over_the_configured_maximum_is_refused(workspace: Path) -> None:
    result = run(shell(workspace, max_timeout_seconds=5), "true", timeout_seconds=10)
    assert result.error_type == "invalid_input" and "maximum of 5" in result.message


def test_argv_mode_runs_without_a_shell(workspace: Path) -> None:
    rig = shell(workspace, mode="argv")
    result = run(rig, "echo $HOME '; rm -rf /' `id` \"two words\"")
    assert result.output["stdout"] == "$HOME ; rm -rf / `id` two words\n"
    missing = run(rig, "no-such-program-xyz")
    assert missing.output["exit_code"] == 127


def test_argv_mode_refuses_unbalanced_quotes(workspace: Path) -> None:
    result = run(shell(workspace, mode="argv"), "echo 'unclosed")
    assert result.error_type == "invalid_input"


def test_an_allowlist_admits_matching_commands_only(workspace: Path) -> None:
    rig = shell(workspace, allow=["echo *", "true"])
    assert run(rig, "echo ok && true").output["stdout"] == "ok\n"
    refused = run(rig, "echo ok && ls")
    assert refused.error_type == "denied" and "'ls' matches no allowed pattern" in refused.message


def test_an_allowlist_refuses_commands_that_are_not_plain(workspace: Path) -> None:
    result = run(shell(workspace, allow=["echo *"]), "echo $(whoami)")
    assert result.error_type == "denied" and "command substitution" in result.message


def test_output_is_cut_in_the_middle_at_the_configured_size(workspace: Path) -> None:
    result = run(shell(workspace, max_output_chars=1000), "seq 1 100000")
    stdout = result.output["stdout"]
    assert stdout.startswith("1\n2\n3\n")
    assert stdout.endswith("99999\n100000\n")
    assert "characters dropped from the middle" in stdout
    assert len(stdout) < 1100


def test_colour_escapes_are_stripped(workspace: Path) -> None:
    result = run(shell(workspace), r"printf '\033[1;32mgreen\033[0m\n'")
    assert result.output["stdout"] == "green\n"


def test_subjects_are_the_command(workspace: Path) -> None:
    rig = shell(workspace)
    tool = rig.registry.get("run_command")
    assert tool.subjects(tool.input_model(command="git status")) == ["git status"]


def test_a_mistyped_setting_is_a_config_error_with_file_and_line(workspace: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("tool_config:\n  run_command:\n    mode: shell\n    alow: ['git *']\n")
    with pytest.raises(ConfigError) as caught:
        Rig(workspace, config=config).tools()
    assert f"{config}:4" in str(caught.value) and "alow" in str(caught.value)


def test_an_invalid_mode_is_a_config_error(workspace: Path) -> None:
    with pytest.raises(ConfigError, match="mode"):
        Rig(workspace, config={"tool_config": {"run_command": {"mode": "zsh"}}}).tools()


def test_a_running_command_reports_progress_to_the_calls_event_sink(workspace: Path) -> None:
    from toolrig.events import Event, ToolProgressEvent

    class Sink:
        def __init__(self) -> None:
            self.seen: list[Event] = []

        def emit(self, event: Event) -> None:
            self.seen.append(event)

    sink = Sink()
    rig = shell(workspace, progress_interval_seconds=0.05)
    result = rig.call_sync("run_command", {"command": "echo started; sleep 0.6", "timeout_seconds": 10}, events=sink)
    assert not result.is_error, result
    progress = [e for e in sink.seen if isinstance(e, ToolProgressEvent)]
    assert len(progress) >= 2
    assert all(p.name == "run_command" and p.total == 10 for p in progress)
    assert [p.progress for p in progress] == sorted(p.progress for p in progress)
    assert "bytes of output so far" in (progress[-1].message or "")


def test_progress_interval_has_a_floor(workspace: Path) -> None:
    with pytest.raises(ConfigError, match="progress_interval_seconds"):
        shell(workspace, progress_interval_seconds=0.001)
