"""`toolrig chat` with a person in the loop, in a real terminal (tmux): ask_user's list, todos, follow-ups."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.terminal import Terminal

TOOLRIG = str(Path(sys.executable).parent / "toolrig")
QUESTIONS = {
    "questions": [
        {"question": "Which database?", "header": "Database", "options": ["PostgreSQL", "SQLite", "DuckDB"]},
        {
            "question": "Which extras?",
            "options": [{"label": "backups", "description": "nightly"}, {"label": "metrics"}],
            "allow_multiple": True,
            "allow_other_text": True,
        },
    ]
}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path)
    yield term
    term.close()


def start(terminal: Terminal, llm: FakeLLM, workspace: Path, home: Path) -> None:
    agent = {
        "provider": "anthropic",
        "model": "claude-test",
        "base_url": llm.anthropic_url,
        "api_key": "test-key",
        "max_retries": 0,
    }
    (home / "config.yaml").write_text(yaml.safe_dump({"llm": agent}))
    env = {"TOOLRIG_HOME": str(home), "TERM": "xterm-256color", "PATH": os.environ["PATH"], "HOME": str(home)}
    terminal.start([TOOLRIG, "chat", "--root", str(workspace)], env, workspace)
    terminal.wait_for("toolrig chat · claude-test · new session")
    terminal.wait_prompt()


def sent_results(llm: FakeLLM) -> list[dict[str, object]]:
    last = llm.bodies()[-1]["messages"][-1]
    return [json.loads(b["content"]) for b in last["content"] if b["type"] == "tool_result"]


def test_ask_user_is_a_list_picked_with_arrow_keys_space_and_enter(
    terminal: Terminal, llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    start(terminal, llm, workspace, toolrig_home)
    llm.script(reply(Call("toolu_1", "ask_user", json.dumps(QUESTIONS))), reply(Text("SQLite with backups.")))
    mark = terminal.mark()
    terminal.type_line("set up a database")
    terminal.wait_for("> ( ) PostgreSQL", after=mark)
    terminal.wait_for("enter confirms, esc skips", after=mark)
    terminal.send("Down")
    terminal.wait_for("> ( ) SQLite", after=mark)  # the redraw after the key: the next key cannot race it
    terminal.send("Enter")
    terminal.wait_for("→ SQLite", after=mark)
    terminal.wait_for("> [ ] backups - nightly", after=mark)
    terminal.send("Space")
    terminal.wait_for("> [x] backups", after=mark)
    terminal.send("Down")
    terminal.send("Down")
    terminal.wait_for("> [ ] Other: type your own answer", after=mark)
    terminal.send("Space")
    terminal.wait_for("> [x] Other", after=mark)
    terminal.send("Enter")
    terminal.wait_for("your answer > ", after=mark)
    terminal.type_line("and a replica")
    terminal.wait_for("SQLite with backups.", after=mark)
    terminal.wait_prompt(after=mark)
    [result] = sent_results(llm)
    assert result["output"] == {
        "answers": [
            {"selected": ["SQLite"], "other_text": None},
            {"selected": ["backups"], "other_text": "and a replica"},
        ],
        "skipped": False,
    }

    # Esc skips: the model hears skipped: true and goes on.
    llm.script(reply(Call("toolu_2", "ask_user", json.dumps(QUESTIONS))), reply(Text("I chose for you.")))
    mark = terminal.mark()
    terminal.type_line("again")
    terminal.wait_for("enter confirms, esc skips", after=mark)
    terminal.send("Escape")
    terminal.wait_for("I chose for you.", after=mark)
    terminal.wait_prompt(after=mark)
    [result] = sent_results(llm)
    assert result["output"]["skipped"] is True  # type: ignore[index]


def test_todos_show_live_and_a_followup_is_sent_by_its_number(
    terminal: Terminal, llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    start(terminal, llm, workspace, toolrig_home)
    todos = {"todos": [{"task": "Read the code", "status": "completed"}, {"task": "Fix it", "status": "in_progress"}]}
    followups = {"followups": ["Run the tests", "Open a pull request"]}
    llm.script(
        reply(Call("toolu_1", "write_todos", json.dumps(todos))),
        reply(Call("toolu_2", "suggest_followups", json.dumps(followups))),
        reply(Text("Fixed.")),
    )
    mark = terminal.mark()
    terminal.type_line("fix the bug")
    screen = terminal.wait_for("2. Open a pull request", after=mark)
    terminal.wait_prompt(after=mark)
    assert "todos (1/2)" in screen and "✓ Read the code" in screen and "▸ Fix it" in screen
    assert screen.index("Fixed.") < screen.index("1. Run the tests")  # after the answer
    llm.script(reply(Text("All green.")))
    mark = terminal.mark()
    terminal.type_line("2")
    terminal.wait_for("All green.", after=mark)
    terminal.wait_prompt(after=mark)
    last = llm.bodies()[-1]["messages"][-1]
    assert "Open a pull request" in json.dumps(last)
