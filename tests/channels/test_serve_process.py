"""``toolrig serve`` as a process with the Telegram channel: it talks, stops, starts again and goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.agent.conftest import agent_config
from tests.channels.conftest import ALICE, BOT_TOKEN, telegram_config
from tests.support.bot_api import BotApi
from tests.support.fake_llm import FakeLLM, Text, reply

pytestmark = [pytest.mark.slow]


def serve(workspace: Path, home: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "toolrig", "serve", "--root", str(workspace), "--port", "0"]
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    first = process.stderr.readline()
    assert first.startswith("toolrig: gateway listening on"), first
    return process


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    assert process.wait(30) is not None
    if process.stderr is not None:
        process.stderr.close()


def test_toolrig_serve_runs_the_bot_and_a_restart_continues_the_conversation(
    workspace: Path, tmp_path: Path, llm: FakeLLM, bot: BotApi
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config: dict[str, Any] = {**agent_config(llm, "anthropic"), "channels": {"telegram": telegram_config(bot)}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "TOOLRIG_HOME": str(home), "TEST_TELEGRAM_TOKEN": BOT_TOKEN}
    llm.reset()
    llm.script(reply(Text("noted: 7")), reply(Text("it was 7")))
    for prompt, answer in (("remember 7", "noted: 7"), ("what number?", "it was 7")):
        process = serve(workspace, home, env)
        try:
            calls = len(bot.calls)
            bot.wait_until(lambda: "getUpdates" in bot.calls[calls:], what="the bot polling")  # noqa: B023
            bot.say(prompt, from_id=ALICE)
            bot.wait_until(lambda: any(answer in m["text"] for m in bot.to(ALICE)), what=answer)  # noqa: B023
        finally:
            stop(process)
    assert "remember 7" in json.dumps(llm.bodies()[-1]["messages"])


def test_toolrig_serve_without_the_bots_token_says_so_and_does_not_start(
    workspace: Path, tmp_path: Path, llm: FakeLLM, bot: BotApi
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = {**agent_config(llm, "anthropic"), "channels": {"telegram": telegram_config(bot)}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "TOOLRIG_HOME": str(home)}
    env.pop("TEST_TELEGRAM_TOKEN", None)
    command = [sys.executable, "-m", "toolrig", "serve", "--root", str(workspace), "--port", "0"]
    done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "TEST_TELEGRAM_TOKEN" in done.stderr
