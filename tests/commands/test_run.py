from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.support.fake_llm import Call, FakeLLM, Text, error, reply
from toolrig.cli import app

TOOLRIG = str(Path(sys.executable).parent / "toolrig")


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def configure(home: Path, llm: FakeLLM, provider: str, **extra: object) -> None:
    agent = {
        "provider": provider,
        "model": "claude-test" if provider == "anthropic" else "gpt-test",
        "base_url": llm.anthropic_url if provider == "anthropic" else llm.openai_url,
        "api_key": "test-key",
        "max_retries": 0,
        **extra,
    }
    (home / "config.yaml").write_text(yaml.safe_dump({"llm": agent}))


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_run_prints_the_streamed_answer_and_tool_lines(
    llm: FakeLLM, workspace: Path, toolrig_home: Path, provider: str
) -> None:
    configure(toolrig_home, llm, provider)
    llm.script(reply(Call("c1", "calculate", '{"expression": "2 ** 10"}')), reply(Text("It is ", "1024.")))
    code, out, err = invoke("run", "what is 2**10?", "--root", str(workspace))
    assert code == 0, err
    assert out == "It is 1024.\n"
    assert '→ calculate(expression="2 ** 10")' in err and '✓ calculate: {"result":1024}' in err


def test_run_json_streams_every_event_as_a_json_line(
    llm: FakeLLM, workspace: Path, toolrig_home: Path, provider: str
) -> None:
    configure(toolrig_home, llm, provider)
    llm.script(reply(Call("c1", "calculate", '{"expression": "1 + 1"}')), reply(Text("2")))
    code, out, _ = invoke("run", "1+1", "--json", "--root", str(workspace))
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "init" and kinds[-1] == "done"
    assert {"tool_call", "tool_call_delta", "tool_result", "usage", "stream_text", "chunk"} <= set(kinds)
    assert events[-1]["response"] == "2" and events[-1]["stop_reason"] == "completed"
    assert events[-1]["session_id"] == events[0]["session_id"]


def test_run_exits_nonzero_with_the_error_on_run_failure(llm: FakeLLM, workspace: Path, toolrig_home: Path) -> None:
    configure(toolrig_home, llm, "openai")
    llm.script(error(500), error(500))
    code, out, err = invoke("run", "hi", "--root", str(workspace))
    assert code == 1 and "run failed (overloaded)" in err and "500" in err
    code, out, _ = invoke("run", "hi", "--json", "--root", str(workspace))
    assert code == 1 and json.loads(out.splitlines()[-1])["type"] == "error"


def test_run_exits_nonzero_when_the_answer_is_cut_off_by_the_token_limit(
    llm: FakeLLM, workspace: Path, toolrig_home: Path, provider: str
) -> None:
    configure(toolrig_home, llm, provider, max_tokens=5)
    cut = "max_tokens" if provider == "anthropic" else "length"
    llm.script(reply(Text("Once upon"), stop=cut), reply(Text("Once upon"), stop=cut))
    code, out, err = invoke("run", "tell a story", "--root", str(workspace))
    assert code == 1 and out == "Once upon\n"
    assert "cut off at the token limit (llm.max_tokens = 5)" in err
    code, out, _ = invoke("run", "tell a story", "--json", "--root", str(workspace))
    assert code == 1 and json.loads(out.splitlines()[-1])["stop_reason"] == "max_tokens"
    code, out, _ = invoke("sessions", "list", "--json", "--root", str(workspace))
    assert code == 0 and [s["status"] for s in json.loads(out)] == ["max_tokens", "max_tokens"]


def test_without_a_model_run_and_chat_say_how_to_configure_one_in_two_lines(workspace: Path) -> None:
    for command in ("run", "chat"):
        args = [command, "hi"] if command == "run" else [command]
        code, out, err = invoke(*args, "--root", str(workspace))
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 2, err
        assert "--model" in lines[0] and "llm.model" in lines[0]
        assert "ANTHROPIC_API_KEY" in lines[1] and "OPENAI_API_KEY" in lines[1]


@pytest.mark.parametrize(
    ("model", "variable"), [("claude-sonnet-4-5", "ANTHROPIC_API_KEY"), ("gpt-4.1", "OPENAI_API_KEY")]
)
def test_a_missing_key_is_one_line_naming_the_variable(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, model: str, variable: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = invoke("run", "hi", "--model", model, "--root", str(workspace))
    assert code == 2
    assert err.strip().count("\n") == 0 and variable in err


def test_a_session_resumes_in_another_process_on_the_other_provider(
    llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    """Anthropic first, then `toolrig run --continue` in a new process on OpenAI: history replayed natively."""
    configure(toolrig_home, llm, "anthropic")
    llm.script(reply(Call("toolu_1", "calculate", '{"expression": "3 * 3"}')), reply(Text("Nine.")))
    code, out, _ = invoke("run", "3*3?", "--json", "--root", str(workspace))
    assert code == 0
    session = json.loads(out.splitlines()[0])["session_id"]

    configure(toolrig_home, llm, "openai")
    llm.script(reply(Text("You asked about 3*3.")))
    env = {**os.environ, "TOOLRIG_HOME": str(toolrig_home)}
    done = subprocess.run(
        [TOOLRIG, "run", "what did I ask?", "--continue", "--root", str(workspace)],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You asked about 3*3.\n"
    body = llm.bodies()[-1]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assistant = body["messages"][2]
    assert assistant["tool_calls"][0]["id"] == "toolu_1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"expression": "3 * 3"}
    assert json.loads(body["messages"][3]["content"]) == {"is_error": False, "output": {"result": 9}}
    assert body["messages"][-1]["content"] == "what did I ask?"

    code, out, _ = invoke("sessions", "list", "--json", "--root", str(workspace))
    [listed] = json.loads(out)
    assert listed["id"] == session and listed["turns"] == 3 and listed["model"] == "gpt-test"
    code, out, _ = invoke("sessions", "show", session, "--root", str(workspace))
    assert code == 0
    assert "user: 3*3?" in out and "→ calculate" in out and "assistant: You asked about 3*3." in out


def test_resume_of_an_unknown_session_is_a_clear_error(llm: FakeLLM, workspace: Path, toolrig_home: Path) -> None:
    configure(toolrig_home, llm, "openai")
    code, _, err = invoke("run", "hi", "--resume", "nope", "--root", str(workspace))
    assert code == 1 and "no session 'nope'" in err
    code, _, err = invoke("sessions", "show", "nope", "--root", str(workspace))
    assert code == 2 and "no session 'nope'" in err


@pytest.mark.parametrize(
    ("setup", "args", "kind", "words"),
    [
        ("config", [], "config", "unknown setting"),
        ("no key", [], "config", "llm.api_key_env"),
        ("", ["--resume", "x", "--continue"], "usage", "not both"),
        ("", ["--max-turns", "0"], "usage", "--max-turns"),
    ],
)
def test_run_json_prints_every_error_as_one_json_line(
    workspace: Path,
    toolrig_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    setup: str,
    args: list[str],
    kind: str,
    words: str,
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    if setup == "config":
        (toolrig_home / "config.yaml").write_text("llm:\n  modle: x\n")
    elif setup == "":
        (toolrig_home / "config.yaml").write_text("llm:\n  model: claude-test\n  api_key: k\n")
    code, out, err = invoke("run", "hi", "--json", *args, "--root", str(workspace))
    assert code == 2 and err == ""
    [line] = out.splitlines()
    event = json.loads(line)
    assert event["type"] == "error" and event["kind"] == kind and words in event["message"]


def test_without_a_terminal_a_question_pauses_the_run_and_keeps_its_state(
    llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    from toolrig.agent import RunState

    configure(toolrig_home, llm, "anthropic")
    ask = '{"questions": [{"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}]}'
    llm.script(reply(Call("toolu_1", "ask_user", ask)))
    code, _, err = invoke("run", "set up a database", "--root", str(workspace))
    assert code == 3, err
    assert "paused, waiting for 1 question(s)" in err and "? Which database?" in err
    [saved] = (workspace / ".toolrig" / "paused").glob("*.json")
    state = RunState.from_json(saved.read_text())
    assert state.pending[0].call_id == "toolu_1" and state.pending[0].questions[0]["question"] == "Which database?"


def _toolrig(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """A new process, as a script or a person at another machine would run it."""
    env = {**os.environ, "TOOLRIG_HOME": str(home)}
    return subprocess.run([TOOLRIG, *args], capture_output=True, text=True, env=env, timeout=60, input=stdin)


ASK = '{"questions": [{"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}]}'


def test_a_paused_run_resumes_in_a_new_process_with_answers_and_the_model_receives_them(
    llm: FakeLLM, workspace: Path, toolrig_home: Path, provider: str
) -> None:
    configure(toolrig_home, llm, provider)
    llm.script(reply(Call("toolu_1", "ask_user", ASK)))
    code, _, err = invoke("run", "set up a database", "--root", str(workspace))
    assert code == 3, err
    session = paused_state(workspace).session_id
    assert f"toolrig run --resume {session} --answers" in err and "(call toolu_1)" in err

    llm.script(reply(Text("Using SQLite.")))
    answers = json.dumps({"toolu_1": [{"selected": ["SQLite"]}]})
    done = _toolrig("run", "--resume", session, "--answers", answers, "--root", str(workspace), home=toolrig_home)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Using SQLite.\n"
    assert _last_tool_result(llm.bodies()[-1], provider) == {
        "is_error": False,
        "output": {"answers": [{"selected": ["SQLite"], "other_text": None}], "skipped": False},
    }
    code, out, _ = invoke("sessions", "show", session, "--root", str(workspace))
    assert code == 0 and "assistant: Using SQLite." in out


def test_a_paused_run_resumes_once_and_refuses_unknown_sessions_and_malformed_answers(
    llm: FakeLLM, workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    configure(toolrig_home, llm, "anthropic")
    llm.script(reply(Call("toolu_1", "ask_user", ASK)))
    assert invoke("run", "set up a database", "--root", str(workspace))[0] == 3
    session = paused_state(workspace).session_id
    root = ("--root", str(workspace))

    refused = [
        (["--resume", "nope"], "no paused run 'nope'"),
        (["--resume", "../../etc/passwd"], "no paused run"),
        (["--resume", session, "--answers", "{not json"], "--answers is not JSON"),
        (["--resume", session, "--answers", "[1]"], "must be a JSON object"),
        (["--resume", session, "--answers", '{"toolu_9": null}'], "'toolu_9', which is not a question"),
        (["--resume", session, "--answers", '{"toolu_1": [{}, {}]}'], "a list of 1 answer(s)"),
        (["--resume", session, "--answers", '{"toolu_1": [7]}'], "answer 1 must be an object"),
        (["--resume", session, "--decisions", '{"toolu_1": "allow_once"}'], "not an approval this run waits for"),
        (["--resume", session, "--answers", f"@{tmp_path / 'missing.json'}"], "cannot read"),
        (["again", "--resume", session], "is paused, waiting for a person"),
        (["again", "--answers", "{}"], "use them with --resume SESSION and no PROMPT"),
        ([], "give a PROMPT"),
    ]
    for args, words in refused:
        code, _, err = invoke("run", *args, *root)
        assert code == 2 and words in err, (args, err)
    assert len(llm.bodies()) == 1  # none of them reached the model

    llm.script(reply(Text("Skipped, so SQLite.")))
    done = _toolrig(
        "run", "--resume", session, "--answers", "-", *root, "--json", home=toolrig_home, stdin='{"toolu_1": null}'
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["response"] == "Skipped, so SQLite."
    code, _, err = invoke("run", "--resume", session, *root)
    assert code == 2 and "already resumed" in err


def test_a_resumed_run_that_asks_again_pauses_again_and_resumes_with_the_new_answers(
    llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    configure(toolrig_home, llm, "anthropic")
    root = ("--root", str(workspace))
    llm.script(reply(Call("toolu_1", "ask_user", ASK)))
    assert invoke("run", "set up a database", *root)[0] == 3
    session = paused_state(workspace).session_id

    again = '{"questions": [{"question": "Which version?"}]}'
    llm.script(reply(Call("toolu_2", "ask_user", again)))
    paused = _toolrig("run", "--resume", session, "--answers", '{"toolu_1": ["SQLite"]}', *root, home=toolrig_home)
    assert paused.returncode == 3, paused.stderr
    assert "? Which version?  (call toolu_2)" in paused.stderr
    assert [p.call_id for p in paused_state(workspace).pending] == ["toolu_2"]

    llm.script(reply(Text("SQLite 3.46.")))
    code, out, err = invoke("run", "--resume", session, "--answers", '{"toolu_2": ["3.46"]}', *root)
    assert code == 0 and out == "SQLite 3.46.\n", err
    assert _last_tool_result(llm.bodies()[-1], "anthropic")["output"]["answers"][0]["other_text"] == "3.46"


def test_todos_and_followups_are_json_events_and_the_todo_list_survives_a_pause_into_a_new_process(
    llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    from toolrig.stores.notes import SessionNotes

    configure(toolrig_home, llm, "openai")
    todos = '{"todos": [{"task": "pick a database", "status": "in_progress"}, {"task": "write the schema"}]}'
    llm.script(reply(Call("c1", "write_todos", todos)), reply(Call("c2", "ask_user", ASK)))
    code, out, err = invoke("run", "set up a database", "--json", "--root", str(workspace))
    assert code == 3, err
    [event] = [json.loads(line) for line in out.splitlines() if '"type": "todos"' in line]
    assert event["todos"][0] == {"task": "pick a database", "status": "in_progress"}
    session = paused_state(workspace).session_id

    done_list = '{"todos": [{"task": "pick a database", "completed": true}, {"task": "write the schema"}]}'
    followups = '{"followups": ["add an index", "seed test data"]}'
    llm.script(
        reply(Call("c3", "write_todos", done_list), Call("c4", "suggest_followups", followups)), reply(Text("Done."))
    )
    answers = '{"c2": ["SQLite"]}'
    done = _toolrig(
        "run", "--resume", session, "--answers", answers, "--json", "--root", str(workspace), home=toolrig_home
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    by_type = {e["type"]: e for e in events}
    assert by_type["todos"]["todos"] == [
        {"task": "pick a database", "status": "completed"},
        {"task": "write the schema", "status": "pending"},
    ]
    assert by_type["followups"]["followups"] == ["add an index", "seed test data"]
    assert by_type["done"]["session_id"] == session
    notes = SessionNotes(workspace / ".toolrig" / "notes.sqlite")
    try:
        assert notes.get(session, "todos") == by_type["todos"]["todos"]
        assert notes.get(session, "followups") == ["add an index", "seed test data"]
    finally:
        notes.close()

    # The next run of the session starts with the list in front of the model.
    llm.script(reply(Text("On it.")))
    code, _, err = invoke("run", "next?", "--resume", session, "--root", str(workspace))
    assert code == 0, err
    last_user = llm.bodies()[-1]["messages"][-1]["content"]
    assert "[completed] pick a database" in str(last_user) and "[pending] write the schema" in str(last_user)


def paused_state(workspace: Path) -> Any:
    from toolrig.agent import RunState

    [saved] = (workspace / ".toolrig" / "paused").glob("*.json")
    return RunState.from_json(saved.read_text())


def _last_tool_result(body: dict[str, Any], provider: str) -> Any:
    if provider == "anthropic":
        [block] = [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
        content = block["content"]
        return json.loads(content if isinstance(content, str) else content[0]["text"])
    return json.loads(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])


def test_a_state_paused_on_an_approval_resumes_from_the_cli_with_decisions(
    llm: FakeLLM, workspace: Path, toolrig_home: Path
) -> None:
    """A program paused the run on an approval (approvals="pause"); a person allows it with `toolrig run`."""
    import anyio

    from toolrig.agent import RunOptions, run_agent
    from toolrig.commands._paused_runs import save
    from toolrig.rig import Rig

    configure(toolrig_home, llm, "openai")
    config = yaml.safe_load((toolrig_home / "config.yaml").read_text())
    (toolrig_home / "config.yaml").write_text(yaml.safe_dump({**config, "approvals": {"mode": "always"}}))
    llm.script(reply(Call("c1", "calculate", '{"expression": "6 * 7"}')))
    rig = Rig(workspace)
    result = anyio.run(lambda: run_agent("6*7?", RunOptions(approvals="pause"), rig=rig))
    assert result.state is not None and [p.needs_approval for p in result.state.pending] == [True]
    save(rig.workspace.state_dir, result.state)

    root = ("--root", str(workspace))
    code, _, err = invoke("run", "--resume", result.session_id, "--decisions", '{"c1": "maybe"}', *root)
    assert code == 2 and "must be one of allow_once, allow_always, deny" in err
    llm.script(reply(Text("42.")))
    done = _toolrig(
        "run", "--resume", result.session_id, "--decisions", '{"c1": "allow_once"}', *root, home=toolrig_home
    )
    assert done.returncode == 0 and done.stdout == "42.\n", done.stderr
    assert _last_tool_result(llm.bodies()[-1], "openai") == {"is_error": False, "output": {"result": 42}}
