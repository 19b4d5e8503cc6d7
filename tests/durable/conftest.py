from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.durable import access_for, config, follow_prompt, install_rig, tools
from tests.support.fake_llm import FakeLLM
from toolrig.durable.access import DurableAccess
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.workers import runner


@pytest.fixture(scope="session")
def llm() -> Iterator[FakeLLM]:
    server = FakeLLM(responder=follow_prompt).start()
    yield server
    server.stop()


@pytest.fixture
def cfg(llm: FakeLLM) -> Iterator[dict[str, Any]]:
    settings = config(llm)
    install_rig(settings)
    yield settings
    runner.set_rig_factory(None)


@pytest.fixture(autouse=True)
def trusted(workspace: Path) -> None:
    """The person trusts these workspaces: an untrusted one runs none of its own database's work (test_trust.py)."""
    from toolrig.config import set_trust

    set_trust(workspace)


@pytest.fixture
def access(workspace: Path, cfg: dict[str, Any]) -> DurableAccess:
    return access_for(workspace, cfg)


@pytest.fixture
def durable_rig(workspace: Path, cfg: dict[str, Any]) -> Rig:
    return Rig(workspace, config=cfg, registry=Registry(tools()), durable_runner=runner.run_inline)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    import shutil
    import tempfile

    from tests.support.postgres import postgres_server

    # Not under pytest's tmp dir: as root that is private (0700), and the server runs as `postgres`.
    base = Path(tempfile.mkdtemp(prefix="toolrig-pg-"))
    try:
        with postgres_server(base) as server:
            yield server
    finally:
        shutil.rmtree(base, ignore_errors=True)
