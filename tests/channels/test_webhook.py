"""Webhook mode: Telegram's posts reach the bot only with the secret it was given; replays are refused."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.channels.conftest import ALICE, Chat
from tests.channels.test_telegram import refusals
from tests.support.fake_llm import Text, reply
from toolrig.errors import ConfigError

SECRET = "s3cret-" + "x" * 30


def update(update_id: int, text: str) -> dict[str, Any]:
    chat = {"id": ALICE, "type": "private"}
    return {"update_id": update_id, "message": {"message_id": 5, "from": {"id": ALICE}, "chat": chat, "text": text}}


def test_a_post_with_the_secret_is_a_message_and_one_without_or_replayed_is_refused_and_audited(
    chat: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_TG_SECRET", SECRET)
    hook = {"url": "https://bot.example.org/telegram", "secret_env": "TEST_TG_SECRET", "port": 0}
    c: Chat = chat(telegram={"webhook": hook})
    c.bot.wait_until(lambda: bool(c.bot.webhooks), what="setWebhook")
    assert c.bot.webhooks[0]["url"] == hook["url"] and c.bot.webhooks[0]["secret_token"] == SECRET
    assert "getUpdates" not in c.bot.calls
    host, port = c.channels[0].receiver.address
    url = f"http://{host}:{port}/telegram"
    c.gw.llm.script(reply(Text("hooked")))
    with httpx2.Client(timeout=30) as client:
        assert (
            client.post(url, json=update(7, "forged"), headers={"X-Telegram-Bot-Api-Secret-Token": "no"}).status_code
            == 401
        )
        assert client.post(url, json=update(8, "unsigned")).status_code == 401
        headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
        assert client.post(url, json=update(9, "hi"), headers=headers).status_code == 200
        c.wait_text(ALICE, "hooked")
        assert client.post(url, json=update(9, "hi again"), headers=headers).status_code == 200  # a replay
        assert client.post(url, content=b"{not json", headers=headers).status_code == 400
    assert len(c.gw.llm.requests) == 1
    assert refusals(c) == [
        ("(telegram webhook)", "refused:webhook post without the secret"),
        ("(telegram webhook)", "refused:webhook post without the secret"),
        ("(telegram message)", "refused:replayed update id"),
    ]


def test_a_missing_token_or_a_short_webhook_secret_fails_the_start(chat: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.channels.conftest import channel_rig, telegram_config
    from toolrig.channels import configured

    c: Chat = chat()
    monkeypatch.delenv("TEST_TELEGRAM_TOKEN")
    rig = channel_rig(c.gw.rig.workspace.root, c.gw.llm, channels={"telegram": telegram_config(c.bot)})
    with pytest.raises(ConfigError, match="TEST_TELEGRAM_TOKEN"):
        configured(rig)
    monkeypatch.setenv("TEST_TELEGRAM_TOKEN", "1:x")
    monkeypatch.setenv("TEST_TG_SECRET", "short")
    hook = {"url": "https://bot.example.org/telegram", "secret_env": "TEST_TG_SECRET", "port": 0}
    rig = channel_rig(c.gw.rig.workspace.root, c.gw.llm, channels={"telegram": telegram_config(c.bot, webhook=hook)})
    with pytest.raises(ConfigError, match="16-256"):
        configured(rig)
