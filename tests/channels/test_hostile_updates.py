"""Any update, however malformed, from anyone but an allowed user in their own chat: no exception, no run."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.bot_api import BotApi
from toolrig.channels.telegram.bot import TelegramBot
from toolrig.config import TelegramChannelConfig
from toolrig.gateway.runs import RunManager
from toolrig.rig import Rig

ALICE, MALLORY = 111, 666

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
sender = st.fixed_dictionaries({"id": st.sampled_from([ALICE, MALLORY, 0, -5, True]) | junk})
chat = st.fixed_dictionaries(
    {"id": st.sampled_from([MALLORY, -100, ALICE + 1]) | junk, "type": st.sampled_from(["private", "group"]) | junk}
)  # never Alice's own chat: nothing here may start a run
text = st.sampled_from(["/stop", "/new", "/status", "/todos", "/resume x", "/help", "hi"]) | st.text(max_size=60) | junk
message = st.fixed_dictionaries({"from": sender, "chat": chat, "text": text}, optional={"reply_to_message": junk})
query = st.fixed_dictionaries(
    {"id": junk, "from": sender, "data": st.text(max_size=70) | junk, "message": st.fixed_dictionaries({"chat": chat})}
)
update = (
    st.fixed_dictionaries(
        {"update_id": st.integers(min_value=-5, max_value=10**9) | junk},
        optional={"message": message | junk, "callback_query": query | junk},
    )
    | junk
)


@pytest.fixture(scope="module")
def bot() -> Iterator[BotApi]:
    server = BotApi().start()
    yield server
    server.stop()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(updates=st.lists(update, max_size=12))
@example(  # found by this test: an id that is a list (unhashable) was looked up in the allowed set
    updates=[
        {"update_id": 1, "message": {"from": {"id": [1]}, "chat": {"id": -100, "type": "group"}, "text": "x"}},
        {"update_id": 2, "callback_query": {"id": 1, "from": {"id": {}}, "data": "a:b", "message": {"chat": {}}}},
    ]
)
def test_no_update_raises_or_starts_a_run_unless_an_allowed_user_wrote_in_their_own_chat(
    bot: BotApi, updates: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    with tempfile.TemporaryDirectory() as folder:
        rig = Rig(Path(folder), config={"llm": {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "model": "m"}})
        settings_ = TelegramChannelConfig(allowed_users=[ALICE], base_url=bot.base, poll_seconds=1)

        async def main() -> None:
            async with anyio.create_task_group() as tasks:
                runs = RunManager(rig, tasks)
                telegram = TelegramBot(rig, runs, settings_, bot.token)
                async with telegram.api:
                    for item in updates:
                        await telegram.handle(item)
                assert runs.runs == {}
                assert telegram.state.sessions == {}

        try:
            anyio.run(main)
        finally:
            rig.close()
    assert not [r for r in caplog.records if r.exc_info], "an update raised inside the bot"
