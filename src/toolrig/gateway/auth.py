"""Who may use the gateway: ``http_auth``'s guard (Host, Origin, bearer token), plus a cookie for the web page.

Trust model: the bearer token (or the cookie derived from it) is the whole login. A person opens the one-time URL
printed at start (``/login?token=...``); the server answers with an HttpOnly, SameSite=Strict cookie and redirects
to ``/`` so the token leaves the address bar and the history. A request that relies on the cookie must come from
the page itself: a state-changing one must carry an allowed Origin, any one a same-origin ``Sec-Fetch-Site`` when
the browser sends it (CSRF). The page's HTML, script and style hold no data and are served on a good Host alone.
Every response carries a strict Content-Security-Policy: no inline script, nothing from elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from toolrig.adapters.http_auth import (
    UNAUTHORIZED,
    HttpGuard,
    TokenError,
    allowed_hosts,
    allowed_origins,
    is_loopback,
)

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "toolrig_gateway"
USER_KEY = "toolrig_user"  # the scope's state key the guard puts the request's user under
LOGIN = "/login"
PUBLIC = frozenset({"/", "/static/app.js", "/static/app.css"})  # the page itself: no data in it
SAFE_METHODS = frozenset({"GET", "HEAD"})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def cookie_value(token: str) -> str:
    """The cookie is derived from the token, so it holds across restarts and changes when the token rotates."""
    return hmac.new(token.encode(), b"toolrig gateway cookie v1", hashlib.sha256).hexdigest()


class GatewayGuard(HttpGuard):
    """``HttpGuard`` for the API and the page: the bearer header, or the page's cookie from the page's origin.

    Several users: each has a token of their own (``users``: name -> token) besides the operator's (``token``).
    The request's user goes into the scope (``state[USER_KEY]``; None for the operator), where the handlers read it.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Iterable[str],
        origins: Iterable[str],
        token: str | None,
        users: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(app, hosts=hosts, origins=origins, token=None)  # Host and Origin there; tokens here
        self.logins: list[tuple[bytes, bytes, str | None]] = []  # (token, cookie, user)
        for user, secret in [(None, token), *(users or {}).items()]:
            if secret is not None:
                self.logins.append((secret.encode(), cookie_value(secret).encode(), user))
        if users and token is None:
            raise TokenError("several users need the operator's token too (no --no-token with --user)")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        headers: dict[str, bytes] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.decode("latin-1").lower(), value)
        method, path = scope["method"], scope["path"]
        refused = self.refusal(headers)  # Host, Origin
        if refused is not None:
            await self._refuse(send_secured, refused)
            return
        who = self._who(headers, method)
        if who is None:
            if path == LOGIN and method in SAFE_METHODS:
                await self._login(scope, send_secured)
            elif path in PUBLIC and method in SAFE_METHODS:
                await self.app(scope, receive, send_secured)
            else:
                await self._refuse(send_secured, _unauthorized(headers))
            return
        if path == LOGIN:  # no token configured, or the header already carried it: nothing to set
            await _redirect(send_secured, "/", None)
            return
        scope = {**scope, "state": {**scope.get("state", {}), USER_KEY: who[0]}}
        await self.app(scope, receive, send_secured)

    def _who(self, headers: dict[str, bytes], method: str) -> tuple[str | None] | None:
        """(user,) for a good bearer token or page cookie (user None: the operator); None for nobody."""
        if not self.logins:
            return (None,)  # --no-token, loopback only
        scheme, _, presented = headers.get("authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer":
            presented = presented.strip()
            for secret, _, user in self.logins:
                if hmac.compare_digest(presented, secret):
                    return (user,)
        cookie = _cookie(headers.get("cookie", b""), COOKIE.encode())
        if cookie is None:
            return None
        site = headers.get("sec-fetch-site")
        if site is not None and site not in (b"same-origin", b"none"):
            return None
        # A state-changing request with the cookie must say it comes from the page (the Origin was checked above).
        if method not in SAFE_METHODS and "origin" not in headers:
            return None
        for _, value, user in self.logins:
            if hmac.compare_digest(cookie, value):
                return (user,)
        return None

    async def _login(self, scope: Scope, send: Send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0].encode()
        for secret, value, _ in self.logins:
            if hmac.compare_digest(given, secret):
                await _redirect(send, "/", f"{COOKIE}={value.decode()}; HttpOnly; SameSite=Strict; Path=/")
                return
        body = b"The login link is wrong or out of date: open the one toolrig serve printed at start."
        await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})

    async def _refuse(self, send: Send, refused: tuple[int, int, str, list[tuple[bytes, bytes]]]) -> None:
        import json

        status, _, message, extra = refused
        body = json.dumps({"error": message}).encode()
        start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
        await send({"type": "http.response.start", "status": status, "headers": start})
        await send({"type": "http.response.body", "body": body})


def _unauthorized(headers: dict[str, bytes]) -> tuple[int, int, str, list[tuple[bytes, bytes]]]:
    presented = headers.get("authorization", b"").partition(b" ")[2]
    challenge = b'Bearer realm="toolrig"' + (b', error="invalid_token"' if presented else b"")
    message = "A valid bearer token is required (Authorization: Bearer <token>): see the server's start-up lines."
    return 401, UNAUTHORIZED, message, [(b"www-authenticate", challenge)]


def _cookie(header: bytes, name: bytes) -> bytes | None:
    for part in header.split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == name:
            return value
    return None


async def _redirect(send: Send, to: str, cookie: str | None) -> None:
    headers = [(b"location", to.encode()), (b"content-length", b"0")]
    if cookie is not None:
        headers.append((b"set-cookie", cookie.encode()))
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def gateway_guard(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    token: str | None,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    users: Mapping[str, str] | None = None,
) -> GatewayGuard:
    """``app`` behind the gateway's guard; refuses to serve beyond loopback without a token (as ``http_auth``)."""
    if token is None and not is_loopback(host):
        raise TokenError(f"the gateway bound to {host}, beyond loopback, needs a bearer token")
    hosts = allowed_hosts(host, port, extra_hosts)
    origins = allowed_origins(hosts, extra_origins)
    return GatewayGuard(app, hosts=hosts, origins=origins, token=token, users=users)
