from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.fake_llm import FakeLLM, Reply
from tests.support.subagent_conversations import Conversations, install


@pytest.fixture
def converse(llm: FakeLLM) -> Iterator[Callable[[dict[str, list[Reply]]], Conversations]]:
    """Script runs that happen at once by their prompt's marker; the responder is removed afterwards."""

    def set_up(scripts: dict[str, list[Reply]]) -> Conversations:
        return install(llm, scripts)

    yield set_up
    llm.responder = None


@pytest.fixture
def agent_tools_rig(make_rig: Any) -> Callable[..., Any]:
    """make_rig with the delegation tools added to the sample tools."""
    from toolrig.tools.agents import TOOLS

    def make(config: dict[str, Any] | None = None, tools: list[Any] | None = None, **agent: Any) -> Any:
        return make_rig(rig_options={"tools": [*TOOLS, *(tools or [])]}, config=config, **agent)

    return make
