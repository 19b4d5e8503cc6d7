"""The Telegram channel end to end: a local Bot API server, the real gateway, the fake model on loopback."""

from __future__ import annotations

import json
from typing import Any

from tests.channels.conftest import ALICE, BOB, MALLORY, Chat
from tests.support.fake_llm import Call, Text, reply
from toolrig.channels.telegram.bot import REFUSAL

SMART = {"approvals": {"mode": "smart", "fallback": "deny"}}
ASK = '{"questions": [{"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}]}'


def refusals(chat: Chat) -> list[tuple[str, str]]:
    with chat.gw.client() as client:
        rows = client.get("/api/audit").json()["rows"]
    return [(r["tool"], r["approval"]) for r in rows if str(r["approval"]).startswith("refused:")]


def test_an_allowed_user_talks_to_the_agent_and_a_stranger_is_refused_and_audited_without_a_run(chat: Any) -> None:
    c: Chat = chat()
    c.bot.say("hello, do my bidding", from_id=MALLORY)
    c.wait_text(MALLORY, REFUSAL)
    c.gw.llm.script(reply(Text("Hel", "lo ", "Alice")))
    c.bot.say("hi", from_id=ALICE)
    c.wait_text(ALICE, "Hello Alice")
    assert len(c.gw.llm.requests) == 1  # Alice's run only: Mallory's message started nothing
    assert refusals(c) == [("(telegram message)", "refused:not an allowed user")]
    with c.gw.client() as client:
        sessions = client.get("/api/sessions").json()["sessions"]
        assert len(sessions) == 1  # the web page shows Alice's conversation
        detail = client.get(f"/api/sessions/{sessions[0]['id']}").json()
    assert "hi" in json.dumps(detail) and "Hello Alice" in json.dumps(detail)
    assert c.texts(BOB) == []


def test_a_tool_call_an_approval_and_a_question_are_answered_by_buttons(chat: Any) -> None:
    c: Chat = chat(**SMART)
    c.gw.llm.script(
        reply(Call("c1", "wipe", '{"target": "x"}')),
        reply(Call("q1", "ask_user", ASK)),
        reply(Text("SQLite, wiped")),
    )
    c.bot.say("wipe x, then ask me", from_id=ALICE)
    card = c.wait_buttons(ALICE, "Approve once")
    assert "wipe" in card["text"] and '"target": "x"' in card["text"]
    c.bot.press(card, "deny", from_id=BOB)  # another allowed user's press on Alice's card: forged
    c.bot.press(card, "approve once")
    question = c.wait_buttons(ALICE, "SQLite")
    assert "Which database?" in question["text"]
    c.bot.press(card, "approve once")  # replayed
    c.bot.press(question, "sqlite")
    c.wait_text(ALICE, "SQLite, wiped")
    texts = "\n".join(c.texts(ALICE))
    assert "→ <code>wipe(" in texts and "✓ <code>wipe</code>" in texts and "→ approved" in texts
    asked = c.gw.llm.bodies()[-1]["messages"][-1]["content"][0]["content"]
    assert "SQLite" in str(asked)
    assert [a for _, a in refusals(c)] == [
        "refused:button forged: another user's button",
        "refused:button replayed: answered",
    ]


def test_stop_mid_run_ends_the_run_and_leaves_no_process(chat: Any) -> None:
    from tests.sandbox.test_process import alive
    from toolrig.tools.shell import RunCommand

    c: Chat = chat(extra=(RunCommand(),), tool_config={"run_command": {"sandbox": "off"}})
    pid_file = c.gw.rig.workspace.root / "child.pid"
    command = json.dumps({"command": f"sleep 60 & echo $! > {pid_file}; wait"})
    c.gw.llm.script(reply(Call("c1", "run_command", command)), reply(Text("never")))
    c.bot.say("run it", from_id=ALICE)
    c.wait_text(ALICE, "→ <code>run_command(")
    c.bot.wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", what="the command's child")
    c.bot.say("/stop", from_id=ALICE)
    c.wait_text(ALICE, "■ stopped")
    assert not alive(int(pid_file.read_text()))
    assert "never" not in "\n".join(c.texts(ALICE))
    c.bot.say("/status", from_id=ALICE)
    c.wait_text(ALICE, "no answer is going")


def test_a_restart_of_the_server_continues_the_users_conversation(chat: Any) -> None:
    c: Chat = chat()
    c.gw.llm.script(reply(Text("noted: 42")))
    c.bot.say("remember 42", from_id=ALICE)
    c.wait_text(ALICE, "noted: 42")
    c.gw.stop()
    again: Chat = chat()
    again.gw.llm.script(reply(Text("it was 42")))
    again.bot.say("what number?", from_id=ALICE)
    again.wait_text(ALICE, "it was 42")
    sent = json.dumps(again.gw.llm.bodies()[-1]["messages"])
    assert "remember 42" in sent and "noted: 42" in sent  # the earlier turns went to the model again
    with again.gw.client() as client:
        assert len(client.get("/api/sessions").json()["sessions"]) == 1


def test_a_session_started_on_the_page_is_continued_from_telegram(chat: Any) -> None:
    c: Chat = chat()
    c.gw.llm.script(reply(Text("from the web")), reply(Text("and on Telegram")))
    with c.gw.client() as client:
        run = client.post("/api/runs", json={"prompt": "started on the page"}).json()
        events = list(c.gw.events(client, run["id"]))
    session = next(e["session_id"] for e in events if e["type"] == "init")
    c.bot.say(f"/resume {session}", from_id=BOB)
    c.wait_text(BOB, f"continues session {session}")
    c.bot.say("go on", from_id=BOB)
    c.wait_text(BOB, "and on Telegram")
    assert "started on the page" in json.dumps(c.gw.llm.bodies()[-1]["messages"])
    c.bot.say("/resume ../../etc", from_id=BOB)
    c.wait_text(BOB, "No session has this id")
    c.bot.say(f"/resume {session}", from_id=ALICE)  # Bob's conversation now: not Alice's to read or continue
    c.wait_text(ALICE, "No session has this id")


def test_forged_updates_are_refused_and_audited_and_text_is_only_ever_a_prompt(chat: Any) -> None:
    c: Chat = chat()
    c.gw.llm.script(reply(Text("<b>bold</b> & <a href='tg://x'>link</a>")))
    first = c.bot.say("/shutdown now", from_id=ALICE)  # not one of the commands: neither run nor command
    c.wait_text(ALICE, "Not a command here")
    c.bot.push({"message": {"message_id": 1, "from": {"id": ALICE}, "chat": {"id": ALICE, "type": "private"},
                            "text": "replayed"}}, update_id=first)  # fmt: skip
    c.bot.say("hi from a group", from_id=ALICE, chat_id=-100)  # an allowed user, but not in their own chat
    c.wait_text(-100, REFUSAL)
    c.bot.say("show markup", from_id=ALICE)
    answer = c.wait_text(ALICE, "bold")
    assert answer["text"] == "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;a href='tg://x'&gt;link&lt;/a&gt;"
    assert answer["parse_mode"] == "HTML"
    assert len(c.gw.llm.requests) == 1
    assert [a for _, a in refusals(c)] == ["refused:replayed update id", "refused:not the user's private chat"]


def test_a_long_answer_is_split_into_messages_within_telegrams_limit_despite_flood_control(chat: Any) -> None:
    from tests.channels.test_render import shown

    c: Chat = chat()
    words = [f"word{i} 🙂" for i in range(1500)]
    c.gw.llm.script(reply(Text(*(w + " " for w in words))))
    c.bot.flood("sendMessage", times=1, retry_after=0)
    c.bot.say("talk a lot", from_id=ALICE)
    c.wait_text(ALICE, "word1499")
    messages = c.texts(ALICE)
    assert len(messages) >= 3
    assert all(len(m.encode("utf-16-le")) // 2 <= 4096 for m in messages)
    assert "".join(shown(m) for m in messages) == "".join(w + " " for w in words)


def test_todos_followups_and_new_session(chat: Any) -> None:
    todos = '{"todos": [{"task": "write <tests>", "status": "in_progress"}]}'
    followups = '{"followups": ["Run the tests", "Wipe the logs"]}'
    c: Chat = chat()
    c.gw.llm.script(
        reply(Call("t1", "write_todos", todos), Call("f1", "suggest_followups", followups)),
        reply(Text("planned")),
        reply(Text("tests ran")),
        reply(Text("fresh start")),
    )
    c.bot.say("plan it", from_id=ALICE)
    suggestions = c.wait_buttons(ALICE, "Run the tests")
    c.bot.say("/todos", from_id=ALICE)
    assert c.wait_text(ALICE, "▶ write &lt;tests&gt;")["parse_mode"] == "HTML"
    c.bot.press(suggestions, "run the tests")
    c.wait_text(ALICE, "tests ran")
    assert "Run the tests" in json.dumps(c.gw.llm.bodies()[-1]["messages"])
    c.bot.say("/new", from_id=ALICE)
    c.wait_text(ALICE, "New conversation")
    c.bot.say("hello again", from_id=ALICE)
    c.wait_text(ALICE, "fresh start")
    assert len(c.gw.llm.bodies()[-1]["messages"]) == 1
    with c.gw.client() as client:
        assert len(client.get("/api/sessions").json()["sessions"]) == 2


def test_per_user_limits_one_answer_at_a_time_and_forged_presses(chat: Any) -> None:
    c: Chat = chat(telegram={"runs_per_hour": 1, "max_prompt_chars": 50}, **SMART)
    c.gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')), reply(Text("ok, not wiped")))
    c.bot.say("x" * 51, from_id=ALICE)
    c.wait_text(ALICE, "over 50 characters")
    c.bot.say("wipe x", from_id=ALICE)
    card = c.wait_buttons(ALICE, "Deny")
    c.bot.say("and another thing", from_id=ALICE)
    c.wait_text(ALICE, "An answer is going")
    c.bot.press(card, "approve once", from_id=MALLORY, chat_id=MALLORY)
    c.bot.press_data(card, "0123456789abcdef:o")  # a made-up nonce
    c.bot.wait_until(lambda: len(c.bot.answered) >= 2, what="both presses answered")
    assert all(a["text"] == "This button is not valid (any more)." for a in c.bot.answered)
    c.bot.press(card, "deny")
    c.wait_text(ALICE, "ok, not wiped")
    c.bot.say("again", from_id=ALICE)
    c.wait_text(ALICE, "the limit")
    assert len(c.gw.llm.requests) == 2
    assert [a for _, a in refusals(c)] == [
        "refused:button forged: not an allowed user",
        "refused:button unknown button",
    ]


def test_a_free_text_question_is_answered_by_replying_to_it(chat: Any) -> None:
    free = '{"questions": [{"question": "Which version?"}]}'
    c: Chat = chat()
    c.gw.llm.script(reply(Call("q1", "ask_user", free)), reply(Text("using it")))
    c.bot.say("set it up", from_id=ALICE)
    question = c.wait_buttons(ALICE, "Skip")
    assert "Which version?" in question["text"]
    c.bot.say("Postgres 16", from_id=ALICE, reply_to=question["message_id"])
    c.wait_text(ALICE, "using it")
    assert "Postgres 16" in json.dumps(c.gw.llm.bodies()[-1]["messages"][-1])


def test_a_card_waiting_when_the_server_stopped_is_shown_again_after_the_restart(chat: Any) -> None:
    c: Chat = chat(**SMART)
    c.gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')))
    c.bot.say("wipe x", from_id=ALICE)
    before = c.wait_buttons(ALICE, "Approve once")
    c.gw.stop()
    again: Chat = chat(**SMART)
    again.gw.llm.script(reply(Text("wiped after the restart")))
    again.bot.wait_until(
        lambda: any(m["message_id"] != before["message_id"] and "Approve once" in str(m) for m in again.bot.sent),
        what="the card sent again",
    )
    card = again.wait_buttons(ALICE, "Approve once")
    again.bot.press(before, "approve once")  # the old message's nonce died with the old server
    again.bot.press(card, "approve once")
    again.wait_text(ALICE, "wiped after the restart")
    assert [a for _, a in refusals(again)][-1] == "refused:button unknown button"


def test_a_run_the_page_starts_on_a_telegram_users_session_shows_in_their_chat(chat: Any) -> None:
    c: Chat = chat()
    c.gw.llm.script(reply(Text("first, on Telegram")), reply(Text("then from the page")))
    c.bot.say("hi", from_id=ALICE)
    c.wait_text(ALICE, "first, on Telegram")
    with c.gw.client() as client:
        session = client.get("/api/sessions").json()["sessions"][0]["id"]
        started = client.post("/api/runs", json={"prompt": "continue", "session_id": session})
        assert started.status_code == 201, started.text
    c.wait_text(ALICE, "then from the page")
