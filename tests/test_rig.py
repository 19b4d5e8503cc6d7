from __future__ import annotations

from pathlib import Path

import pytest

from toolrig.rig import Rig

pytestmark = pytest.mark.anyio


async def test_a_rig_without_mcp_servers_opens_and_closes_as_a_no_op(workspace: Path) -> None:
    rig = Rig(workspace)
    assert rig.mcp_servers is None
    async with rig as opened:
        assert opened is rig
        assert (await rig.call("calculate", {"expression": "1 + 1"})).output == {"result": 2}
    await rig.aclose()  # closing twice is harmless


async def test_configured_mcp_servers_are_registered_but_not_started_by_construction(workspace: Path) -> None:
    # A command that cannot run would fail the moment anything started it.
    rig = Rig(workspace, config={"mcp_servers": {"later": {"command": "/nonexistent/server"}}})
    assert rig.mcp_servers is not None
    assert list(rig.mcp_servers.servers) == ["later"]
