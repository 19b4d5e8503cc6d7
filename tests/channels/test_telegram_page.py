"""A conversation held on Telegram, seen and continued on the gateway's web page, in a real headless browser."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from tests.channels.conftest import ALICE, Chat
from tests.gateway.test_page import browser, send, signed_in
from tests.support.fake_llm import Text, reply

__all__ = ["browser"]  # the module-scoped Chromium fixture, shared with the gateway's page tests
pytestmark = [pytest.mark.slow, pytest.mark.servers]
expect.set_options(timeout=30_000)  # a loaded machine: the first run imports the provider SDK


def test_the_page_shows_a_telegram_conversation_and_continues_it_into_the_users_chat(
    chat: Any, browser: Browser
) -> None:
    c: Chat = chat()
    c.gw.llm.script(reply(Text("Hello <b>Alice</b>, from the model")), reply(Text("Continued from the page.")))
    c.bot.say("hi from telegram", from_id=ALICE)
    c.wait_text(ALICE, "from the model")
    page = signed_in(browser, c.gw.base, c.gw.token)
    sessions = page.locator("#sessions li")
    expect(sessions).to_have_count(1)
    sessions.first.click()
    log = page.locator("#log")
    expect(log).to_contain_text("hi from telegram")
    expect(log).to_contain_text("Hello <b>Alice</b>, from the model")  # the model's text, shown as text
    expect(log.locator("b")).to_have_count(0)
    send(page, "and now from the page")
    expect(log).to_contain_text("Continued from the page.")
    c.wait_text(ALICE, "Continued from the page.")  # the same session: the reply reaches her chat too
    assert "and now from the page" in str(c.gw.llm.bodies()[-1]["messages"])
    assert page.errors == []  # type: ignore[attr-defined]
