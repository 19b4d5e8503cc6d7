"""Where the OAuth tokens and client registration of each remote MCP server are kept between runs.

Trust model: tokens are secrets. They go to the OS keyring when one is usable, else to a 0600 file in the
user's toolrig home, reached without following symlinks (``StatePath``). Entries are keyed by server name,
URL and auth identity, so a server whose URL changes never receives another server's tokens.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import Any, Protocol

import anyio

from toolrig.config import McpServerConfig
from toolrig.sandbox.paths import toolrig_home
from toolrig.sandbox.statedir import StatePath

log = logging.getLogger("toolrig.mcp")

KEYRING_SERVICE = "toolrig-mcp"


class McpAuthError(Exception):
    """Signing in to a remote MCP server cannot go on; the message says why in the user's terms."""


class LoginRequired(McpAuthError):
    """The server needs the user to sign in (or to grant more scope), which only ``toolrig mcp login`` does."""


class AuthConfigError(McpAuthError):
    """``auth:`` names a secret that is not there (an unset variable, an unreadable key file)."""


TOKEN_DIR = "mcp-auth"  # noqa: S105  # a directory name


def entry_key(name: str, config: McpServerConfig) -> str:
    """The server's name plus a hash of what its tokens are bound to: URL, auth type, client and issuer."""
    auth = config.auth
    bound = {
        "url": config.url,
        "type": auth.type if auth else None,
        "client_id": auth.client_id if auth else None,
        "issuer": auth.issuer if auth else None,
    }
    return f"{name}-{hashlib.sha256(json.dumps(bound, sort_keys=True).encode()).hexdigest()[:16]}"


class _Backend(Protocol):
    where: str

    def load(self) -> dict[str, Any]: ...

    def save(self, data: dict[str, Any]) -> None: ...

    def delete(self) -> None: ...


class _FileBackend:
    """A 0600 JSON file in ``<home>/mcp-auth/`` (a 0700 directory), written atomically, never through a link."""

    def __init__(self, home: Path, key: str) -> None:
        self._state = StatePath.of(home)
        self._name = f"{key}.json"
        self.where = str(home / TOKEN_DIR / self._name)

    def load(self) -> dict[str, Any]:
        try:
            raw = self._state.read_bytes(TOKEN_DIR, self._name)
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            log.warning("the MCP token file %s is unreadable; signing in again replaces it", self.where)
            return {}
        return data if isinstance(data, dict) else {}

    def save(self, data: dict[str, Any]) -> None:
        with self._state.directory(TOKEN_DIR) as fd:
            os.fchmod(fd, 0o700)
            # Created 0600 before any secret is written: the atomic write keeps an existing file's mode.
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self._name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd))
            handle = os.open(self._name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                if stat.S_IMODE(os.fstat(handle).st_mode) != 0o600:
                    os.fchmod(handle, 0o600)
            finally:
                os.close(handle)
        self._state.write_bytes(TOKEN_DIR, self._name, data=json.dumps(data, sort_keys=True).encode())

    def delete(self) -> None:
        with (
            contextlib.suppress(FileNotFoundError, NotADirectoryError),
            self._state.directory(TOKEN_DIR, create=False) as fd,
        ):
            os.unlink(self._name, dir_fd=fd)


class _KeyringBackend:
    """One keyring entry per server (service ``toolrig-mcp``), holding the same JSON the file would."""

    def __init__(self, key: str) -> None:
        self._key = key
        self.where = f"the OS keyring ({KEYRING_SERVICE}/{key})"

    def load(self) -> dict[str, Any]:
        import keyring

        raw = keyring.get_password(KEYRING_SERVICE, self._key)
        if not raw:
            return {}
        with contextlib.suppress(ValueError):
            data = json.loads(raw)
            if isinstance(data, dict):
                return data
        return {}

    def save(self, data: dict[str, Any]) -> None:
        import keyring

        keyring.set_password(KEYRING_SERVICE, self._key, json.dumps(data, sort_keys=True))

    def delete(self) -> None:
        import keyring
        from keyring.errors import PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError):
            keyring.delete_password(KEYRING_SERVICE, self._key)


def keyring_usable() -> bool:
    """Whether an OS keyring is there to use (a headless machine has only keyring's "fail" backend)."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return False
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken keyring configuration means: no keyring
        return False
    return not isinstance(backend, fail.Keyring) and float(getattr(backend, "priority", 0) or 0) > 0


class McpTokenStore:
    """The SDK's ``TokenStorage`` for one server: tokens and the client registration, in one entry."""

    def __init__(self, name: str, config: McpServerConfig, *, home: Path | None = None) -> None:
        key = entry_key(name, config)
        choice = config.auth.store if config.auth else "auto"
        use_keyring = choice == "keyring" or (choice == "auto" and keyring_usable())
        self._file = _FileBackend(home or toolrig_home(), key)
        self._backend: _Backend = _KeyringBackend(key) if use_keyring else self._file
        self._fallback = choice == "auto"
        self.refuse_registration: str | None = None  # set for runs: registering means a browser sign-in is next

    @property
    def where(self) -> str:
        return self._backend.where

    def _call(self, action: str, *args: Any) -> Any:
        try:
            return getattr(self._backend, action)(*args)
        except Exception as exc:
            if not isinstance(self._backend, _KeyringBackend) or not self._fallback:
                raise
            # A locked or broken keyring must not lock the user out: the 0600 file is the documented fallback.
            log.warning("the OS keyring failed (%s); keeping MCP tokens in %s instead", exc, self._file.where)
            self._backend = self._file
            return getattr(self._backend, action)(*args)

    def load(self) -> dict[str, Any]:
        data: dict[str, Any] = self._call("load")
        return data

    def _update(self, field: str, value: dict[str, Any]) -> None:
        data = self.load()
        data[field] = value
        self._call("save", data)

    def note_scope(self, scope: str) -> None:
        """Remember the scope a run could not get without the user, for the next ``toolrig mcp login``."""
        data = self.load()
        data["wanted_scope"] = scope[:2000]
        self._call("save", data)

    def clear(self) -> None:
        self._call("delete")

    # -- the SDK's TokenStorage protocol (keyring calls may block: they run on a worker thread)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        data = await anyio.to_thread.run_sync(self.load)
        raw = data.get("tokens")
        if isinstance(raw, dict):
            raw = {k: v for k, v in raw.items() if k != "expires_at"}
        return _parse(OAuthToken, raw)

    async def set_tokens(self, tokens: Any) -> None:
        record = tokens.model_dump(mode="json", exclude_none=True)
        if tokens.expires_in is not None:
            # Kept absolute: the SDK counts expires_in from receipt, which a later run no longer knows.
            record["expires_at"] = time.time() + tokens.expires_in
        await anyio.to_thread.run_sync(self._update, "tokens", record)

    async def expires_at(self) -> float | None:
        """When the stored access token expires (epoch seconds), if the server said."""
        data = await anyio.to_thread.run_sync(self.load)
        value = (data.get("tokens") or {}).get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    def sign_in_state(self, now: float | None = None) -> str:
        """'signed in', 'token expired' or 'not signed in', from what is stored alone (no network call).

        An expired token with a refresh token is still 'token expired': whether the refresh works is only
        known by trying, which a listing must not do.
        """
        tokens = self.load().get("tokens")
        if not isinstance(tokens, dict) or not tokens.get("access_token"):
            return "not signed in"
        expires = tokens.get("expires_at")
        if isinstance(expires, int | float) and expires <= (time.time() if now is None else now):
            return "token expired"
        return "signed in"

    def can_refresh(self) -> bool:
        """Whether a refresh token is stored, so an expired access token is renewed without the user."""
        tokens = self.load().get("tokens")
        return isinstance(tokens, dict) and bool(tokens.get("refresh_token"))

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        data = await anyio.to_thread.run_sync(self.load)
        return _parse(OAuthClientInformationFull, data.get("client"))

    async def set_client_info(self, client_info: Any) -> None:
        if self.refuse_registration is not None:
            raise LoginRequired(self.refuse_registration)
        await anyio.to_thread.run_sync(self._update, "client", client_info.model_dump(mode="json", exclude_none=True))


def _parse(model: Any, raw: Any) -> Any:
    from pydantic import ValidationError

    if not isinstance(raw, dict):
        return None
    try:
        return model.model_validate(raw)
    except ValidationError:
        log.warning("a stored MCP %s no longer parses; it is ignored", model.__name__)
        return None
