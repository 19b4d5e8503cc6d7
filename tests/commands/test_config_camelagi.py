"""`toolrig config import camelagi`: CamelAGI's config and hooks, converted and working under toolrig."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from toolrig.cli import app
from toolrig.config import config_from
from toolrig.rig import Rig

CAMEL_CONFIG = """
provider: anthropic
model: claude-sonnet-4-20250514
apiKey: sk-ant-not-a-real-key
baseUrl: https://proxy.example/v1
thinking: high
effort: max
maxTurns: 40
timeoutSeconds: 300
tools: {deny: [WebFetch]}
approvals:
  mode: always
  allowlist: ["Bash:git *", "Edit:/src/*", "apply_patch:*"]
  timeoutSeconds: 60
  fallback: deny
  forwardTo: 4242
hooks: {enabled: true}
cron:
  - {id: daily, name: Daily, schedule: "0 9 * * *", prompt: Summarize yesterday, session: s}
serve: {port: 18789}
"""


@pytest.fixture
def camel(tmp_path: Path) -> Path:
    home = tmp_path / ".camelagi"
    (home / "hooks").mkdir(parents=True)
    (home / "config.yaml").write_text(CAMEL_CONFIG, encoding="utf-8")
    (home / "hooks" / "before_tool.log.sh").write_text(
        'echo "sh $CAMELAGI_HOOK_POINT $CAMELAGI_HOOK_TOOL" >> "$CAMEL_LOG"\nexit 2\n', encoding="utf-8"
    )
    (home / "hooks" / "after_tool.audit.js").write_text(
        'require("fs").appendFileSync(process.env.CAMEL_LOG, `js ${process.env.CAMELAGI_HOOK_TOOL}\\n`)\n',
        encoding="utf-8",
    )
    (home / "hooks" / "before_tool.$(touch pwned).sh").write_text("true\n", encoding="utf-8")
    (home / "hooks" / "README.md").write_text("not a hook\n", encoding="utf-8")
    return home


def run_import(*argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["config", "import", "camelagi", *argv], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_the_config_converts_into_toolrigs_and_names_what_it_leaves_out(camel: Path, toolrig_home: Path) -> None:
    code, _, err = run_import(str(camel))
    assert code == 0, err
    written = yaml.safe_load((toolrig_home / "config.yaml").read_text(encoding="utf-8"))
    config = config_from(written).config
    assert config.llm.model == "claude-sonnet-4-20250514" and config.llm.base_url == "https://proxy.example/v1"
    assert (config.llm.thinking, config.llm.effort, config.llm.max_turns) == ("adaptive", "max", 40)
    assert config.llm.api_key is None and config.llm.api_key_env == "ANTHROPIC_API_KEY"
    assert config.llm.tool_profile == "camelagi"
    assert config.tools.deny == ["WebFetch"]
    assert config.approvals.allow == ["Bash:git *", "Edit:/src/*", "apply_patch:*"]
    assert (config.approvals.mode, config.approvals.timeout_seconds, config.approvals.fallback) == (
        "always",
        60,
        "deny",
    )
    assert config.hooks.enabled is True and [j.name for j in config.cron] == ["Daily"]
    assert config.llm.run_timeout_seconds == 300
    for word in ("apiKey", "forwardTo", "serve", "session", "$(touch pwned)"):
        assert word in err
    assert (toolrig_home / "config.yaml").stat().st_mode & 0o077 == 0
    code, _, err = run_import(str(camel))
    assert code == 2 and "--force" in err


def test_copy_key_copies_the_literal_key(camel: Path, toolrig_home: Path) -> None:
    assert run_import(str(camel / "config.yaml"), "--copy-key")[0] == 0
    assert "sk-ant-not-a-real-key" in (toolrig_home / "config.yaml").read_text(encoding="utf-8")


def test_converted_hooks_run_with_camelagis_variables_and_names_and_never_block(
    camel: Path, toolrig_home: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_import(str(camel))[0] == 0
    assert not list((toolrig_home / "hooks").glob("*pwned*"))
    log = tmp_path / "camel.log"
    monkeypatch.setenv("CAMEL_LOG", str(log))
    with Rig(workspace, profile="camelagi") as rig:
        result = rig.call_sync("Bash", {"command": "git --version"})  # allowed by "Bash:git *"
    assert not result.is_error, result.to_json()  # the sh hook exits 2: CamelAGI hooks never block
    assert log.read_text(encoding="utf-8").splitlines() == ["sh before_tool Bash", "js Bash"]
    assert not (workspace / "pwned").exists()


def test_a_missing_node_is_a_clear_warning_at_import_and_at_run_time(
    camel: Path,
    toolrig_home: Path,
    workspace: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    for program in ("bash", "echo", "cat"):
        found = shutil.which(program)
        assert found is not None
        (bare / program).symlink_to(found)
    monkeypatch.setenv("PATH", str(bare))
    code, _, err = run_import(str(camel))
    assert code == 0 and "node is not installed" in err
    monkeypatch.setenv("CAMEL_LOG", str(tmp_path / "camel.log"))
    (workspace / "src").mkdir()
    (workspace / "src" / "b.txt").write_text("y\n", encoding="utf-8")
    edit = {"file_path": "src/b.txt", "old_string": "y", "new_string": "z"}
    with caplog.at_level(logging.WARNING), Rig(workspace, profile="camelagi") as rig:
        assert not rig.call_sync("Edit", edit).is_error
    assert (workspace / "src" / "b.txt").read_text(encoding="utf-8") == "z\n"
    assert any("needs node, which is not installed" in r.getMessage() for r in caplog.records)


def test_camelagis_telegram_bot_becomes_the_telegram_channel_without_copying_its_token() -> None:
    from toolrig.commands._camelagi import convert
    from toolrig.config import Config

    seed = {"telegram": {"botToken": "123:AAA-literal", "allowedUsers": [42, -1, True, "7"], "chats": {"1": {}}}}
    out = convert(seed)
    assert out.config["channels"] == {"telegram": {"bot_token_env": "TELEGRAM_BOT_TOKEN", "allowed_users": [42]}}
    assert "123:AAA-literal" not in str(out.config)
    assert any("botToken is not copied" in n for n in out.notes)
    assert any("telegram.groups / telegram.chats" in n for n in out.notes)
    Config.model_validate(out.config)  # what it writes is a valid toolrig config
    by_variable = convert({"telegram": {"botToken": "${MY_BOT}", "allowedUsers": [5]}})
    assert by_variable.config["channels"]["telegram"]["bot_token_env"] == "MY_BOT"
    nobody = convert({"telegram": {"botToken": "x", "allowedUsers": []}})
    assert "channels" not in nobody.config and any("allowed_users by hand" in n for n in nobody.notes)
