"""The few Bot API methods the channel calls, over one HTTP client, honouring Telegram's flood control.

Trust model: the token comes from the environment (trusted config names the variable) and is never logged:
errors name the method, never the URL. Replies are data from Telegram's server, read defensively.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("toolrig.channels.telegram")

DEFAULT_API = "https://api.telegram.org"
MAX_RETRY_AFTER = 60.0  # a longer flood wait is an error, not a stall of the whole channel
RETRIES = 3


class BotApiError(Exception):
    """The Bot API refused a call or could not be reached."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class BotApi:
    """``call(method, payload)`` -> the result; a 429 waits the ``retry_after`` Telegram names, then tries again."""

    def __init__(self, token: str, api_base: str = DEFAULT_API) -> None:
        self._url = f"{api_base.rstrip('/')}/bot{token}/"
        self._http: httpx2.AsyncClient | None = None

    async def __aenter__(self) -> BotApi:
        import httpx2

        self._http = httpx2.AsyncClient(trust_env=False)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            with anyio.CancelScope(shield=True):
                await self._http.aclose()
            self._http = None

    async def call(self, method: str, payload: dict[str, Any], seconds: float = 30) -> Any:
        for _ in range(RETRIES):
            status, body = await self._post(method, payload, seconds)
            if status == 429 and isinstance(body, dict):
                wait = _retry_after(body)
                if wait is not None and wait <= MAX_RETRY_AFTER:
                    log.info("telegram: %s rate-limited, waiting %.0f s", method, wait)
                    await anyio.sleep(wait)
                    continue
            if isinstance(body, dict) and body.get("ok"):
                return body.get("result")
            description = body.get("description") if isinstance(body, dict) else None
            raise BotApiError(f"{method}: HTTP {status}: {str(description or 'not ok')[:200]}", status)
        raise BotApiError(f"{method}: still rate-limited after {RETRIES} tries", 429)

    async def best_effort(self, method: str, payload: dict[str, Any]) -> Any:
        """Acknowledgements and edits: a failure is logged, never raised into the run's handling."""
        try:
            return await self.call(method, payload)
        except BotApiError as exc:
            log.warning("telegram: %s", exc)
            return None

    async def _post(self, method: str, payload: dict[str, Any], seconds: float) -> tuple[int, Any]:
        import httpx2

        if self._http is None:
            raise BotApiError(f"{method}: the client is closed")
        try:
            response = await self._http.post(self._url + method, json=payload, timeout=seconds)
            return response.status_code, response.json()
        except (httpx2.HTTPError, ValueError) as exc:
            raise BotApiError(f"{method}: {type(exc).__name__}") from None


def _retry_after(body: dict[str, Any]) -> float | None:
    parameters = body.get("parameters")
    value = parameters.get("retry_after") if isinstance(parameters, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None
