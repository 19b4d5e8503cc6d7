"""The gateway on 127.0.0.1 with its Telegram channel talking to a local Bot API server, over the fake model."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.agent.conftest import agent_config
from tests.gateway.conftest import TOKEN, Served
from tests.support import sample_tools
from tests.support.bot_api import BotApi
from tests.support.fake_llm import FakeLLM
from toolrig.adapters.mcp_http import bind
from toolrig.channels import configured
from toolrig.gateway.server import make_server
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.tools.interact import AskUser, SuggestFollowups, WriteTodos

ALICE, BOB, MALLORY = 111, 222, 666  # Alice and Bob may talk to the agent; Mallory may not
BOT_TOKEN = "4242:TESTBOT"


@dataclass
class Chat:
    """One running gateway with its bot, and the fake Telegram server the people type into."""

    gw: Served
    bot: BotApi
    channels: list[Any]

    def texts(self, chat: int) -> list[str]:
        return [m["text"] for m in self.bot.to(chat)]

    def wait_text(self, chat: int, needle: str, what: str = "") -> dict[str, Any]:
        """The first message to ``chat`` whose (latest) text contains ``needle``, once there is one."""
        found: list[dict[str, Any]] = []

        def check() -> bool:
            found[:] = [m for m in self.bot.to(chat) if needle in m["text"]]
            return bool(found)

        self.bot.wait_until(check, what=what or f"{needle!r} in chat {chat}: {self.texts(chat)}")
        return found[0]

    def wait_buttons(self, chat: int, label: str) -> dict[str, Any]:
        """The latest message to ``chat`` with a button labelled ``label``."""
        found: list[dict[str, Any]] = []

        def check() -> bool:
            found[:] = [m for m in self.bot.to(chat) if label in _labels(m)]
            return bool(found)

        self.bot.wait_until(check, what=f"a {label!r} button in chat {chat}: {self.texts(chat)}")
        return found[-1]


def _labels(message: dict[str, Any]) -> list[str]:
    rows = (message.get("reply_markup") or {}).get("inline_keyboard") or []
    return [b["text"] for row in rows for b in row]


@pytest.fixture(scope="session")
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def bot() -> Iterator[BotApi]:
    server = BotApi(token=BOT_TOKEN).start()
    yield server
    server.stop()


def channel_rig(workspace: Path, llm: FakeLLM, extra: tuple[Any, ...] = (), **config: Any) -> Rig:
    from toolrig.tools.agents import TOOLS

    registry = Registry([*sample_tools.agent_tools(), AskUser(), WriteTodos(), SuggestFollowups(), *extra])
    return Rig(workspace, config={**agent_config(llm, "anthropic"), **config}, registry=registry, tools=TOOLS)


def telegram_config(bot: BotApi, **settings: Any) -> dict[str, Any]:
    return {
        "bot_token_env": "TEST_TELEGRAM_TOKEN",
        "allowed_users": [ALICE, BOB],
        "base_url": bot.base,
        "poll_seconds": 1,
        "edit_seconds": 0,
        **settings,
    }


@pytest.fixture
def chat(workspace: Path, llm: FakeLLM, bot: BotApi, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``chat(telegram={...}, **config)`` starts a gateway with its bot; each one started is stopped at the end."""
    monkeypatch.setenv("TEST_TELEGRAM_TOKEN", BOT_TOKEN)
    started: list[Served] = []
    llm.reset()

    def start(*, telegram: dict[str, Any] | None = None, extra: tuple[Any, ...] = (), **config: Any) -> Chat:
        config.setdefault("channels", {"telegram": telegram_config(bot, **(telegram or {}))})
        rig = channel_rig(workspace, llm, extra, **config)
        sock = bind("127.0.0.1", 0)
        channels = configured(rig)
        server, base = make_server(rig, sock, token=TOKEN, channels=channels)

        async def main() -> None:
            async with rig:
                await server.serve(sockets=[sock])

        thread = threading.Thread(target=anyio.run, args=(main,), name="gateway", daemon=True)
        thread.start()
        served = Served(base, TOKEN, llm, rig, server, thread)
        started.append(served)
        calls = len(bot.calls)
        if config["channels"].get("telegram", {}).get("webhook") is None:  # polling: wait for the first getUpdates
            bot.wait_until(lambda: "getUpdates" in bot.calls[calls:], what="the bot's first poll")
        return Chat(served, bot, channels)

    yield start
    for served in started:
        if served.thread is not None and served.thread.is_alive():
            served.stop()
