"""The HTTP client under a provider SDK: TLS set up once per process, none at all for a plain-http model server.

An SDK client built with its defaults loads the CA bundle into a new SSL context every time (17-21 ms of CPU
on these machines, most of a durable task's model-client cost), even for ``http://127.0.0.1`` where no TLS is
ever spoken. The verified context is the SDK's own default (httpx2's, which honours ``SSL_CERT_FILE``), built
on first use and shared: a context holds no per-connection state. A plain-http URL gets a client that cannot
reach TLS at all (no redirects followed, no proxy from the environment in the way); anything else, the
verified context. Trust model: the base URL is the user's trusted config; nothing here weakens verification.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import getproxies

if TYPE_CHECKING:
    import ssl

    import httpx2

_lock = threading.Lock()
_verified: ssl.SSLContext | None = None


def verified_context() -> ssl.SSLContext:
    """The process's one verifying SSL context, as the SDKs would build it for each client."""
    global _verified
    with _lock:
        if _verified is None:
            import httpx2

            _verified = httpx2.create_ssl_context()
        return _verified


def no_tls_needed(base_url: str | None) -> bool:
    """True for an ``http://`` model URL that no environment proxy stands in front of (a proxy may speak TLS)."""
    if not base_url or urlsplit(base_url).scheme != "http":
        return False
    proxies = getproxies()
    return not any(proxies.get(scheme) for scheme in ("http", "all"))


def sdk_http_client(factory: Callable[..., httpx2.AsyncClient], base_url: str | None) -> httpx2.AsyncClient:
    """``factory`` (an SDK's ``DefaultAsyncHttpxClient``) with TLS as above; the SDK's other defaults stay."""
    options: dict[str, Any]
    if no_tls_needed(base_url):
        # verify=False builds a bare context (no CA bundle read); without redirects nothing can lead to https.
        options = {"verify": False, "follow_redirects": False}
    else:
        options = {"verify": verified_context()}
    return factory(**options)
