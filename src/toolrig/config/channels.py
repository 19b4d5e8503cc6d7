"""Where people talk to agents besides the terminal and the gateway's page: chat channels (Telegram).

Trusted-only (no ``Narrow`` rule): a workspace's config must not open a bot to anyone, or name who may run
agents, until the user trusts it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from toolrig.config.base import Section

UserId = Annotated[int, Field(gt=0)]


class TelegramWebhookConfig(Section):
    """Webhook mode: Telegram posts updates to ``url`` (yours, public, HTTPS), which forwards to ``listen``."""

    url: str = Field(min_length=8, description="The public HTTPS address Telegram posts updates to (setWebhook).")
    secret_env: str = Field(
        description="The variable holding the secret Telegram sends in X-Telegram-Bot-Api-Secret-Token."
    )
    host: str = Field(default="127.0.0.1", description="Where toolrig listens for the posts (behind your proxy).")
    port: int = Field(default=8781, ge=0, le=65535, description="Its port (0 picks a free one).")
    path: str = Field(default="/telegram", pattern=r"^/[A-Za-z0-9/_.-]{0,200}$", description="The path posted to.")


class TelegramChannelConfig(Section):
    """A Telegram bot people talk to the agent through, inside ``toolrig serve`` (docs/gateway.md)."""

    bot_token_env: str = Field(
        default="TELEGRAM_BOT_TOKEN", description="The environment variable holding the bot's token (never the token)."
    )
    allowed_users: list[UserId] = Field(
        min_length=1, description="Telegram user ids who may talk to the agent; anyone else is refused (and audited)."
    )
    agent: str | None = Field(default=None, description="The agent these runs use (default: serve's).")
    base_url: str | None = Field(default=None, description="The Bot API's base URL (default api.telegram.org).")
    poll_seconds: int = Field(default=25, ge=1, le=50, description="getUpdates long-poll length.")
    webhook: TelegramWebhookConfig | None = Field(
        default=None, description="Receive updates by webhook instead of long polling (needs a public URL)."
    )
    max_prompt_chars: int = Field(default=8_000, ge=1, le=100_000, description="A longer message is refused.")
    runs_per_hour: int = Field(default=60, ge=1, le=10_000, description="Runs one user may start in an hour.")
    edit_seconds: float = Field(
        default=1.5, ge=0, le=60, description="Least time between two edits of a streaming reply (Telegram's limits)."
    )


class ChannelsConfig(Section):
    telegram: TelegramChannelConfig | None = None
