from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.agent.errors import RunError
from toolrig.agent.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from toolrig.agent.session import SCHEMA_VERSION, SessionStore, ToolCallRecord
from toolrig.agent.usage import Usage


def test_a_session_keeps_messages_usage_and_tool_calls_across_reopening(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    sid = store.create(model="claude-x", provider="anthropic", title="do things")
    first = [
        Message.user("hi"),
        Message("assistant", [TextBlock("Let me."), ToolCallBlock("c1", "ls", '{"path": "."}')]),
    ]
    store.record(sid, turn=0, messages=first, usage=Usage(10, 5, 2, 1, 0.01, 1), model="claude-x", provider="anthropic")
    result = Message("user", [ToolResultBlock("c1", "ls", '{"is_error":false,"output":{}}')])
    store.record(
        sid, turn=0, messages=[result], tool_calls=[ToolCallRecord("c1", 0, "ls", '{"path": "."}', False, "{}", 1.5)]
    )
    store.record(
        sid,
        turn=1,
        messages=[Message("assistant", [TextBlock("Done.")])],
        usage=Usage(20, 3, 0, 0, 0.02, 1),
        model="gpt-y",
        provider="openai",
        status="done",
    )
    store.close()

    again = SessionStore(tmp_path / "s.db")
    assert again.messages(sid) == [*first, result, Message("assistant", [TextBlock("Done.")])]
    info = again.info(sid)
    assert info is not None and info.model == "gpt-y" and info.provider == "openai" and info.status == "done"
    assert info.turns == 2 and info.usage.input == 30 and info.usage.cost_usd == pytest.approx(0.03)
    assert [c.name for c in again.tool_calls(sid)] == ["ls"]
    assert again.next_turn(sid) == 2
    assert [t["turn"] for t in again.turns(sid)] == [0, 1]


def test_latest_and_recent_order_by_last_activity(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    a = store.create(model="m", provider="openai", title="a")
    b = store.create(model="m", provider="openai", title="b")
    store.record(a, turn=0, messages=[Message.user("later")])
    assert store.latest() == a
    assert [i.id for i in store.recent()] == [a, b]
    assert store.exists(b) and not store.exists("nope")


def test_a_database_from_a_newer_toolrig_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(RuntimeError, match="newer toolrig"):
        SessionStore(path)


def test_a_second_process_can_read_while_a_session_is_written(tmp_path: Path) -> None:
    writer = SessionStore(tmp_path / "s.db")
    sid = writer.create(model="m", provider="openai")
    reader = SessionStore(tmp_path / "s.db")
    writer.record(sid, turn=0, messages=[Message.user("one")])
    assert reader.messages(sid) == [Message.user("one")]
    assert sqlite3.connect(tmp_path / "s.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_shared_stores_of_one_workspace_use_one_connection_until_closed(tmp_path: Path) -> None:
    first = SessionStore.shared(tmp_path)
    second = SessionStore.shared(tmp_path)
    assert first.db is second.db and first.path == tmp_path.resolve() / "sessions.db"
    sid = first.create(model="m", provider="openai")
    assert second.exists(sid)
    first.close()
    third = SessionStore.shared(tmp_path)
    assert third.db is not first.db and third.exists(sid)
    third.close()


def test_a_shared_store_keeps_recording_after_its_state_dir_is_deleted(tmp_path: Path) -> None:
    state = tmp_path / ".toolrig"
    store = SessionStore.shared(state)
    old = store.create(model="m", provider="openai")
    shutil.rmtree(state)
    assert SessionStore.shared(state) is store  # the cached store, on the one shared database
    sid = store.create(model="m", provider="openai")
    store.record(sid, turn=0, messages=[Message.user("after")])
    fresh = SessionStore(state / "sessions.db")  # what another process now finds at the path
    assert fresh.messages(sid) == [Message.user("after")] and not fresh.exists(old)
    fresh.close()
    store.close()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["type", "text", "id", "x"]), inner),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.one_of(
        st.text(max_size=30),
        _JSON.map(json.dumps),
        st.just("[" * 5000 + "]" * 5000),
        st.just('[{"type": "text", "text": "x", "evil": 1}]'),
    ),
    role=st.sampled_from(["user", "assistant", "system", ""]),
)
def test_a_stored_message_row_toolrig_did_not_write_is_a_run_error_never_a_crash(
    tmp_path: Path, content: str, role: str
) -> None:
    """sessions.db is a workspace file: a repository can commit one and a crash can cut a row."""
    store = SessionStore(tmp_path / f"s-{uuid.uuid4().hex}.db")
    sid = store.create(model="m", provider="anthropic")
    store.record(sid, turn=0, messages=[Message.user("hi")])
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE messages SET content = ?, role = ? WHERE session_id = ?", (content, role, sid))
    try:
        messages = store.messages(sid)
    except RunError as exc:
        assert exc.kind == "state" and "unreadable" in exc.message
    else:
        assert len(messages) == 1
    store.close()
