"""MCP sessions -> toolrig session ids: one each, stable, bounded (adapters/mcp_sessions.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.adapters.mcp_sessions import SessionIds


def request(session: str | None) -> Any:
    headers = {} if session is None else {"mcp-session-id": session}
    return SimpleNamespace(request=SimpleNamespace(headers=headers))


@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=30))
def test_distinct_mcp_sessions_get_distinct_stable_toolrig_sessions(keys: list[str]) -> None:
    ids = SessionIds("mcp-own")
    first = {key: ids.of(request(key)) for key in keys}
    assert len(set(first.values())) == len(set(keys))  # no two MCP sessions share one
    assert "mcp-own" not in first.values()
    assert all(ids.of(request(key)) == first[key] for key in keys)  # the same session keeps its id


@pytest.mark.parametrize("name", ["-", " ", "none", "null", "0"])
def test_a_session_named_like_no_session_is_still_a_session_of_its_own(name: str) -> None:
    ids = SessionIds("mcp-own")
    named = ids.of(request(name))
    assert ids.of(request(name)) == named  # stable, not a fresh id per request as a sessionless one gets
    assert named not in {ids.of(request(None)), ids.of(request("")), "mcp-own"}


def test_stdio_is_the_servers_own_session_and_a_sessionless_http_request_is_a_new_one_each_time() -> None:
    ids = SessionIds("mcp-own")
    assert ids.of(SimpleNamespace(request=None)) == "mcp-own"
    fresh = {ids.of(request(None)) for _ in range(20)}  # 2026-07-28 over HTTP: one exchange, no session
    assert len(fresh) == 20 and "mcp-own" not in fresh


def test_the_map_is_bounded_and_forgets_the_least_recently_used_first() -> None:
    ids = SessionIds("mcp-own", limit=3)
    a = ids.of(request("a"))
    ids.of(request("b"))
    ids.of(request("c"))
    assert ids.of(request("a")) == a  # used again: now the newest
    ids.of(request("d"))  # evicts b, the oldest unused
    assert ids.of(request("a")) == a
    assert len(ids._ids) == 3 and "b" not in ids._ids
