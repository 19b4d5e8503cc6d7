from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from tests.support.fake_llm import FakeLLM, Text, reply
from toolrig.cli import app


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout + result.stderr


def test_capabilities_shows_the_summary_and_refresh_writes_it(workspace: Path, user_config: object) -> None:
    code, out = run("capabilities", "--root", str(workspace))
    assert code == 0 and "**Shell** (run_command)" in out
    assert not (workspace / ".toolrig" / "capabilities.md").exists()  # showing writes nothing
    code, out = run("capabilities", "--refresh", "--root", str(workspace))
    assert code == 0 and "grouping: by tool group" in out
    assert (workspace / ".toolrig" / "capabilities.md").read_text().rstrip() == out.rstrip()


def test_capabilities_alone_shows_the_summary_its_help_promises(
    workspace: Path, user_config: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)  # no arguments at all: the workspace is the current directory
    code, out = run("capabilities")
    assert code == 0 and "**Shell** (run_command)" in out and "Usage:" not in out


def test_capabilities_refresh_uses_the_configured_model(workspace: Path, user_config, llm: FakeLLM) -> None:  # type: ignore[no-untyped-def]
    user_config(
        "llm:\n"
        f"  model: gpt-test\n  base_url: {llm.openai_url}\n  api_key: k\n  max_retries: 0\n"
        "tools:\n  allow: [calculate, read_files]\n"
    )
    grouping = {"themes": [{"title": "Everything", "summary": "read and count", "tools": ["calculate", "read_files"]}]}
    llm.script(reply(Text(json.dumps(grouping))))
    code, out = run("capabilities", "--refresh", "--root", str(workspace))
    assert code == 0, out
    assert "- **Everything** (calculate, read_files): read and count." in out


def test_chat_slash_capabilities_prints_the_summary(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolrig.agent.providers import ProviderSettings
    from toolrig.commands._chat_impl import Chat
    from toolrig.rig import Rig

    buffer = io.StringIO()
    stdin = open(os.devnull)  # noqa: SIM115 - the chat's terminal channel wants a real descriptor
    monkeypatch.setattr(sys, "stdin", stdin)
    settings = ProviderSettings(provider="openai", model="m", api_key="k", base_url="http://127.0.0.1:9/v1")
    with Rig(workspace) as rig:
        chat = Chat(rig, settings, {}, Console(file=buffer, width=200))
        assert chat.command("/capabilities") is True
    stdin.close()
    assert "# What you can do here" in buffer.getvalue()
