"""Webhook mode: Telegram posts each update to a listener of the channel's own, checked by its secret header.

Trust model: anyone who finds the URL can post to it. A post counts only with the secret toolrig gave Telegram in
``setWebhook`` (``X-Telegram-Bot-Api-Secret-Token``, compared in constant time); bodies are capped, parsed as
JSON, and then handled exactly as polled updates (replayed ids refused). A wrong secret is a 401 and an audit row.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.errors import ConfigError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from toolrig.channels.telegram.bot import TelegramBot
    from toolrig.config import TelegramWebhookConfig

log = logging.getLogger("toolrig.channels.telegram")

MAX_BODY = 1_000_000
HEADER = "x-telegram-bot-api-secret-token"
_SECRET = re.compile(r"^[A-Za-z0-9_-]{16,256}$")  # what Telegram accepts as secret_token (and long enough)


def check_secret(secret: str) -> str:
    if not _SECRET.fullmatch(secret):
        raise ConfigError(
            "the webhook secret must be 16-256 characters of letters, digits, '_' and '-' (Telegram's rule)",
            key="channels.telegram.webhook.secret_env",
        )
    return secret


class WebhookReceiver:
    """``await receiver(bot)``: registers the webhook with Telegram, then serves the posts until cancelled."""

    def __init__(self, settings: TelegramWebhookConfig, secret: str) -> None:
        from toolrig.adapters.mcp_http import bind

        self.settings = settings
        self.secret = check_secret(secret)
        try:  # bound now: a taken port fails `toolrig serve` at start
            self.sock = bind(settings.host, settings.port)
        except OSError as exc:
            where = f"{settings.host}:{settings.port}"
            raise ConfigError(
                f"cannot listen on {where}: {exc.strerror or exc}", key="channels.telegram.webhook.port"
            ) from None
        self.address = self.sock.getsockname()[:2]

    async def __call__(self, bot: TelegramBot) -> None:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.routing import Route

        async def post(request: Request) -> Response:
            return await self._post(bot, request)

        app = Starlette(routes=[Route(self.settings.path, post, methods=["POST"])])
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
        await bot.api.call(
            "setWebhook",
            {
                "url": self.settings.url,
                "secret_token": self.secret,
                "allowed_updates": ["message", "callback_query"],
                "max_connections": 1,  # one post at a time, in order: an older id arriving late is not a replay
            },
        )
        bot.ready.set()
        try:
            await server.serve(sockets=[self.sock])
        finally:
            server.should_exit = True
            self.sock.close()

    async def _post(self, bot: TelegramBot, request: Request) -> Response:
        from starlette.responses import JSONResponse

        given = request.headers.get(HEADER, "")
        if not hmac.compare_digest(given.encode(), self.secret.encode()):
            client = request.client.host if request.client is not None else "?"
            await bot.audit("webhook post without the secret", f"from {client}", tool="(telegram webhook)")
            return JSONResponse({"ok": False}, status_code=401)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return JSONResponse({"ok": False}, status_code=413)
        try:
            update: Any = json.loads(body)
        except ValueError:
            return JSONResponse({"ok": False}, status_code=400)
        with anyio.CancelScope(shield=True):  # a client that hangs up must not leave an update half handled
            await bot.handle(update)
        return JSONResponse({"ok": True})
