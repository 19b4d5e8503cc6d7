"""OAuth 2.1 for remote MCP servers, on the official SDK's providers: which one a server's ``auth:`` asks for.

Trust model: the MCP server and its authorization server are remote parties. The SDK does discovery, PKCE,
registration, scope selection and step-up, refresh and issuer checks; toolrig adds where tokens live
(``mcp_tokens``), the loopback redirect of ``toolrig mcp login`` (accepting only the state it sent), and
the rule that a run never opens a browser: a server that needs the user says so and names the command.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import anyio

from toolrig.config import McpAuthConfig, McpServerConfig
from toolrig.sources.mcp_tokens import AuthConfigError, LoginRequired, McpTokenStore

__all__ = ["AuthConfigError", "LoginRequired", "auth_for"]  # login: toolrig.sources.mcp_login

if TYPE_CHECKING:
    import httpx2
    from anyio.abc import SocketStream
    from mcp.shared.auth import AuthorizationCodeResult

log = logging.getLogger("toolrig.mcp")

CALLBACK_PATH = "/callback"
LOGIN_TIMEOUT = 300.0
_MAX_REQUEST = 16384


# ------------------------------------------------------------------------------------------ loopback redirect


_PAGE = "<!doctype html><meta charset=utf-8><title>toolrig</title><p style='font-family:sans-serif'>{text}</p>"


@dataclass
class LoopbackCallback:
    """The one redirect of a browser sign-in, received on 127.0.0.1: only a request carrying our state counts."""

    redirect_uri: str
    expected_state: str | None = None
    result: AuthorizationCodeResult | None = None
    error: str | None = None
    done: anyio.Event = field(default_factory=anyio.Event)

    def expect(self, authorization_url: str) -> None:
        states = parse_qs(urlsplit(authorization_url).query).get("state")
        self.expected_state = states[0] if states else None

    async def handle(self, stream: SocketStream) -> None:
        async with stream:
            status, text = await self._answer(stream)
            body = _PAGE.format(text=text).encode()
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
            ).encode()
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(head + body)

    async def _answer(self, stream: SocketStream) -> tuple[str, str]:
        from mcp.shared.auth import AuthorizationCodeResult

        data = b""
        with anyio.move_on_after(10):
            while b"\r\n\r\n" not in data and len(data) < _MAX_REQUEST:
                try:
                    data += await stream.receive(4096)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
        parts = data.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        if len(parts) != 3 or parts[0] != "GET":
            return "400 Bad Request", "Not a sign-in redirect."
        target = urlsplit(parts[1])
        if target.path != CALLBACK_PATH:
            return "404 Not Found", "Not a sign-in redirect."
        query = {key: values[0] for key, values in parse_qs(target.query).items() if values}
        if self.expected_state is None or query.get("state") != self.expected_state:
            # Another page or process guessing at the port: not our sign-in, and it must not end it.
            return "400 Bad Request", "This redirect does not belong to the sign-in toolrig started."
        if self.done.is_set():
            return "409 Conflict", "This sign-in is already complete."
        if "error" in query:
            described = query.get("error_description", "")
            self.error = f"{query['error']}{': ' + described if described else ''}"[:500]
            self.done.set()
            return "200 OK", "Sign-in was not completed. You can close this tab."
        if "code" not in query:
            return "400 Bad Request", "The redirect carries no authorization code."
        self.result = AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query.get("iss"))
        self.done.set()
        return "200 OK", "Signed in: toolrig has the authorization. You can close this tab."

    async def wait(self, seconds: float = LOGIN_TIMEOUT) -> AuthorizationCodeResult:
        from mcp.client.auth import OAuthFlowError

        timeout = seconds
        with anyio.move_on_after(timeout):
            await self.done.wait()
        if self.error is not None:
            raise OAuthFlowError(f"the authorization server refused the sign-in: {self.error}")
        if self.result is None:
            raise OAuthFlowError(f"no sign-in arrived at {self.redirect_uri} within {timeout:g} seconds")
        return self.result


@contextlib.asynccontextmanager
async def loopback_callback(port: int = 0) -> AsyncIterator[LoopbackCallback]:
    """Listen on 127.0.0.1 (never beyond loopback) for the browser's redirect, for the body of the block."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    bound = listener.extra(anyio.abc.SocketAttribute.local_port)  # noqa: S610  # anyio, not Django
    callback = LoopbackCallback(f"http://127.0.0.1:{bound}{CALLBACK_PATH}")
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, callback.handle)
        try:
            yield callback
        finally:
            group.cancel_scope.cancel()


@dataclass
class Interactive:
    """A sign-in the user takes part in: open the URL in a browser, then wait for its loopback redirect."""

    open_url: Callable[[str], Awaitable[None]]
    callback: LoopbackCallback
    timeout: float = LOGIN_TIMEOUT

    async def redirect(self, url: str) -> None:
        self.callback.expect(url)
        await self.open_url(url)

    async def wait(self) -> AuthorizationCodeResult:
        return await self.callback.wait(self.timeout)


# ------------------------------------------------------------------------------------------ providers


def _quiet_sdk_flow_errors(record: logging.LogRecord) -> bool:
    """The SDK logs every failed sign-in with a traceback; toolrig reports the cause itself, once, in words."""
    return record.getMessage() != "OAuth flow error"


def _install_log_filter() -> None:
    sdk = logging.getLogger("mcp.client.auth.oauth2")
    if _quiet_sdk_flow_errors not in sdk.filters:
        sdk.addFilter(_quiet_sdk_flow_errors)


def _secret(auth: McpAuthConfig, name: str) -> str:
    variable = auth.client_secret_env
    value = os.environ.get(variable or "")
    if not value:
        raise AuthConfigError(f"its client secret is not in the environment variable {variable} (client_secret_env)")
    return value


def _key(auth: McpAuthConfig, name: str) -> str:
    path = Path(os.path.expanduser(auth.private_key_file or ""))
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AuthConfigError(f"its private_key_file {path} cannot be read: {exc}") from None


def _login_hint(name: str) -> str:
    return f"it needs you to sign in: run `toolrig mcp login {name}`"


def auth_for(
    name: str,
    config: McpServerConfig,
    *,
    interactive: Interactive | None = None,
    store: McpTokenStore | None = None,
) -> httpx2.Auth | None:
    """The httpx2 auth for one server's connection, or None when its config asks for none."""
    auth = config.auth
    if auth is None or config.url is None:
        return None
    _install_log_filter()
    kept = store or McpTokenStore(name, config)
    store = kept
    wanted = kept.load().get("wanted_scope") if interactive is not None else None
    # A run never signs in: a new registration means a browser sign-in is next, so it stops there, unsaved.
    store.refuse_registration = None if interactive is not None else _login_hint(name)
    from mcp.client.auth import OAuthClientProvider

    class Restoring(OAuthClientProvider):
        """Knows when a stored token expires, so a later run refreshes it instead of sending it to a 401."""

        async def _initialize(self) -> None:
            await super()._initialize()
            if self.context.current_tokens is not None:
                self.context.token_expiry_time = await kept.expires_at()

    if auth.type == "client_credentials":
        return _client_credentials(config.url, auth, name, store, Restoring)
    if auth.type == "identity_assertion":
        return _identity_assertion(config.url, auth, name, store)
    return _authorization_code(config.url, auth, name, store, interactive, Restoring, wanted)


def _authorization_code(
    url: str,
    auth: McpAuthConfig,
    name: str,
    store: McpTokenStore,
    interactive: Interactive | None,
    base: type[Any],
    wanted: str | None,
) -> httpx2.Auth:
    from mcp.client.auth.utils import union_scopes
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    if interactive is not None:
        redirect_uri = interactive.callback.redirect_uri
    else:
        registered = (store.load().get("client") or {}).get("redirect_uris") or []
        redirect_uri = registered[0] if registered else f"http://127.0.0.1:{auth.callback_port or 80}{CALLBACK_PATH}"
    secret = _secret(auth, name) if auth.client_secret_env else None
    method = auth.token_endpoint_auth_method or ("client_secret_basic" if secret else "none")
    metadata = OAuthClientMetadata(
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic turns the str into a URL
        client_name=auth.client_name,
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method=method,
        scope=auth.scope,
    )
    fixed = (
        OAuthClientInformationFull(
            client_id=auth.client_id,
            client_secret=secret,
            redirect_uris=[redirect_uri],  # type: ignore[list-item]
            token_endpoint_auth_method=method,
            issuer=auth.issuer,
        )
        if auth.client_id
        else None
    )

    async def refuse() -> None:
        raise LoginRequired(_login_hint(name))

    async def no_browser(url: str) -> None:
        # What the server asked for (a step-up names more scope): the next `mcp login` asks for it too.
        scopes = parse_qs(urlsplit(url).query).get("scope")
        if scopes:
            await anyio.to_thread.run_sync(store.note_scope, scopes[0])
        raise LoginRequired(f"it needs you to sign in (again, or for more access): run `toolrig mcp login {name}`")

    class Provider(base):  # type: ignore[misc]
        async def _initialize(self) -> None:
            await super()._initialize()
            if fixed is not None:
                self.context.client_info = fixed

        async def _perform_authorization(self) -> Any:
            # The SDK replaces the requested scope with the server's challenge; the user's own and a
            # step-up's earlier demand are asked for on top of it.
            extra = union_scopes(auth.scope, wanted) if (auth.scope or wanted) else None
            if extra:
                self.context.client_metadata.scope = union_scopes(self.context.client_metadata.scope, extra)
            return await super()._perform_authorization()

    provider: httpx2.Auth = Provider(
        url,
        metadata,
        store,
        redirect_handler=interactive.redirect if interactive else no_browser,
        callback_handler=interactive.wait if interactive else refuse,
        client_metadata_url=auth.client_metadata_url,
    )
    return provider


def _client_credentials(url: str, auth: McpAuthConfig, name: str, store: McpTokenStore, base: type[Any]) -> httpx2.Auth:
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    client_id = auth.client_id or ""
    with warnings.catch_warnings():
        # Without ``issuer`` the SDK warns (deprecated): our docs ask for it; a missing one is the user's choice.
        warnings.simplefilter("ignore")
        if auth.private_key_file is not None:
            key = _key(auth, name)
            signer = SignedJWTParameters(
                issuer=client_id, subject=client_id, signing_key=key, signing_algorithm=auth.signing_algorithm
            )

            class Jwt(base, PrivateKeyJWTOAuthProvider):  # type: ignore[misc]
                pass

            jwt_provider: httpx2.Auth = Jwt(
                url, store, client_id, signer.create_assertion_provider(), scope=auth.scope, issuer=auth.issuer
            )
            return jwt_provider

        class Basic(base, ClientCredentialsOAuthProvider):  # type: ignore[misc]
            pass

        post = auth.token_endpoint_auth_method == "client_secret_post"  # noqa: S105  # a method name
        basic: httpx2.Auth = Basic(
            url,
            store,
            client_id,
            _secret(auth, name),
            token_endpoint_auth_method="client_secret_post" if post else "client_secret_basic",
            scope=auth.scope,
            issuer=auth.issuer,
        )
        return basic


def _identity_assertion(url: str, auth: McpAuthConfig, name: str, store: McpTokenStore) -> httpx2.Auth:
    """SEP-990: the user's IdP ID token is exchanged at the IdP (RFC 8693) for an ID-JAG the server's AS accepts."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    id_token_variable = auth.id_token_env or ""

    async def id_jag(audience: str, resource: str) -> str:
        import httpx2
        from mcp.client.auth import OAuthTokenError

        id_token = os.environ.get(id_token_variable)
        if not id_token:
            raise AuthConfigError(f"your IdP ID token is not in the environment variable {id_token_variable}")
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": audience,
            "resource": resource,
            "subject_token": id_token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        }
        if auth.idp_client_id:
            form["client_id"] = auth.idp_client_id
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(auth.idp_token_endpoint or "", data=form)
        if response.status_code != 200:
            status = response.status_code
            raise OAuthTokenError(f"the IdP refused the token exchange (HTTP {status}): {response.text[:300]}")
        token = (
            response.json().get("access_token")
            if response.headers.get("content-type", "").startswith("application/json")
            else None
        )
        if not isinstance(token, str) or not token:
            raise OAuthTokenError("the IdP's token exchange answer carries no access_token (the ID-JAG)")
        return token

    method = auth.token_endpoint_auth_method
    provider: httpx2.Auth = IdentityAssertionOAuthProvider(
        url,
        store,
        auth.client_id or "",
        _secret(auth, name),
        auth.issuer or "",
        id_jag,
        scope=auth.scope,
        token_endpoint_auth_method="client_secret_post" if method == "client_secret_post" else "client_secret_basic",
    )
    return provider
