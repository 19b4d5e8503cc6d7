"""Chat channels inside ``toolrig serve``: people talk to the gateway's agents from elsewhere (Telegram).

Each is a ``gateway.channels.Channel``: the server starts its ``serve(runs)`` with the gateway's own
``RunManager``, so a channel's conversations are the page's sessions, under the same policy and audit log.
Secrets are read (and a webhook's port bound) when the server is set up: a missing one fails ``toolrig serve`` at
start (``ConfigError``), never a bot that silently is not there.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from toolrig.errors import ConfigError

if TYPE_CHECKING:
    from toolrig.config import TelegramChannelConfig
    from toolrig.gateway.runs import RunManager
    from toolrig.rig import Rig


def configured(rig: Rig) -> list[Any]:
    """The channels ``rig.config`` turns on (``channels:``), ready to serve; their code is imported only then."""
    settings = rig.config.channels.telegram
    return [TelegramChannel(rig, settings)] if settings is not None else []


class TelegramChannel:
    name = "telegram"

    def __init__(self, rig: Rig, settings: TelegramChannelConfig) -> None:
        self.rig = rig
        self.settings = settings
        self.token = secret(settings.bot_token_env, "channels.telegram.bot_token_env")
        self.receiver = None
        if settings.webhook is not None:
            from toolrig.channels.telegram.webhook import WebhookReceiver

            key = "channels.telegram.webhook.secret_env"
            self.receiver = WebhookReceiver(settings.webhook, secret(settings.webhook.secret_env, key))
        self.bot: Any = None  # the running bot (tests look at it)

    async def serve(self, runs: RunManager) -> None:
        from toolrig.channels.telegram.bot import TelegramBot

        self.bot = TelegramBot(self.rig, runs, self.settings, self.token)
        await self.bot.serve(self.receiver)


def secret(variable: str, key: str) -> str:
    value = os.environ.get(variable, "")
    if not value:
        raise ConfigError(f"the environment variable {variable} is not set (it holds the secret)", key=key)
    return value
