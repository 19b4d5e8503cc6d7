"""Chat channels inside ``toolrig serve``: people talk to the gateway's agents from elsewhere (Telegram).

A channel starts and continues runs through the gateway's own ``RunManager``, so its conversations are the page's
sessions, under the same policy and audit log. Secrets come from the environment when the server starts: a
missing one fails the start (``ConfigError``), never a silent bot that is not there.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.errors import ConfigError

if TYPE_CHECKING:
    from toolrig.gateway.runs import RunManager
    from toolrig.rig import Rig

log = logging.getLogger("toolrig.channels")


class Channels:
    """The configured channels, built now (secrets read, webhook port bound); ``serve`` runs them until ``stop``."""

    def __init__(self, rig: Rig, runs: RunManager) -> None:
        self.bots: list[tuple[Any, Any]] = []  # (bot, receiver or None: long polling)
        self._scope = anyio.CancelScope()
        settings = rig.config.channels.telegram
        if settings is None:
            return
        from toolrig.channels.telegram.bot import TelegramBot

        token = _secret(settings.bot_token_env, "channels.telegram.bot_token_env")
        receiver = None
        if settings.webhook is not None:
            from toolrig.channels.telegram.webhook import WebhookReceiver

            secret = _secret(settings.webhook.secret_env, "channels.telegram.webhook.secret_env")
            receiver = WebhookReceiver(settings.webhook, secret)
        self.bots.append((TelegramBot(rig, runs, settings, token), receiver))

    async def serve(self) -> None:
        with self._scope:
            async with anyio.create_task_group() as group:
                for bot, receiver in self.bots:
                    group.start_soon(self._keep, bot, receiver)

    def stop(self) -> None:
        self._scope.cancel()

    @staticmethod
    async def _keep(bot: Any, receiver: Any) -> None:
        try:
            await bot.serve(receiver)
        except Exception:  # a channel's failure must not take the gateway (and the page's runs) down
            log.exception("channels: the Telegram channel stopped")


def _secret(variable: str, key: str) -> str:
    value = os.environ.get(variable, "")
    if not value:
        raise ConfigError(f"the environment variable {variable} is not set (it holds the secret)", key=key)
    return value
