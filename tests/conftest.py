from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from toolrig.rig import Rig

if TYPE_CHECKING:
    from tests.agent.fake_llm import FakeLLM


@pytest.fixture(autouse=True)
def toolrig_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own user-level toolrig home, so no test reads or writes the real ~/.toolrig."""
    home = tmp_path_factory.mktemp("toolrig-home")
    monkeypatch.setenv("TOOLRIG_HOME", str(home))
    yield home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def rig(workspace: Path) -> Rig:
    return Rig(workspace)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def llm_server() -> Iterator[FakeLLM]:
    """A local server speaking the Anthropic and OpenAI wire protocols (tests/agent/fake_llm.py)."""
    from tests.agent.fake_llm import FakeLLM

    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def llm(llm_server: FakeLLM) -> Iterator[FakeLLM]:
    """The shared fake provider with an empty script; a test that leaves replies unused fails."""
    llm_server.reset()
    yield llm_server
    left = llm_server.reset()
    assert not left, f"{len(left)} scripted replies were never requested"
