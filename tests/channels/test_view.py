"""A run's view in a chat, against the local Bot API: fragments between two flushes are one message or edit."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from tests.support.bot_api import BotApi
from toolrig.channels.telegram.botapi import BotApi as Client
from toolrig.channels.telegram.botapi import BotApiError
from toolrig.channels.telegram.buttons import Buttons
from toolrig.channels.telegram.view import RunView
from toolrig.gateway.runs import LiveRun

pytestmark = pytest.mark.anyio


@pytest.fixture
def bot() -> Iterator[BotApi]:
    server = BotApi().start()
    yield server
    server.stop()


async def test_two_hundred_fragments_that_came_before_a_flush_are_one_message(bot: BotApi) -> None:
    run = LiveRun("r1", "p", None, None)
    for i in range(200):
        run.publish({"type": "stream_text", "text": f"{i} "})
    run.finish("completed")
    async with Client(bot.token, bot.base) as api:
        view = RunView(api, 7, run, Buttons(), edit_seconds=3600, on_session=lambda s: None)
        with anyio.fail_after(30):
            await view.follow()
    assert [c for c in bot.calls if c != "getUpdates"] == ["sendMessage"]
    assert bot.sent[0]["text"] == "".join(f"{i} " for i in range(200))


async def test_flood_control_is_waited_out_and_a_wrong_token_is_an_error_with_its_status(bot: BotApi) -> None:
    bot.flood("sendMessage", times=2, retry_after=0)
    async with Client(bot.token, bot.base) as api:
        await api.call("sendMessage", {"chat_id": 1, "text": "x"})
    assert bot.calls.count("sendMessage") == 3 and len(bot.sent) == 1
    async with Client("999:WRONG", bot.base) as api:
        with pytest.raises(BotApiError) as caught:
            await api.call("getUpdates", {})
    assert caught.value.status == 401 and "WRONG" not in str(caught.value)  # the token is never in a message
