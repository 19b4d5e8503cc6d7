from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.fake_llm import Call, FakeLLM, Text, Thinking, reply
from tests.support.terminal import Terminal

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
    terminal.wait_prompt()
    # Every action starts from a mark taken before it and ends when the prompt is back: text alone may
    # already be on screen from an earlier turn, and keys typed while the chat is busy race with it.
    mark = terminal.mark()
    terminal.type_line("what is six times seven?")
    # The question is a list (keys pressed before it is drawn are dropped: wait for it); y moves, Enter confirms.
    screen = terminal.wait_for("or press y / a / n", after=mark)
    assert "[1/1] allow calculate?" in screen and "> ( ) yes, once" in screen
    assert 'calculate {"expression": "6 * 7"}' in screen and "why asked: checking arithmetic" in screen
    terminal.type_line("y")
    terminal.wait_for("The answer is 42.", after=mark)
    screen = terminal.wait_prompt(after=mark)
    assert "thinking… The user wants arithmetic." in screen
    assert "Let me compute." in screen
    assert '✓ calculate(expression="6 * 7")  → {"result":42}' in screen

    # No, with a reason: the model reads the refusal and answers without the tool.
    llm.script(reply(Call("toolu_2", "calculate", '{"expression": "2 + 2"}')), reply(Text("4, by heart.")))
    mark = terminal.mark()
    terminal.type_line("and two plus two?")
    terminal.wait_for("or press y / a / n", after=mark)
    terminal.type_line("n")
    terminal.wait_for("reason for the model (optional) > ", after=mark)
    terminal.type_line("do it in your head")
    terminal.wait_for("4, by heart.", after=mark)
    screen = terminal.wait_prompt(after=mark)
    assert '✗ calculate(expression="2 + 2")  → denied:' in screen
    assert "do it in your head" in str(llm.bodies()[-1]["messages"][-1])

    screen = terminal.command("/usage", "model calls")
    assert "4 model calls · 400 in · 80 out" in screen

    # Ctrl-C cancels a turn that is stuck mid-stream, and the chat goes on.
    llm.script(reply(Text("I will think about this for a very long"), hang_after=5))
    mark = terminal.mark()
    terminal.type_line("tell me a story")
    terminal.wait_for("I will think", after=mark)
    terminal.send("C-c")
    terminal.wait_for("(cancelled)", after=mark)
    terminal.wait_prompt(after=mark)
    # Ctrl-C at an approval question cancels the turn too, and nothing runs.
    llm.script(reply(Call("toolu_3", "calculate", '{"expression": "1 / 0"}')))
    mark = terminal.mark()
    terminal.type_line("divide by zero")
    terminal.wait_for('[1] calculate {"expression": "1 / 0"}', after=mark)
    terminal.wait_for("allow calculate?", after=mark)
    terminal.send("C-c")
    terminal.wait_for("(cancelled)", after=mark)
    screen = terminal.wait_prompt(after=mark)
    assert '✓ calculate(expression="1 / 0")' not in screen

    terminal.command("/tools", "calculate")
    screen = terminal.command("/sessions", "turns  what is six")
    assert "\n* 2" in screen and "claude-test" in screen  # the current session is marked
    pid = terminal.pid()
    terminal.type_line("/exit")
    terminal.wait_exit(pid)
    final = terminal.screen()
    assert "Traceback" not in final
    assert len(llm.requests) == 6
