"""Remote channels: where a person who is not at the terminal answers approvals and questions (Telegram, webhooks).

Both implement the approvals package's one channel protocol; ``remote_channels`` builds the ones
``approvals.forward`` configures (the Rig races them against its own channel: ``approvals.forward``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolrig.errors import ConfigError

if TYPE_CHECKING:
    from toolrig.approvals.channel import ApprovalChannel
    from toolrig.approvals.model import RefusedAnswer
    from toolrig.config import ForwardConfig


def remote_channels(settings: ForwardConfig, on_refused: Callable[[RefusedAnswer], None]) -> list[ApprovalChannel]:
    """The configured remote channels, their secrets read from the environment now (a missing one is an error)."""
    channels: list[ApprovalChannel] = []
    if settings.telegram is not None:
        from toolrig.remote.telegram import DEFAULT_API, TelegramChannel

        telegram = settings.telegram
        token = _secret(telegram.bot_token_env, "approvals.forward.telegram.bot_token_env")
        channel = TelegramChannel(
            token,
            telegram.chat_id,
            allowed_users=telegram.allowed_users,
            api_base=telegram.base_url or DEFAULT_API,
            poll_seconds=telegram.poll_seconds,
        )
        channel.on_refused = on_refused
        channels.append(channel)
    if settings.webhook is not None:
        from toolrig.remote.webhook import WebhookChannel

        hook = settings.webhook
        secret = _secret(hook.secret_env, "approvals.forward.webhook.secret_env")
        webhook = WebhookChannel(hook.url, secret, poll_url=hook.poll_url, poll_interval=hook.poll_interval_seconds)
        webhook.on_refused = on_refused
        channels.append(webhook)
    return channels


def _secret(variable: str, key: str) -> str:
    value = os.environ.get(variable, "")
    if not value:
        raise ConfigError(f"the environment variable {variable} is not set (it holds the secret)", key=key)
    return value
