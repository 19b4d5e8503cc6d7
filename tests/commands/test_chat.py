from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from tests.agent.fake_llm import Call, FakeLLM, Text, Thinking, reply
from tests.commands.terminal import Terminal
from toolrig.approvals import ApprovalRequest
from toolrig.commands._chat_impl import ask

TOOLRIG = str(Path(sys.executable).parent / "toolrig")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path)
    yield term
    term.close()


def write_config(home: Path, llm: FakeLLM, provider: str) -> None:
    agent = {
        "provider": provider,
        "model": "claude-test" if provider == "anthropic" else "gpt-test",
        "base_url": llm.anthropic_url if provider == "anthropic" else llm.openai_url,
        "api_key": "test-key",
        "max_retries": 0,
        "thinking": "adaptive",
    }
    (home / "config.yaml").write_text(yaml.safe_dump({"agent": agent}))


def test_chat_in_a_real_terminal_streams_shows_tools_and_cancels_a_turn_with_ctrl_c(
    terminal: Terminal, llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    write_config(toolrig_home, llm, "anthropic")
    llm.script(
        reply(
            Thinking("The user wants ", "arithmetic."),
            Text("Let me compute."),
            Call("toolu_1", "calculate", '{"expression": "6 * 7"}'),
        ),
        reply(Text("The answer is ", "42.")),
    )
    env = {
        "TOOLRIG_HOME": str(toolrig_home),
        "TERM": "xterm-256color",
        "PATH": os.environ["PATH"],
        "HOME": str(toolrig_home),
    }
    terminal.start([TOOLRIG, "chat", "--root", str(workspace)], env, workspace)
    terminal.wait_for("toolrig chat · claude-test · new session")
    terminal.wait_for("› ")
    terminal.type_line("what is six times seven?")
    screen = terminal.wait_for("The answer is 42.")
    assert "thinking… The user wants arithmetic." in screen
    assert "Let me compute." in screen
    assert '✓ calculate(expression="6 * 7")  → {"result":42}' in screen

    terminal.type_line("/usage")
    screen = terminal.wait_for("model calls")
    assert "2 model calls · 200 in · 40 out" in screen

    # Ctrl-C cancels a turn that is stuck mid-stream, and the chat goes on.
    llm.script(reply(Text("I will think about this for a very long"), hang_after=5))
    terminal.type_line("tell me a story")
    mark = len(terminal.screen())
    terminal.wait_for("I will think", after=mark - 200)
    terminal.send("C-c")
    terminal.wait_for("(cancelled)")
    terminal.type_line("/tools")
    terminal.wait_for("calculate")
    terminal.type_line("/sessions")
    screen = terminal.wait_for("turns  what is six")
    assert "\n* 2" in screen and "claude-test" in screen  # the current session is marked
    pid = terminal.pid()
    terminal.type_line("/exit")
    terminal.wait_exit(pid)
    final = terminal.screen()
    assert "Traceback" not in final
    assert len(llm.requests) == 3


def test_the_approval_prompt_takes_yes_always_and_no_with_a_reason() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100)
    answers = iter(["maybe", "y", "a", "n", "looks risky"])
    requests = [
        ApprovalRequest("r1", "wipe", {"target": "a"}, reason="destructive"),
        ApprovalRequest("r2", "run_command", {"command": "ls"}, subjects=("ls",)),
        ApprovalRequest("r3", "wipe", {"target": "b"}),
    ]
    decisions = ask(console, requests, read=lambda prompt: next(answers))
    assert [d.verdict for d in decisions] == ["allow_once", "allow_always", "deny"]
    assert decisions[1].patterns == ("ls",)
    assert decisions[2].reason == "looks risky"
    shown = out.getvalue()
    assert "wipe wants approval" in shown and "target='a'" in shown and "(destructive)" in shown
