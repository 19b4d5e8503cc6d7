from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.servers import HttpServer
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
def rig(workspace: Path) -> Rig:
    return Rig(workspace)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def http_server() -> Iterator[HttpServer]:
    """One real HTTP server on 127.0.0.1 for the session; tests add routes under their own paths."""
    server = HttpServer().start()
    yield server
    server.stop()


def static_resolver(table: dict[str, list[str]]) -> Callable[[str], list[str]]:
    """A stand-in for DNS: answers from the table, fails like DNS for anything else."""

    def resolve(host: str) -> list[str]:
        if host not in table:
            raise LookupError(f"cannot resolve '{host}': not in the test's table")
        return list(table[host])

    return resolve
