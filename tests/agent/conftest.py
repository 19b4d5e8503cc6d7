from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_llm import FakeLLM
from tests.support.sample_tools import agent_tools
from toolrig.registry import Registry
from toolrig.rig import Rig


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def agent_config(llm: FakeLLM, provider: str, **agent: Any) -> dict[str, Any]:
    """Config that points the provider's real SDK at the fake server."""
    base = {
        "provider": provider,
        "model": "claude-test" if provider == "anthropic" else "gpt-test",
        "base_url": llm.anthropic_url if provider == "anthropic" else llm.openai_url,
        "api_key": "test-key",
        "max_retries": 0,
        "request_timeout_seconds": 20,
    }
    return {"llm": {**base, **agent}}


@pytest.fixture
def make_rig(workspace: Path, llm: FakeLLM, provider: str) -> Any:
    def make(*, rig_options: dict[str, Any] | None = None, config: dict[str, Any] | None = None, **agent: Any) -> Rig:
        """A Rig on the fake provider; ``agent`` overrides agent settings, ``config`` adds other sections."""
        full = {**agent_config(llm, provider, **agent), **(config or {})}
        return Rig(workspace, config=full, registry=Registry(agent_tools()), **(rig_options or {}))

    return make
