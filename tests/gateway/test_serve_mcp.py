"""``toolrig serve --mcp --user ...`` as a process: MCP and the gateway on one port, behind one guard."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
import yaml

from tests.adapters.test_mcp_http import INIT, MCP_HEADERS, client
from tests.agent.conftest import agent_config
from tests.support.fake_llm import FakeLLM

pytestmark = [pytest.mark.slow]
OPERATOR, ALICE = "operator-token-" + "o" * 24, "alice-token-" + "a" * 24


def test_serve_with_mcp_serves_both_on_one_port_to_the_operators_token(
    workspace: Path, tmp_path: Path, llm: FakeLLM
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump(agent_config(llm, "anthropic")))
    env = {**os.environ, "TOOLRIG_HOME": str(home), "TOOLRIG_GATEWAY_TOKEN": OPERATOR}
    env["TOOLRIG_GATEWAY_TOKEN_ALICE"] = ALICE
    command = [sys.executable, "-m", "toolrig", "serve", "--root", str(workspace), "--port", "0", "--mcp"]
    process = subprocess.Popen(
        [*command, "--user", "alice"], env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert "gateway listening on" in first, first + process.stderr.read()
        base = first.rsplit(" ", 1)[1].strip()
        lines = [process.stderr.readline() for _ in range(5)]
        assert f"MCP (streamable HTTP) at {base}/mcp" in lines[0]
        assert any("user alice" in line and f"login?token={ALICE}" in line for line in lines)

        async def use_mcp() -> None:
            async with client(f"{base}/mcp", headers={"authorization": f"Bearer {OPERATOR}"}) as connected:
                assert "calculate" in [t.name for t in (await connected.list_tools()).tools]
                result = await connected.call_tool("calculate", {"expression": "6 * 7"})
                assert result.structured_content == {"result": 42}

        anyio.run(use_mcp)
        url = f"{base}/mcp"
        as_alice = httpx2.post(url, json=INIT, headers={**MCP_HEADERS, "authorization": f"Bearer {ALICE}"}, timeout=20)
        assert as_alice.status_code == 403  # MCP runs tools outside any user's sessions: the operator's only
        nobody = httpx2.post(url, json=INIT, headers=MCP_HEADERS, timeout=20)
        assert nobody.status_code == 401
        foreign = httpx2.post(url, json=INIT, headers={**MCP_HEADERS, "origin": "https://evil.example"}, timeout=20)
        assert foreign.status_code == 403
        api = httpx2.get(f"{base}/api/sessions", headers={"authorization": f"Bearer {ALICE}"}, timeout=20)
        assert api.status_code == 200  # the gateway's own API on the same port
    finally:
        process.terminate()
        process.wait(30)
        if process.stderr is not None:
            process.stderr.close()
