from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolrig.config import McpServerConfig
from toolrig.errors import ToolError
from toolrig.sources.mcp_tokens import LoginRequired, McpTokenStore, entry_key


def _config(url: str = "https://mcp.example.com/mcp", **auth: Any) -> McpServerConfig:
    return McpServerConfig(url=url, auth={"store": "file", **auth})


def _token(**extra: Any) -> Any:
    from mcp.shared.auth import OAuthToken

    return OAuthToken(access_token="secret-access", token_type="Bearer", refresh_token="secret-refresh", **extra)


def test_tokens_are_kept_in_a_0600_file_in_a_0700_directory_and_read_back(toolrig_home: Path) -> None:
    store = McpTokenStore("linear", _config())
    anyio.run(store.set_tokens, _token(expires_in=3600))
    [path] = (toolrig_home / "mcp-auth").iterdir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = McpTokenStore("linear", _config())
    tokens = anyio.run(again.get_tokens)
    assert tokens.access_token == "secret-access" and tokens.refresh_token == "secret-refresh"
    expires = anyio.run(again.expires_at)
    assert expires is not None  # absolute, so a later run knows to refresh rather than send an expired token


def test_a_token_file_loosened_by_hand_is_made_0600_again_before_the_next_write(toolrig_home: Path) -> None:
    store = McpTokenStore("linear", _config())
    anyio.run(store.set_tokens, _token())
    [path] = (toolrig_home / "mcp-auth").iterdir()
    path.chmod(0o644)
    anyio.run(store.set_tokens, _token())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_symlinked_token_directory_is_refused_never_followed(toolrig_home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (toolrig_home / "mcp-auth").symlink_to(elsewhere)
    with pytest.raises(ToolError, match="symlink"):
        anyio.run(McpTokenStore("linear", _config()).set_tokens, _token())
    assert list(elsewhere.iterdir()) == []


def test_a_server_whose_url_or_client_changes_never_gets_the_old_tokens() -> None:
    base = entry_key("linear", _config())
    assert entry_key("linear", _config("https://evil.example.com/mcp")) != base
    assert entry_key("linear", _config(client_id="other")) != base
    assert entry_key("linear", _config()) == base


def test_a_run_refuses_to_keep_a_new_registration_because_a_sign_in_would_follow() -> None:
    from mcp.shared.auth import OAuthClientInformationFull

    store = McpTokenStore("linear", _config())
    store.refuse_registration = "it needs you to sign in: run `toolrig mcp login linear`"
    info = OAuthClientInformationFull(client_id="c", redirect_uris=["http://127.0.0.1:1234/callback"])
    with pytest.raises(LoginRequired, match="toolrig mcp login linear"):
        anyio.run(store.set_client_info, info)
    assert store.load() == {}


def test_a_corrupt_token_file_reads_as_signed_out(toolrig_home: Path) -> None:
    store = McpTokenStore("linear", _config())
    anyio.run(store.set_tokens, _token())
    [path] = (toolrig_home / "mcp-auth").iterdir()
    path.write_text("{not json")
    assert anyio.run(store.get_tokens) is None
    path.write_text('{"tokens": {"access_token": 5}}')
    assert anyio.run(store.get_tokens) is None


def test_the_os_keyring_is_used_when_one_is_available(toolrig_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring
    from keyring.backend import KeyringBackend

    entries: dict[tuple[str, str], str] = {}

    class Memory(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def get_password(self, service: str, username: str) -> str | None:
            return entries.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            entries[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            entries.pop((service, username), None)

    previous = keyring.get_keyring()
    keyring.set_keyring(Memory())
    try:
        store = McpTokenStore("linear", McpServerConfig(url="https://mcp.example.com/mcp", auth={}))
        assert "keyring" in store.where
        anyio.run(store.set_tokens, _token())
        assert anyio.run(store.get_tokens).access_token == "secret-access"
    finally:
        keyring.set_keyring(previous)
    assert [key[0] for key in entries] == ["toolrig-mcp"]
    assert not (toolrig_home / "mcp-auth").exists() or not os.listdir(toolrig_home / "mcp-auth")
