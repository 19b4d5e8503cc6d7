"""Issue 11: one gate for every call. Each test here failed on the main branch before the gate was one thing."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from tests.policy.conftest import last_row
from tests.support.run_hooks import scope_with_hooks
from toolrig import Rig, ToolError
from toolrig.config import load_config
from toolrig.errors import ConfigError, ErrorType
from toolrig.hooks import HookChain, HookEvent, Hooks
from toolrig.policy.audit import AuditLog

SECRETS_DENY = 'tools: {rules: [{tool: "*", subject: "secrets/**", verdict: deny}]}\n'


def _rows(workspace: Path) -> list[object]:
    log = AuditLog(workspace / ".toolrig")
    try:
        return list(log.query(limit=None))
    finally:
        log.close()


# ------------------------------------------------------------------------------ 1: subjects from declarations


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("edit", {"file_path": "a/../secrets/k.txt", "old_string": "old", "new_string": "new"}),
        ("propose_str_replace", {"path": "a/../secrets/k.txt", "replacements": [{"old": "old", "new": "new"}]}),
        ("propose_write_file", {"path": "a/../secrets/k.txt", "content": "new"}),
        ("str_replace", {"path": "a/../secrets/k.txt", "replacements": [{"old": "old", "new": "new"}]}),
        ("write_file", {"path": "./secrets/k.txt", "content": "new"}),
    ],
)
def test_every_edit_tool_is_refused_by_a_path_subject_rule(
    tool: str, args: dict[str, object], workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user_config(SECRETS_DENY)
    (workspace / "secrets").mkdir()
    (workspace / "a").mkdir()
    (workspace / "secrets" / "k.txt").write_text("old\n")
    result = Rig(workspace).call_sync(tool, args)
    assert result.error_type == "denied" and "tools.rules[0]" in (result.message or "")
    assert (workspace / "secrets" / "k.txt").read_text() == "old\n"
    assert last_row(workspace).rule == "tools.rules[0]"


# ------------------------------------------------------------------------------ 2: the catalog is narrowed eagerly


@pytest.mark.anyio
async def test_the_executor_honours_tools_deny_before_anything_reads_the_registry(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user_config("tools: {deny: [run_command]}\n")
    rig = Rig(workspace)
    result = await rig.executor.invoke("run_command", {"command": "touch made.txt"})
    assert result.error_type == "denied"
    assert not (workspace / "made.txt").exists()


# ------------------------------------------------------------------------------ 3: one hook gate


class Refuse(Hooks):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def before_tool(self, event: HookEvent) -> None:
        if event.tool == "calculate" and "666" in json.dumps(event.tool_args):
            raise ToolError(ErrorType.DENIED, "no devilry")

    async def after_tool(self, event: HookEvent) -> None:
        self.log.append(f"after:{event.tool}")


@pytest.mark.anyio
async def test_a_refusing_before_tool_hook_is_the_same_decision_as_a_rig_hook_and_as_a_run_hook(
    workspace: Path,
) -> None:
    log: list[str] = []
    as_rig_hook = Rig(workspace, config={}, hooks=[Refuse(log)])
    refused = await as_rig_hook.call("calculate", {"expression": "666"})
    assert refused.error_type == "denied" and refused.message == "no devilry"
    first = last_row(workspace)
    as_run = Rig(workspace, config={})
    chain = HookChain()
    chain.add(Refuse(log))
    refused = await as_run.call("calculate", {"expression": "666"}, scope=scope_with_hooks(chain))
    assert refused.error_type == "denied" and refused.message == "no devilry"
    second = last_row(workspace)
    assert (first.decision, first.rule) == (second.decision, second.rule) == ("deny", "hooks.before_tool")


@pytest.mark.anyio
async def test_after_tool_fires_only_for_calls_that_ran(workspace: Path) -> None:
    log: list[str] = []
    rig = Rig(workspace, config={"tools": {"deny": ["run_command"]}}, hooks=[Refuse(log)])
    await rig.call("no_such_tool", {})  # unknown
    await rig.call("calculate", {"expresion": "1"})  # invalid arguments
    await rig.call("run_command", {"command": "ls"})  # denied by config
    await rig.call("calculate", {"expression": "666"})  # refused by the hook itself
    assert log == []
    assert not (await rig.call("calculate", {"expression": "1+1"})).is_error
    assert log == ["after:calculate"]


# ------------------------------------------------------------------------------ 4: explain and audit tell the truth


def test_explain_the_real_call_and_its_audit_row_agree_on_a_tool_level_deny(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    from toolrig.cli import app

    user_config('tool_config: {run_command: {deny: ["git push *"]}}\n')
    argv = ["policy", "explain", "run_command", "--json", '{"command": "git push"}', "--format", "json"]
    explained = CliRunner().invoke(app, [*argv, "--root", str(workspace)], catch_exceptions=False)
    report = json.loads(explained.stdout)
    assert (report["verdict"], report["rule"]) == ("deny", "tool_config.run_command.deny")
    result = Rig(workspace).call_sync("run_command", {"command": "git push"})
    assert result.error_type == "denied"
    row = last_row(workspace)
    assert (row.decision, row.rule) == ("deny", "tool_config.run_command.deny")


# ------------------------------------------------------------------------------ 5: a denied tool leaves a row


def test_a_call_of_a_tool_the_config_hides_is_refused_and_audited(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user_config("tools: {deny: [run_command]}\n")
    result = Rig(workspace).call_sync("run_command", {"command": "ls"})
    assert result.error_type == "denied"
    row = last_row(workspace)
    assert (row.tool, row.decision, row.rule) == ("run_command", "deny", "tools.deny")


# ------------------------------------------------------------------------------ 6: names that match no tool


@pytest.mark.parametrize(
    ("config", "key", "suggestion"),
    [
        ("tools: {deny: [Bassh]}\n", "tools.deny[0]", "Bash"),
        ("tools: {allow: ['*'], rules: [{tool: raed_files, verdict: deny}]}\n", "tools.rules[0].tool", "read_files"),
        ("approvals: {allow: ['wirte_file:*.md']}\n", "approvals.allow[0]", "write_file"),
        ("agents: {r: {tools: ['reed_*']}}\n", "agents.r.tools[0]", None),
        ("rate_limits: {fetch_ulr: 1/minute}\n", "rate_limits.fetch_ulr", "fetch_url"),
    ],
)
def test_a_name_that_matches_no_tool_warns_with_the_closest_names_and_fails_in_strict_mode(
    config: str,
    key: str,
    suggestion: str | None,
    workspace: Path,
    user_config: Callable[[str], Path],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user_config(config)
    with caplog.at_level(logging.WARNING, logger="toolrig.config"):
        rig = Rig(workspace)
    [warning] = rig.warnings
    assert warning.key == key and "matches no tool" in warning.message
    if suggestion:
        assert f"did you mean {suggestion}" in warning.message
    assert any(key in r.getMessage() for r in caplog.records)
    monkeypatch.setenv("TOOLRIG_STRICT", "1")
    with pytest.raises(ConfigError, match="matches no tool"):
        Rig(workspace)
    monkeypatch.delenv("TOOLRIG_STRICT")
    with pytest.raises(ConfigError):
        Rig(workspace, strict=True)


def test_bash_in_tools_deny_names_run_command_so_nothing_is_warned(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user_config("tools: {deny: [Bash]}\n")  # Claude Code's and CamelAGI's name: see tests/policy/test_profile_names
    rig = Rig(workspace)
    assert rig.warnings == [] and "run_command" not in rig.executor.registry


def test_the_strict_flag_makes_a_name_that_matches_no_tool_exit_2(
    workspace: Path, user_config: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    user_config("tools: {deny: [Bassh]}\n")
    monkeypatch.delenv("TOOLRIG_STRICT", raising=False)
    toolrig = str(Path(sys.executable).parent / "toolrig")
    lenient = subprocess.run([toolrig, "tools", "list", "--root", str(workspace)], capture_output=True, text=True)
    assert lenient.returncode == 0 and "did you mean Bash" in lenient.stderr
    strict = subprocess.run(
        [toolrig, "--strict", "tools", "list", "--root", str(workspace)], capture_output=True, text=True
    )
    assert strict.returncode == 2 and "'Bassh' matches no tool" in strict.stderr, strict.stderr


# ------------------------------------------------------------------------------ 7: untrusted workspaces narrow


def test_an_untrusted_workspace_applies_what_narrows_and_ignores_what_widens(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user_config("approvals: {mode: smart, fallback: deny}\nrate_limits: {fetch_url: 10/minute, calculate: 5/minute}\n")
    (workspace / ".toolrig").mkdir(exist_ok=True)
    (workspace / ".toolrig" / "config.yaml").write_text(
        "approvals: {mode: always, fallback: allow}\n"
        "rate_limits: {fetch_url: 1/minute, calculate: 100/minute, send_email: 1/hour}\n"
        "tools: {deny: [run_command], rules: [{tool: write_file, verdict: deny}]}\n"
    )
    loaded = load_config(workspace)
    config = loaded.config
    assert config.approvals.mode == "always"  # stricter: applies at once
    assert config.approvals.fallback == "deny"  # looser: ignored
    assert config.rate_limits == {"fetch_url": "1/minute", "calculate": "5/minute", "send_email": "1/hour"}
    assert config.tools.deny == ["run_command"] and config.tools.rules[0].tool == "write_file"
    warned = " ".join(loaded.warnings)
    assert "approvals.fallback" in warned and "rate_limits.calculate" in warned


def test_explain_never_names_an_ignored_workspace_line_as_the_deciding_rule(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user = user_config("approvals: {mode: smart}\ntools:\n  rules:\n    - {tool: calculate, verdict: deny}\n")
    (workspace / ".toolrig").mkdir(exist_ok=True)
    theirs = workspace / ".toolrig" / "config.yaml"
    theirs.write_text("approvals: {mode: 'off'}\ntools:\n  rules:\n    - {tool: calculate, verdict: allow}\n")
    loaded = load_config(workspace)
    assert loaded.where("tools", "rules", "0") == (user, 4)
    assert loaded.where("approvals", "mode")[0] != theirs
    rig = Rig(workspace)
    call, refused = anyio.run(lambda: rig.executor.decide("calculate", {"expression": "1"}))
    assert refused is not None and call.decided_by == "tools.rules[0]"


# ------------------------------------------------------------------------------ D18 b/c: what a hidden tool leaks


def test_an_agent_sees_only_its_own_tools_in_hints_and_no_schema_of_a_hidden_one(
    workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user_config("agents: {reader: {tools: [read_files]}}\n")
    rig = Rig(workspace, agent="reader")
    unknown = rig.call_sync("no_such_tool", {})
    assert unknown.error_type == "unknown_tool"
    assert unknown.next_action_hint == "Call one of the available tools: read_files."
    hidden = rig.call_sync("run_command", {})  # invalid arguments, but never validated: not offered
    assert hidden.error_type == "denied" and "command" not in (hidden.message or "").replace("run_command", "")
    row = last_row(workspace)
    assert (row.decision, row.rule) == ("deny", "agents.reader.tools")


def test_an_agent_id_unsaid_does_not_shed_the_rigs_agent(workspace: Path, user_config: Callable[[str], Path]) -> None:
    """``agent_id=None`` or ``""``, or a keyword a tool's own ``agent_id`` field takes: the call ran as no agent,
    outside the agent's tool list."""
    from toolrig import tool
    from toolrig.registry import Registry

    @tool
    def recall(topic: str, agent_id: str) -> str:
        """What an agent remembers of a topic."""
        return f"{topic} for {agent_id}"

    @tool
    def peek(path: str) -> str:
        """The one tool the reader may use."""
        return path

    user_config("agents: {reader: {tools: [peek]}}\n")
    rig = Rig(workspace, agent="reader", registry=Registry([recall, peek]))
    for call in (
        lambda: rig.call_sync("recall", {"topic": "x", "agent_id": "a"}, agent_id=None),
        lambda: rig.call_sync("recall", {"topic": "x", "agent_id": "a"}, agent_id=""),
        lambda: anyio.run(lambda: rig.call("recall", {"topic": "x", "agent_id": "a"}, agent_id=None)),
        lambda: rig.call_sync("recall", topic="x", agent_id="a"),  # the tool's field: not the executor's option
        lambda: anyio.run(lambda: rig.call("recall", topic="x", agent_id="a")),
    ):
        result = call()
        assert result.error_type == "denied", result
        assert (last_row(workspace).decision, last_row(workspace).rule) == ("deny", "agents.reader.tools")
    allowed = Rig(workspace, registry=Registry([recall, peek])).call_sync("recall", topic="x", agent_id="a")
    assert allowed.output == {"result": "x for a"}  # with no agent on the rig, the keyword is the tool's argument


# ------------------------------------------------------------------------------ D9: a path deny hides the subtree


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_subtree", {"paths": ["."]}),
        ("code_search", {"pattern": "DB_PASS"}),
        ("glob", {"pattern": "**/*.txt"}),
        ("list_directory", {"directories": [{"path": ".", "recursive": True}]}),
    ],
)
def test_a_path_deny_rule_keeps_the_path_out_of_every_recursive_read(
    tool: str, args: dict[str, object], workspace: Path, user_config: Callable[[str], Path]
) -> None:
    user_config(SECRETS_DENY)
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "prod.txt").write_text("DB_PASS=hunter2\n")
    (workspace / "open.txt").write_text("DB_PASS is documented elsewhere\n")
    result = Rig(workspace).call_sync(tool, args)
    assert not result.is_error, result
    text = result.to_json()
    assert "hunter2" not in text and "prod.txt" not in text
    assert "open.txt" in text
