from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.agent.fake_llm import Call, FakeLLM, Text, Thinking, reply
from tests.commands.terminal import Terminal

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
    # Governance asks before every calculation: the approval prompt is part of the conversation.
    rules = [{"tool": "calculate", "verdict": "ask", "reason": "checking arithmetic"}]
    (home / "config.yaml").write_text(yaml.safe_dump({"llm": agent, "tools": {"rules": rules}}))


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
    screen = terminal.wait_for("allow calculate? [y]es once, [a]lways, [n]o > ")
    assert 'calculate {"expression": "6 * 7"}' in screen and "why asked: checking arithmetic" in screen
    terminal.type_line("y")
    screen = terminal.wait_for("The answer is 42.")
    assert "thinking… The user wants arithmetic." in screen
    assert "Let me compute." in screen
    assert '✓ calculate(expression="6 * 7")  → {"result":42}' in screen

    # No, with a reason: the model reads the refusal and answers without the tool.
    llm.script(reply(Call("toolu_2", "calculate", '{"expression": "2 + 2"}')), reply(Text("4, by heart.")))
    terminal.type_line("and two plus two?")
    mark = len(terminal.screen())
    terminal.wait_for("allow calculate?", after=mark - 100)
    terminal.type_line("n")
    terminal.wait_for("reason for the model (optional) > ")
    terminal.type_line("do it in your head")
    screen = terminal.wait_for("4, by heart.")
    assert '✗ calculate(expression="2 + 2")  → denied:' in screen
    assert "do it in your head" in str(llm.bodies()[-1]["messages"][-1])

    terminal.type_line("/usage")
    screen = terminal.wait_for("model calls")
    assert "4 model calls · 400 in · 80 out" in screen

    # Ctrl-C cancels a turn that is stuck mid-stream, and the chat goes on.
    llm.script(reply(Text("I will think about this for a very long"), hang_after=5))
    terminal.type_line("tell me a story")
    mark = len(terminal.screen())
    terminal.wait_for("I will think", after=mark - 200)
    terminal.send("C-c")
    terminal.wait_for("(cancelled)")
    # Ctrl-C at an approval question cancels the turn too, and nothing runs.
    llm.script(reply(Call("toolu_3", "calculate", '{"expression": "1 / 0"}')))
    terminal.type_line("divide by zero")
    mark = len(terminal.screen())
    terminal.wait_for('[1] calculate {"expression": "1 / 0"}', after=mark - 100)
    terminal.wait_for("allow calculate?", after=mark - 100)
    terminal.send("C-c")
    screen = terminal.wait_for("(cancelled)", after=mark - 100)
    assert '✓ calculate(expression="1 / 0")' not in screen

    terminal.type_line("/tools")
    # "calculate" is on screen already; wait for the listing's last group and the prompt after it, so that
    # /sessions is not typed while the listing still prints.
    listed = terminal.wait_for("web_search")
    terminal.wait_for("\n›", after=listed.rindex("web_search"))
    terminal.type_line("/sessions")
    screen = terminal.wait_for("turns  what is six")
    assert "\n* 2" in screen and "claude-test" in screen  # the current session is marked
    pid = terminal.pid()
    terminal.type_line("/exit")
    terminal.wait_exit(pid)
    final = terminal.screen()
    assert "Traceback" not in final
    assert len(llm.requests) == 6
