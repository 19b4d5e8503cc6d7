"""The guard and the kept token every toolrig HTTP endpoint shares (adapters/http_auth.py), without a server."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrig.adapters.http_auth import (
    MIN_TOKEN_CHARS,
    HttpGuard,
    TokenError,
    check_token,
    choose_token,
    client_config,
    guard,
    stored_token,
    token_file,
)
from toolrig.errors import ToolError

pytestmark = pytest.mark.anyio


def test_a_new_token_is_kept_0600_in_a_0700_directory_of_the_toolrig_home(toolrig_home: Path) -> None:
    made = stored_token("mcp")
    assert made.created and made.path == toolrig_home / "tokens" / "mcp.token" == token_file("mcp")
    assert made.path.read_text() == made.value + "\n" and len(made.value) >= 40
    assert stat.S_IMODE(made.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(made.path.parent.stat().st_mode) == 0o700
    assert [p.name for p in made.path.parent.iterdir()] == ["mcp.token"]  # no staged file left behind


def test_the_kept_token_is_reused_until_rotated_and_each_server_name_has_its_own(toolrig_home: Path) -> None:
    first = stored_token("mcp")
    again = stored_token("mcp")
    assert again.value == first.value and not again.created
    assert stored_token("gateway").value != first.value
    rotated = stored_token("mcp", rotate=True)
    assert rotated.created and rotated.value != first.value and stored_token("mcp").value == rotated.value


def test_a_umask_that_would_share_the_file_does_not(toolrig_home: Path) -> None:
    old = os.umask(0)
    try:
        made = stored_token("mcp")
    finally:
        os.umask(old)
    assert stat.S_IMODE(made.path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (lambda p: p.chmod(0o644), "readable by others"),
        (lambda p: p.chmod(0o640), "readable by others"),
        (lambda p: p.write_text("short\n"), "no usable token"),
        (lambda p: p.write_bytes(b"\xff" * 64), "no usable token"),
        (lambda p: p.write_text(""), "no usable token"),
    ],
)
def test_a_kept_token_others_could_read_or_that_is_no_token_is_replaced_and_said(
    spoil: Any, says: str, toolrig_home: Path
) -> None:
    first = stored_token("mcp")
    spoil(first.path)
    replaced = stored_token("mcp")
    assert replaced.created and replaced.value != first.value and says in (replaced.notice or "")
    assert stat.S_IMODE(replaced.path.stat().st_mode) == 0o600
    assert stored_token("mcp").value == replaced.value


def test_a_symlink_in_place_of_the_token_file_or_its_directory_is_refused_never_followed(
    toolrig_home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.token"
    outside.write_text("attacker-chosen-token-0123456789\n")
    outside.chmod(0o600)
    (toolrig_home / "tokens").mkdir()
    (toolrig_home / "tokens" / "mcp.token").symlink_to(outside)
    with pytest.raises(TokenError, match="cannot be read"):
        stored_token("mcp")
    (toolrig_home / "tokens" / "mcp.token").unlink()
    (toolrig_home / "tokens").rmdir()
    (toolrig_home / "tokens").symlink_to(tmp_path)
    with pytest.raises(ToolError, match="symlink"):
        stored_token("mcp")
    assert outside.read_text() == "attacker-chosen-token-0123456789\n"


def test_servers_starting_at_once_agree_on_one_token(toolrig_home: Path) -> None:
    barrier = threading.Barrier(4)
    values: list[str] = []

    def start() -> None:
        barrier.wait()
        values.append(stored_token("mcp").value)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(values)) == 1 and token_file("mcp").read_text().strip() == values[0]


def test_the_environment_token_wins_and_contradictions_are_refused(
    toolrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("T_TOKEN", raising=False)
    assert choose_token("mcp", env_var="T_TOKEN", no_token=True).value is None
    kept = choose_token("mcp", env_var="T_TOKEN")
    assert kept.source == "file" and kept.stored is not None and kept.value == kept.stored.value
    monkeypatch.setenv("T_TOKEN", "from-the-environment-123")
    given = choose_token("mcp", env_var="T_TOKEN")
    assert (given.source, given.value, given.stored) == ("env", "from-the-environment-123", None)
    for options in ({"no_token": True}, {"rotate": True}):
        with pytest.raises(TokenError):
            choose_token("mcp", env_var="T_TOKEN", **options)


printable = st.characters(min_codepoint=0x21, max_codepoint=0x7E)
printable_8 = st.text(printable, min_size=8)


@given(st.text(printable, min_size=MIN_TOKEN_CHARS, max_size=200))
def test_any_long_enough_printable_token_is_accepted(token: str) -> None:
    assert check_token(token) == token


@given(
    st.text(printable, max_size=MIN_TOKEN_CHARS - 1)
    | st.tuples(printable_8, st.sampled_from(" \t\n\r\x00\x7fé\u2028"), printable_8).map("".join)
)
def test_a_short_token_or_one_a_header_cannot_carry_is_refused(token: str) -> None:
    with pytest.raises(TokenError):
        check_token(token)


def test_the_client_config_is_the_mcp_servers_entry_clients_take() -> None:
    entry = {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer " + "t" * 20}}
    assert client_config("http://127.0.0.1:1/mcp", "t" * 20) == {"mcpServers": {"toolrig": entry}}


async def _ask(app: Any, headers: list[tuple[str, str]], kind: str = "http") -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {"type": kind, "path": "/mcp", "headers": [(k.encode(), v.encode()) for k, v in headers]}
    await app(scope, receive, send)
    return sent


def _app(reached: list[str]) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    return app


async def test_the_guard_checks_host_then_origin_then_token_and_refuses_as_json_rpc() -> None:
    reached: list[str] = []
    checked = HttpGuard(_app(reached), hosts=["127.0.0.1:1"], origins=["http://127.0.0.1:1"], token="t" * 20)

    async def status(*headers: tuple[str, str]) -> int:
        return int((await _ask(checked, list(headers)))[0]["status"])

    host, good = ("host", "127.0.0.1:1"), ("authorization", "Bearer " + "t" * 20)
    assert await status(good) == 421
    assert await status(host, ("origin", "null"), good) == 403
    assert await status(host) == 401
    assert await status(host, ("authorization", "Bearer " + "t" * 19)) == 401
    assert await status(host, ("authorization", "Basic " + "t" * 20)) == 401
    assert await status(host, ("authorization", "t" * 20)) == 401
    assert await status(host, ("authorization", "Bearer wrong"), good) == 401  # the first of a repeated header
    assert await status(host, good) == 204
    assert await status(("HOST", "127.0.0.1:1"), ("Authorization", "BEARER " + "t" * 20)) == 204
    assert await status(host, ("origin", "http://127.0.0.1:1"), good) == 204
    assert reached == ["http"] * 3
    start, body = await _ask(checked, [host])
    assert ("www-authenticate", 'Bearer realm="toolrig"') in [(k.decode(), v.decode()) for k, v in start["headers"]]
    refusal = json.loads(body["body"])
    assert refusal["jsonrpc"] == "2.0" and refusal["id"] is None and refusal["error"]["code"] == -32001


async def test_the_guard_closes_an_unauthenticated_websocket_handshake_and_passes_lifespan() -> None:
    reached: list[str] = []
    checked = HttpGuard(_app(reached), hosts=["127.0.0.1:1"], origins=[], token="t" * 20)
    assert await _ask(checked, [("host", "127.0.0.1:1")], "websocket") == [{"type": "websocket.close", "code": 1008}]
    assert await _ask(checked, [("host", "evil:1"), ("authorization", "Bearer " + "t" * 20)], "websocket") == [
        {"type": "websocket.close", "code": 1008}
    ]
    await _ask(checked, [("host", "127.0.0.1:1"), ("authorization", "Bearer " + "t" * 20)], "websocket")
    await _ask(checked, [], "lifespan")
    assert reached == ["websocket", "lifespan"]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com"])  # noqa: S104 - nothing binds
def test_a_guard_without_a_token_beyond_loopback_cannot_be_built(host: str) -> None:
    with pytest.raises(TokenError, match="beyond loopback"):
        guard(_app([]), host=host, port=80, token=None)
    assert guard(_app([]), host="127.0.0.1", port=80, token=None).hosts == {
        "127.0.0.1:80",
        "localhost:80",
        "[::1]:80",
    }
