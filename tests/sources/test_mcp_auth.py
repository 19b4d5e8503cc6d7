from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolrig.config import McpServerConfig
from toolrig.sources.mcp_auth import Interactive, loopback_callback
from toolrig.sources.mcp_transport import McpStartError, connect


async def _get(url: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.get(url)


def test_the_loopback_callback_takes_only_the_redirect_carrying_the_state_it_sent() -> None:
    async def main() -> None:
        async with loopback_callback() as callback:
            assert callback.redirect_uri.startswith("http://127.0.0.1:")
            opened: list[str] = []

            async def browser(url: str) -> None:
                opened.append(url)

            interactive = Interactive(browser, callback, 10)
            await interactive.redirect("https://as.example.com/authorize?state=s3cret&client_id=c")
            assert opened
            forged = await _get(f"{callback.redirect_uri}?code=evil&state=guess")
            assert forged.status_code == 400 and not callback.done.is_set()
            elsewhere = await _get(callback.redirect_uri.replace("/callback", "/other") + "?code=x&state=s3cret")
            assert elsewhere.status_code == 404
            real = await _get(f"{callback.redirect_uri}?code=the-code&state=s3cret&iss=https%3A%2F%2Fas")
            assert real.status_code == 200 and "Signed in" in real.text
            result = await interactive.wait()
            assert (result.code, result.state, result.iss) == ("the-code", "s3cret", "https://as")
            late = await _get(f"{callback.redirect_uri}?code=again&state=s3cret")
            assert late.status_code == 409

    anyio.run(main)


@settings(max_examples=40)
@given(request=st.binary(max_size=600))
def test_whatever_reaches_the_callback_port_never_ends_the_sign_in_without_its_state(request: bytes) -> None:
    async def main() -> None:
        async with loopback_callback() as callback:
            callback.expect("https://as/authorize?state=the-state")
            port = int(callback.redirect_uri.split(":")[2].split("/")[0])
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(request + b"\r\n\r\n")
                answer = b""
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    while True:
                        answer += await stream.receive()
            assert answer.startswith(b"HTTP/1.1 ")
            assert not callback.done.is_set() or b"state=the-state" in request

    anyio.run(main)


def test_a_refused_sign_in_is_reported_in_the_servers_words() -> None:
    from mcp.client.auth import OAuthFlowError

    async def main() -> None:
        async with loopback_callback() as callback:
            callback.expect("https://as/authorize?state=abc")
            await _get(f"{callback.redirect_uri}?error=access_denied&error_description=nope&state=abc")
            with pytest.raises(OAuthFlowError, match="access_denied: nope"):
                await callback.wait(5)

    anyio.run(main)


def test_a_sign_in_nobody_finishes_gives_up_with_the_address_it_waited_on() -> None:
    from mcp.client.auth import OAuthFlowError

    async def main() -> None:
        async with loopback_callback() as callback:
            with pytest.raises(OAuthFlowError, match="no sign-in arrived"):
                await callback.wait(0.05)

    anyio.run(main)


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"type": "client_credentials"}, "needs 'client_id'"),
        ({"type": "client_credentials", "client_id": "c"}, "one of 'client_secret_env' or 'private_key_file'"),
        ({"type": "identity_assertion", "client_id": "c"}, "identity_assertion needs"),
        ({"client_metadata_url": "http://insecure.example.com/c.json"}, "https://"),
        ({"callback_port": 70000}, "less than or equal"),
        ({"client_secret": "inline"}, "Extra inputs"),  # secrets are named by variable, never written in
    ],
)
def test_auth_config_says_what_is_missing(auth: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        McpServerConfig(url="https://mcp.example.com/mcp", auth=auth)


def test_auth_applies_only_to_remote_servers() -> None:
    with pytest.raises(ValidationError, match="'auth' applies to a remote server"):
        McpServerConfig(command="server", auth={})


def test_a_missing_client_secret_variable_is_named_when_the_server_starts(tmp_path: Path) -> None:
    config = McpServerConfig(
        url="http://127.0.0.1:9/mcp",
        startup_timeout_seconds=10,
        auth={"type": "client_credentials", "client_id": "c", "client_secret_env": "TOOLRIG_TEST_UNSET_SECRET"},
    )

    async def main() -> None:
        async with connect("svc", config, tmp_path / "log"):
            pass

    with pytest.raises(McpStartError, match="TOOLRIG_TEST_UNSET_SECRET"):
        anyio.run(main)


def test_mcp_login_names_a_server_without_auth_config(workspace: Path, toolrig_home: Path) -> None:
    from toolrig.cli import app

    (toolrig_home / "config.yaml").write_text("mcp_servers:\n  plain:\n    url: http://127.0.0.1:9/mcp\n")
    result = CliRunner().invoke(app, ["mcp", "login", "plain", "--root", str(workspace)])
    assert result.exit_code != 0
    assert "mcp_servers.plain.auth" in result.output
