from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolrig.rig import Rig


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
def rig(workspace: Path) -> Iterator[Rig]:
    with Rig(workspace) as opened:
        yield opened


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# Real servers (redis-server, BaseX) shared by the whole session; see tests/servers.py.
from tests.servers import basex_server, kv, librarian, redis_server  # noqa: E402, F401
