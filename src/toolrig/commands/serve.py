"""``toolrig serve``: the gateway (HTTP API, live event streams, the web page) for this workspace, one process."""

from __future__ import annotations

import contextlib
import logging
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolrig.cli import root_option

if TYPE_CHECKING:
    from toolrig.gateway.channels import Channel
    from toolrig.rig import Rig


def channels_for(rig: Rig) -> list[Channel]:
    """The chat channels this config turns on, started and stopped with the server (see ``gateway.channels``).

    A channel adds itself here: build it from ``rig.config`` when configured, import its code only then.
    """
    return []


@click.command()
@root_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--port", type=int, default=8780, show_default=True, help="Port (0 picks a free one).")
@click.option("--agent", help="The agent profile (agents: in config) runs use unless a request names another.")
@click.option(
    "--token-env",
    default="TOOLRIG_GATEWAY_TOKEN",
    show_default=True,
    help="Environment variable holding the token; unset, toolrig keeps its own (0600 in "
    "~/.toolrig/tokens/gateway.token, printed at start).",
)
@click.option("--rotate-token", is_flag=True, help="Replace the kept token with a new one before serving.")
@click.option(
    "--no-token",
    is_flag=True,
    help="Loopback only: no token. Any program of any user on this machine can then run agents as you.",
)
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
    allow_host: tuple[str, ...],
    allow_origin: tuple[str, ...],
) -> None:
    """Serve agents over HTTP with a web page for people: runs, live events, approvals, sessions, audit."""
    import anyio

    from toolrig import __version__
    from toolrig.adapters.http_auth import TokenError, choose_token, is_loopback
    from toolrig.adapters.mcp_http import bind
    from toolrig.cli import _fail as fail
    from toolrig.cli import make_rig
    from toolrig.errors import ToolError
    from toolrig.gateway.server import login_url, serve

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="toolrig: %(levelname)s: %(message)s")
    if no_token and not is_loopback(host):
        fail(f"refusing to serve on {host}, beyond loopback, without a token: drop --no-token")
    try:
        choice = choose_token("gateway", env_var=token_env, no_token=no_token, rotate=rotate_token)
    except (TokenError, ToolError) as exc:
        fail(f"{exc}")
    rig = make_rig(rig_root, agent=agent)  # approvals come from the page, per run: no terminal channel here
    try:
        sock = bind(host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")

    def ready(base: str) -> None:
        click.echo(f"toolrig: gateway listening on {base}", err=True)  # first: scripts read the URL from it
        if choice.value is None:
            click.echo("toolrig: WARNING: --no-token: any program of any user on this machine can run agents as you.",
                       err=True)  # fmt: skip
            return
        where = f"from {token_env}" if choice.source == "env" else f"kept in {choice.stored and choice.stored.path}"
        click.echo(f"toolrig: API clients send the token {where}: Authorization: Bearer <token>", err=True)
        click.echo(f"toolrig: open the page (once; it sets a cookie): {login_url(base, choice.value)}", err=True)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(
            partial(
                serve,
                rig,
                sock,
                token=choice.value,
                extra_hosts=allow_host,
                extra_origins=allow_origin,
                ready=ready,
                version=__version__,
                channels=channels_for(rig),
            )
        )
