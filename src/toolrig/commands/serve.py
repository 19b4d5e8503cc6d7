"""``toolrig serve``: the gateway (HTTP API, live event streams, the web page) for this workspace, one process."""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolrig.cli import root_option

if TYPE_CHECKING:
    from toolrig.adapters.http_auth import TokenChoice
    from toolrig.gateway.channels import Channel
    from toolrig.rig import Rig

USER_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def channels_for(rig: Rig) -> list[Channel]:
    """The chat channels this config turns on, started and stopped with the server (see ``gateway.channels``).

    A channel adds itself here: build it from ``rig.config`` when configured, import its code only then.
    """
    from toolrig.channels import configured

    return configured(rig)


def user_env(name: str) -> str:
    return f"TOOLRIG_GATEWAY_TOKEN_{name.upper().replace('-', '_')}"


def _tokens(
    token_env: str, users: tuple[str, ...], *, no_token: bool, rotate: bool
) -> tuple[TokenChoice, dict[str, TokenChoice]]:
    """The operator's token and each user's (from ``TOOLRIG_GATEWAY_TOKEN_<NAME>``, else kept 0600 per user)."""
    from toolrig.adapters.http_auth import TokenError, choose_token
    from toolrig.cli import _fail as fail
    from toolrig.errors import ToolError

    for name in users:
        if USER_NAME.fullmatch(name) is None:
            fail(f"--user {name!r}: a user name is lower-case letters, digits, '-' and '_' (at most 32)")
    if users and no_token:
        fail("--user needs tokens: drop --no-token")
    try:
        operator = choose_token("gateway", env_var=token_env, no_token=no_token, rotate=rotate)
        each = {n: choose_token(f"gateway-{n}", env_var=user_env(n), rotate=rotate) for n in dict.fromkeys(users)}
    except (TokenError, ToolError) as exc:
        fail(f"{exc}")
    if len({c.value for c in [operator, *each.values()]}) != len(each) + 1:
        fail("two users (or a user and the operator) have the same token: give each its own")
    return operator, each


def _say_tokens(base: str, token_env: str, operator: TokenChoice, users: dict[str, TokenChoice]) -> None:
    from toolrig.gateway.server import login_url

    if operator.value is None:
        click.echo("toolrig: WARNING: --no-token: any program of any user on this machine can run agents as you.",
                   err=True)  # fmt: skip
        return
    for who, choice, env in [("the operator", operator, token_env), *((f"user {n}", c, user_env(n))
                             for n, c in users.items())]:  # fmt: skip
        where = f"from {env}" if choice.source == "env" else f"kept in {choice.stored and choice.stored.path}"
        click.echo(f"toolrig: {who}: API clients send the token {where}: Authorization: Bearer <token>", err=True)
        click.echo(f"toolrig: {who}: open the page (once; it sets a cookie): {login_url(base, choice.value)}", err=True)


@click.command()
@root_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--port", type=int, default=8780, show_default=True, help="Port (0 picks a free one).")
@click.option("--agent", help="The agent profile (agents: in config) runs use unless a request names another.")
@click.option(
    "--token-env",
    default="TOOLRIG_GATEWAY_TOKEN",
    show_default=True,
    help="Environment variable holding the operator's token; unset, toolrig keeps its own (0600 in "
    "~/.toolrig/tokens/gateway.token, printed at start).",
)
@click.option("--rotate-token", is_flag=True, help="Replace the kept tokens with new ones before serving.")
@click.option(
    "--no-token",
    is_flag=True,
    help="Loopback only: no token. Any program of any user on this machine can then run agents as you.",
)
@click.option(
    "--user",
    "users",
    multiple=True,
    help="Another person with a token of their own (TOOLRIG_GATEWAY_TOKEN_<NAME>, else kept in "
    "~/.toolrig/tokens/gateway-<name>.token); each sees and steers only their own runs and sessions.",
)
@click.option("--shared", is_flag=True, help="With --user: every user sees and steers every run and session.")
@click.option("--mcp", is_flag=True, help="Serve MCP (streamable HTTP) at /mcp on the same port, operator's token.")
@click.option(
    "--allow-host", multiple=True, help="Another Host header value to accept (name:port), e.g. behind a proxy."
)
@click.option("--allow-origin", multiple=True, help="Another browser Origin to accept.")
def command(
    rig_root: Path,
    host: str,
    port: int,
    agent: str | None,
    token_env: str,
    rotate_token: bool,
    no_token: bool,
    users: tuple[str, ...],
    shared: bool,
    mcp: bool,
    allow_host: tuple[str, ...],
    allow_origin: tuple[str, ...],
) -> None:
    """Serve agents over HTTP with a web page for people: runs, live events, approvals, sessions, audit."""
    import anyio

    from toolrig import __version__
    from toolrig.adapters.http_auth import is_loopback
    from toolrig.adapters.mcp_http import MCP_PATH, bind
    from toolrig.cli import _fail as fail
    from toolrig.cli import make_rig
    from toolrig.errors import ConfigError
    from toolrig.gateway.server import serve

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="toolrig: %(levelname)s: %(message)s")
    if no_token and not is_loopback(host):
        fail(f"refusing to serve on {host}, beyond loopback, without a token: drop --no-token")
    operator, each = _tokens(token_env, users, no_token=no_token, rotate=rotate_token)
    rig = make_rig(rig_root, agent=agent)  # approvals come from the page, per run: no terminal channel here
    tool_server = None
    if mcp:
        from toolrig.adapters.mcp_server import McpToolServer

        tool_server = McpToolServer(rig)  # its calls ask their MCP client (elicitation), as `mcp serve --http`
    try:
        sock = bind(host, port)
        channels = channels_for(rig)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    except ConfigError as exc:
        fail(f"{exc}")

    def ready(base: str) -> None:
        click.echo(f"toolrig: gateway listening on {base}", err=True)  # first: scripts read the URL from it
        if tool_server is not None:
            click.echo(f"toolrig: MCP (streamable HTTP) at {base}{MCP_PATH}, with the operator's token", err=True)
        _say_tokens(base, token_env, operator, each)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(
            partial(
                serve,
                rig,
                sock,
                token=operator.value,
                extra_hosts=allow_host,
                extra_origins=allow_origin,
                ready=ready,
                version=__version__,
                channels=channels,
                users={name: str(choice.value) for name, choice in each.items()},
                shared=shared,
                mcp=tool_server,
            )
        )
