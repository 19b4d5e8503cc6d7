"""Hostile clients of `toolrig mcp serve --transport http`: no token, a wrong one, DNS rebinding, foreign origins."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.test_mcp_http import TOKEN, client, http_server, post, serving
from tests.support.mcp_peers import toolrig_command

pytestmark = pytest.mark.anyio


def start_up_lines(process: Any) -> list[str]:
    """The lines after "listening on", up to the last one the server prints before serving."""
    last = ("toolrig: or: claude mcp add", "toolrig: WARNING", "toolrig: clients must send the token from")
    lines: list[str] = []
    while not lines or not lines[-1].startswith(last):
        line = process.stderr.readline()
        assert line, f"the server ended its start-up lines early: {lines}"
        lines.append(line.rstrip("\n"))
    return lines


def refused_as_json_rpc(response: Any, status: int) -> None:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["message"]


async def test_by_default_the_server_keeps_a_token_of_its_own_and_refuses_requests_without_it(
    workspace: Path, toolrig_home: Path
) -> None:
    with serving(workspace, toolrig_home, token=None) as (url, process):
        lines = start_up_lines(process)
        kept = toolrig_home / "tokens" / "mcp.token"
        token = kept.read_text().strip()
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
        assert len(token) >= 40
        no_token = post(url, auth={})
        refused_as_json_rpc(no_token, 401)
        assert no_token.headers["www-authenticate"].startswith("Bearer")
        refused_as_json_rpc(post(url, auth={"authorization": "Bearer " + token[:-1]}), 401)
        refused_as_json_rpc(post(url, auth={"authorization": token}), 401)  # the scheme is part of it
        assert post(url, auth={"authorization": f"bearer {token}"}).status_code == 200  # schemes ignore case
        # The printed client config is JSON to paste as it stands: the official client connects with its header.
        start = lines.index("{")
        end = next(i for i, line in enumerate(lines) if line == "}")
        config = json.loads("\n".join(lines[start : end + 1]))["mcpServers"]["toolrig"]
        assert config == {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
        async with client(url, headers=config["headers"]) as connected:
            result = await connected.call_tool("calculate", {"expression": "6 * 7"})
            assert result.structured_content == {"result": 42}
    assert any(str(kept) in line and "a new token" in line for line in lines)


def test_the_kept_token_is_reused_across_restarts_until_rotated(workspace: Path, toolrig_home: Path) -> None:
    with serving(workspace, toolrig_home, token=None) as (url, process):
        first = (toolrig_home / "tokens" / "mcp.token").read_text().strip()
        assert post(url, auth={"authorization": f"Bearer {first}"}).status_code == 200
    with serving(workspace, toolrig_home, token=None) as (url, process):
        assert any("the token kept in" in line for line in start_up_lines(process))
        assert (toolrig_home / "tokens" / "mcp.token").read_text().strip() == first
        assert post(url, auth={"authorization": f"Bearer {first}"}).status_code == 200
    with serving(workspace, toolrig_home, "--rotate-token", token=None) as (url, process):
        rotated = (toolrig_home / "tokens" / "mcp.token").read_text().strip()
        assert rotated != first
        assert post(url, auth={"authorization": f"Bearer {first}"}).status_code == 401
        assert post(url, auth={"authorization": f"Bearer {rotated}"}).status_code == 200


async def test_a_token_given_in_the_environment_is_the_one_required(workspace: Path, toolrig_home: Path) -> None:
    with serving(workspace, toolrig_home) as (url, process):
        lines = start_up_lines(process)
        assert "TOOLRIG_MCP_TOKEN" in lines[-1] and TOKEN not in "\n".join(lines)  # the script knows it already
        refused_as_json_rpc(post(url, auth={}), 401)
        refused_as_json_rpc(post(url, auth={"authorization": "Bearer wrong-token-0123456789"}), 401)
        async with client(url) as connected:
            result = await connected.call_tool("calculate", {"expression": "1 + 1"})
            assert result.structured_content == {"result": 2}
    assert not (toolrig_home / "tokens").exists()  # nothing kept: the script owns its token


def test_no_token_serves_anyone_on_purpose_and_says_so_loudly(workspace: Path, toolrig_home: Path) -> None:
    with serving(workspace, toolrig_home, "--no-token", token=None) as (url, process):
        warning = start_up_lines(process)[-1]
        assert warning.startswith("toolrig: WARNING: --no-token") and "run commands" in warning
        assert post(url, auth={}).status_code == 200
        refused_as_json_rpc(post(url, {"host": "attacker.example"}, auth={}), 421)  # Host is checked all the same
    assert not (toolrig_home / "tokens").exists()


def run_serve(
    workspace: Path, *extra: str, env_token: str | None = None, **more_env: str
) -> subprocess.CompletedProcess[str]:
    """A start that must fail before it binds anything."""
    env = {**{k: v for k, v in os.environ.items() if k != "TOOLRIG_MCP_TOKEN"}, **more_env}
    if env_token is not None:
        env["TOOLRIG_MCP_TOKEN"] = env_token
    args = [toolrig_command(), "mcp", "serve", "--transport", "http", "--port", "0", "--root", str(workspace), *extra]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    ("extra", "env_token", "says"),
    [
        (("--host", "0.0.0.0", "--no-token"), None, "without a bearer token"),  # noqa: S104 - refused before binding
        (("--host", "::", "--no-token"), None, "without a bearer token"),
        (("--no-token",), TOKEN, "--no-token was given while TOOLRIG_MCP_TOKEN holds a token"),
        (("--rotate-token",), TOKEN, "change it there"),
        ((), "short", "at least 16 characters"),
        ((), "a token with spaces in it", "without spaces"),
    ],
)
def test_a_start_that_would_weaken_the_token_is_refused_before_binding(
    extra: tuple[str, ...], env_token: str | None, says: str, workspace: Path, toolrig_home: Path
) -> None:
    done = run_serve(workspace, *extra, env_token=env_token)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "listening" not in done.stderr


def test_a_request_naming_another_host_is_refused_dns_rebinding(workspace: Path, toolrig_home: Path) -> None:
    with http_server(workspace, toolrig_home) as url:
        port = url.split(":")[2].split("/")[0]
        # The request really goes to 127.0.0.1; only the Host header claims another name, as after a rebinding.
        refused_as_json_rpc(post(url, {"host": f"attacker.example:{port}"}), 421)
        assert post(url, {"host": f"localhost:{port}"}).status_code == 200
        assert post(url).status_code == 200


def test_a_request_from_a_foreign_origin_is_refused(workspace: Path, toolrig_home: Path) -> None:
    with http_server(workspace, toolrig_home) as url:
        port = url.split(":")[2].split("/")[0]
        refused_as_json_rpc(post(url, {"origin": "https://attacker.example"}), 403)
        assert post(url, {"origin": f"http://localhost:{port}"}).status_code == 200


@pytest.mark.parametrize("spoil", ["a file where the tokens directory goes", "a home that cannot be made"])
def test_a_token_that_cannot_be_kept_stops_the_start_with_a_message_not_a_traceback(
    spoil: str, workspace: Path, toolrig_home: Path
) -> None:
    if spoil.startswith("a file"):
        (toolrig_home / "tokens").write_text("not a directory")
        home = toolrig_home
    else:
        home = Path("/proc/self/no-such-dir/home")  # mkdir fails there, even for root
    done = run_serve(workspace, TOOLRIG_HOME=str(home))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "listening" not in done.stderr
    assert "tokens" in done.stderr
