"""The README's examples are code: they must run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.support.fake_llm import FakeLLM

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_python_quick_example_runs_and_prints_what_it_says(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    block = python_blocks()[0]
    monkeypatch.chdir(workspace)
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - our own README
    printed = capsys.readouterr().out
    assert "'output': {'result': 'HIHI'}" in printed


def test_the_readme_has_exactly_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)
    assert len(commands) == 2
    assert commands[1].strip() == "bash .ci/run"


def test_the_agent_example_runs_against_a_provider(
    workspace: Path,
    toolrig_home: Path,
    llm: FakeLLM,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support.fake_llm import Call, Text, reply

    agent = {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": llm.anthropic_url, "api_key": "k"}
    # The config the example's comment asks for: under the default (approvals off) nothing would pause.
    (toolrig_home / "config.yaml").write_text(yaml.safe_dump({"llm": agent, "approvals": {"mode": "smart"}}))
    (workspace / "build").mkdir()
    llm.script(
        reply(Call("toolu_1", "calculate", '{"expression": "6 * 7"}')),
        reply(Text("42")),
        reply(Call("toolu_2", "run_command", '{"command": "rm -rf build"}')),
        reply(Text("Deleted.")),
    )
    block = next(b for b in python_blocks() if "run_agent" in b)
    monkeypatch.chdir(workspace)
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - our own README
    printed = capsys.readouterr().out
    assert printed.startswith("42 $0.0012 ")  # two turns of 100 in / 20 out at $3 / $15 per million
    assert printed.splitlines()[-1] == "Deleted."  # it paused at run_command, was approved, resumed and ran
    assert not (workspace / "build").exists()


def test_the_main_command_starts_the_mcp_server_it_promises(workspace: Path, toolrig_home: Path) -> None:
    import os
    import shlex
    import subprocess
    import sys

    from tests.support.mcp_peers import running

    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("## ", 1)[0]
    first = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)[0]
    serve = shlex.split(first.split("&&")[-1])
    assert serve[0] == ".venv/bin/toolrig" and serve[1:3] == ["mcp", "serve"]
    toolrig = str(Path(sys.executable).parent / "toolrig")
    env = {**os.environ, "TOOLRIG_HOME": str(toolrig_home)}
    env.pop("TOOLRIG_MCP_TOKEN", None)
    with running([toolrig, *serve[1:], "--port", "0"], env=env, cwd=workspace) as process:
        assert process.stderr is not None
        lines = [process.stderr.readline()]
        while not lines[-1].startswith("toolrig: or: claude mcp add"):
            lines.append(process.stderr.readline())
            assert lines[-1], lines
    assert "MCP server listening on http://127.0.0.1:" in lines[0]
    # The HTTP client entry the README shows is the shape the server prints, token header included.
    printed = json.loads("".join(lines[lines.index("{\n") : lines.index("}\n") + 1]))["mcpServers"]["toolrig"]
    [entry] = re.findall(r'`("toolrig": \{"type": "http".*?\}\})`', quick)
    shown = json.loads("{" + entry + "}")["toolrig"]
    assert shown.keys() == printed.keys() and shown["headers"].keys() == printed["headers"].keys()
    assert printed["headers"]["Authorization"].startswith("Bearer ")
    assert shown["headers"]["Authorization"] == "Bearer TOKEN"
    # The client snippet is valid JSON whose arguments the command accepts.
    snippet = json.loads(re.findall(r"```json\n(.*?)```", quick, flags=re.S)[0])
    args = snippet["mcpServers"]["toolrig"]["args"]
    assert args[:2] == ["mcp", "serve"]
    helped = subprocess.run([toolrig, *args[:2], "--help"], capture_output=True, text=True, check=False)
    assert all(option in helped.stdout for option in args[2:] if option.startswith("--"))


def test_the_quick_start_shows_the_one_config_line_that_makes_writes_and_commands_ask() -> None:
    from toolrig.config import Config

    quick = README.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("## ", 1)[0]
    [block] = re.findall(r"```yaml\n(.*?)```", quick, flags=re.S)
    assert Config.model_validate(yaml.safe_load(block)).approvals.mode == "smart"
    assert "Approvals are off by default" in quick
