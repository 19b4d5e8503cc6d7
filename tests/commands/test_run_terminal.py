"""`toolrig run` on a real terminal (tmux): ask_user is asked there, as the same selectable list as the chat."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands.test_chat_people import TOOLRIG, sent_results
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.terminal import Terminal


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path)
    yield term
    term.close()


def test_run_asks_on_the_terminal_it_has(terminal: Terminal, llm: FakeLLM, workspace: Path, toolrig_home: Path) -> None:
    import os

    import yaml

    agent = {"provider": "anthropic", "model": "claude-test", "base_url": llm.anthropic_url, "api_key": "k"}
    (toolrig_home / "config.yaml").write_text(yaml.safe_dump({"llm": {**agent, "max_retries": 0}}))
    ask = {"questions": [{"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}]}
    llm.script(reply(Call("toolu_1", "ask_user", json.dumps(ask))), reply(Text("Going with PostgreSQL.")))
    env = {"TOOLRIG_HOME": str(toolrig_home), "TERM": "xterm-256color", "PATH": os.environ["PATH"]}
    terminal.start([TOOLRIG, "run", "set up a database", "--root", str(workspace)], env, workspace)
    terminal.wait_for("> ( ) PostgreSQL")
    terminal.wait_for("enter confirms, esc skips")
    pid = terminal.pid()
    terminal.send("Enter")
    terminal.wait_for("Going with PostgreSQL.")
    terminal.wait_exit(pid)
    [result] = sent_results(llm)
    assert result["output"] == {"answers": [{"selected": ["PostgreSQL"], "other_text": None}], "skipped": False}
