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
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from toolrig.adapters.http_auth import HttpGuard, TokenError, allowed_hosts, allowed_origins, is_loopback

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "toolrig_gateway"
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
    """``HttpGuard`` for the API and the page: the bearer header, or the page's cookie from the page's origin."""

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str], origins: Iterable[str], token: str | None) -> None:
        super().__init__(app, hosts=hosts, origins=origins, token=token)
        self.token = token
        self.cookie = cookie_value(token).encode() if token else None

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
        refused = self.refusal(headers)
        method, path = scope["method"], scope["path"]
        if refused is not None and refused[0] == 401:
            if path == LOGIN and method in SAFE_METHODS:
                await self._login(scope, send_secured)
                return
            if (path in PUBLIC and method in SAFE_METHODS) or self._cookie_ok(headers, method):
                refused = None
        if refused is None:
            if path == LOGIN:  # no token configured, or the header already carried it: nothing to set
                await _redirect(send_secured, "/", None)
                return
            await self.app(scope, receive, send_secured)
            return
        await self._refuse(send_secured, refused)

    def _cookie_ok(self, headers: dict[str, bytes], method: str) -> bool:
        if self.cookie is None:
            return False
        presented = _cookie(headers.get("cookie", b""), COOKIE.encode())
        if presented is None or not hmac.compare_digest(presented, self.cookie):
            return False
        site = headers.get("sec-fetch-site")
        if site is not None and site not in (b"same-origin", b"none"):
            return False
        # A state-changing request with the cookie must say it comes from the page (the Origin was checked above).
        return method in SAFE_METHODS or "origin" in headers

    async def _login(self, scope: Scope, send: Send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        if self.token is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            cookie = f"{COOKIE}={cookie_value(self.token)}; HttpOnly; SameSite=Strict; Path=/"
            await _redirect(send, "/", cookie)
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
) -> GatewayGuard:
    """``app`` behind the gateway's guard; refuses to serve beyond loopback without a token (as ``http_auth``)."""
    if token is None and not is_loopback(host):
        raise TokenError(f"the gateway bound to {host}, beyond loopback, needs a bearer token")
    hosts = allowed_hosts(host, port, extra_hosts)
    return GatewayGuard(app, hosts=hosts, origins=allowed_origins(hosts, extra_origins), token=token)
