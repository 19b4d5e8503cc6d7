"""``toolrig mcp``: serve every tool to MCP clients, and manage the MCP servers whose tools toolrig uses."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolrig.cli import root_option

if TYPE_CHECKING:
    from toolrig.adapters.http_auth import TokenChoice
    from toolrig.approvals.mcp import Fallback
    from toolrig.config import Config, McpServerConfig

_root = root_option()


@click.group()
def command() -> None:
    """Serve toolrig's tools over MCP; review the MCP servers whose tools toolrig uses."""


_MODES = {
    "off": "every tool runs without asking, writes and commands included; "
    "`approvals: {mode: smart}` in the config makes them ask through the client",
    "smart": "read-only tools run; every write and command asks through the client",
    "always": "every call asks through the client",
}


def approval_line(mode: str, fallback: str) -> str:
    """The one start-up line naming the approval mode in force: an MCP client may be anyone's."""
    asks = f" (a client that cannot ask: {fallback})" if mode != "off" else ""
    return f"toolrig: approvals: {mode}: {_MODES[mode]}{asks}"


def token_lines(choice: TokenChoice, url: str, env_var: str) -> list[str]:
    """What a user needs to connect a client: the token's source and a client config to paste, or the warning."""
    from toolrig.adapters.http_auth import client_config

    if choice.value is None:
        return [
            "toolrig: WARNING: --no-token: any program of any user on this machine can connect and call every tool "
            "as you (write files, run commands). Drop --no-token to require the token."
        ]
    if choice.stored is None:
        return [f"toolrig: clients must send the token from {env_var}: Authorization: Bearer <token>"]
    stored = choice.stored
    kept = "a new token, kept" if stored.created else "the token kept"
    lines = [f"toolrig: {stored.notice}"] if stored.notice else []
    config = json.dumps(client_config(url, choice.value), indent=2)
    return [
        *lines,
        f"toolrig: clients must send {kept} in {stored.path} (--rotate-token replaces it). "
        "A client config to paste (Claude Code's .mcp.json, Cursor's mcp.json):",
        config,
        f'toolrig: or: claude mcp add --transport http toolrig {url} --header "Authorization: Bearer {choice.value}"',
    ]


@command.command("serve")
@_root
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to listen on.")
@click.option("--port", type=int, default=8765, show_default=True, help="HTTP: port (0 picks a free one).")
@click.option("--agent", default=None, help="Serve the tools this agent may use, as this agent.")
@click.option(
    "--profile",
    default=None,
    help="Serve the tools under a profile's names and shapes: toolrig, claude, codebuff, native, camelagi.",
)
@click.option(
    "--approval-fallback",
    type=click.Choice(["deny", "allow"]),
    default="deny",
    show_default=True,
    help="The answer to an approval when the client cannot ask its user (no elicitation).",
)
@click.option("--approval-timeout", type=float, default=300.0, show_default=True, help="Seconds to wait for an answer.")
@click.option(
    "--token-env",
    default="TOOLRIG_MCP_TOKEN",
    show_default=True,
    help="HTTP: environment variable holding the bearer token clients must send; unset, toolrig keeps its own "
    "(made once, 0600 in ~/.toolrig/tokens/mcp.token, printed at start).",
)
@click.option("--rotate-token", is_flag=True, help="HTTP: replace the kept token with a new one before serving.")
@click.option(
    "--no-token",
    is_flag=True,
    help="HTTP, loopback only: accept clients without a token. Any program of any user on this machine can then "
    "run tools as you.",
)
@click.option("--allow-host", multiple=True, help="HTTP: another Host header value to accept (name:port).")
@click.option("--allow-origin", multiple=True, help="HTTP: another browser Origin to accept.")
@click.option(
    "--sse-poll-after",
    type=click.FloatRange(min=0),
    default=None,
    help="HTTP: close a call's SSE stream after this many seconds; the client resumes it (Last-Event-ID).",
)
@click.option(
    "--max-message-bytes",
    type=click.IntRange(min=1024),
    default=None,
    help="The longest message (stdio line or HTTP body) a client may send; a longer one is refused unread. "
    "[default: 4194304, the TypeScript SDK's 4 MB]",
)
def serve(
    rig_root: Path,
    transport: str,
    host: str,
    port: int,
    agent: str | None,
    profile: str | None,
    approval_fallback: str | None,
    approval_timeout: float | None,
    token_env: str,
    rotate_token: bool,
    no_token: bool,
    allow_host: tuple[str, ...],
    allow_origin: tuple[str, ...],
    sse_poll_after: float | None,
    max_message_bytes: int | None,
) -> None:
    """Serve every tool this workspace offers to an MCP client (stdio by default, or streamable HTTP)."""
    import anyio

    from toolrig.adapters.mcp_server import McpToolServer
    from toolrig.cli import _fail as fail
    from toolrig.cli import make_rig

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="toolrig: %(levelname)s: %(message)s")
    rig = make_rig(rig_root, agent=agent, profile=profile)
    fallback: Fallback | None = "allow" if approval_fallback == "allow" else "deny" if approval_fallback else None
    server = McpToolServer(rig, approval_fallback=fallback, approval_timeout=approval_timeout)
    approvals = approval_line(rig.governance.policy.mode(agent), fallback or "deny")
    if transport == "stdio":
        click.echo(approvals, err=True)
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(partial(server.serve_stdio, max_message_bytes=max_message_bytes))
        return

    from toolrig.adapters.http_auth import TokenError, choose_token, is_loopback, token_file
    from toolrig.adapters.mcp_http import bind, serve_http
    from toolrig.errors import ToolError

    if no_token and not is_loopback(host):
        fail(f"refusing to serve MCP on {host}, beyond loopback, without a bearer token: drop --no-token")
    try:
        choice = choose_token("mcp", env_var=token_env, no_token=no_token, rotate=rotate_token)
    except (TokenError, ToolError) as exc:
        fail(f"{exc}")
    except OSError as exc:  # an unwritable toolrig home
        fail(f"cannot keep the bearer token in {token_file('mcp')}: {exc.strerror or exc}; set {token_env} instead")
    try:
        sock = bind(host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")

    def ready(url: str) -> None:
        click.echo(f"toolrig: MCP server listening on {url}", err=True)  # first: scripts read the URL from it
        click.echo(approvals, err=True)
        for line in token_lines(choice, url, token_env):
            click.echo(line, err=True)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(
            partial(
                serve_http,
                server,
                sock,
                token=choice.value,
                extra_hosts=allow_host,
                extra_origins=allow_origin,
                ready=ready,
                poll_after=sse_poll_after,
                max_message_bytes=max_message_bytes,
            )
        )


@command.command("trust")
@click.argument("name")
@_root
@click.option("--yes", is_flag=True, help="Accept without asking (for scripts): the changes are still printed.")
def trust(name: str, rig_root: Path, yes: bool) -> None:
    """Review and accept the current tool definitions of the MCP server NAME.

    Definitions (name, description, schemas, annotations) are trusted on first use; when a server changes
    one later, calls to that tool are blocked until this command shows the change as a diff and you accept it.
    """
    import anyio

    from toolrig.cli import _fail as fail
    from toolrig.sources.mcp_client import McpServer
    from toolrig.sources.mcp_review import review, visible
    from toolrig.sources.mcp_transport import McpStartError

    server = McpServer(name, _server_config(name, rig_root), log_dir=rig_root / ".toolrig" / "logs")
    try:
        listing = anyio.run(server.list_once)
    except McpStartError as exc:
        fail(str(exc))
    trusted = server.store.trusted(name, server.config)
    if trusted is None:  # never seen (or a new command or URL): trusted on first use, as a first listing is
        for tool in listing:
            click.echo(f"  + {visible(tool['name'])}")
        server.store.accept(name, server.config, listing)
        click.echo(f"Trusted the {len(listing)} tools of the MCP server '{name}'.")
        return
    diff = server.store.diff(name, server.config, listing)
    if not diff:
        click.echo(f"Nothing changed: the {len(listing)} tools of '{name}' were trusted already.")
        return
    click.echo(f"The MCP server '{name}' changed its tools since you trusted them:\n")
    click.echo(review(diff, trusted, listing) + "\n")
    if not yes:
        _confirm_or_stop(name)
    server.store.accept(name, server.config, listing)
    click.echo(f"Accepted the changes; the {len(listing)} tools of '{name}' are trusted as they are now.")


def _confirm_or_stop(name: str) -> None:
    """Ask on a terminal; refuse without one: a piped 'y' (or a script) must say --yes on purpose."""
    from toolrig.cli import report_error

    keep = "nothing was accepted; calls to the changed tools stay blocked"
    if not sys.stdin.isatty():
        report_error(
            f"stdin is not a terminal, so no one can confirm: {keep}. Read the changes above, then run "
            f"`toolrig mcp trust {name} --yes` to accept them."
        )
        sys.exit(1)
    if not click.confirm("Accept these definitions?", default=False):
        report_error(f"Not accepted: {keep}.")
        sys.exit(1)


@command.command("login")
@click.argument("name")
@_root
@click.option("--no-browser", is_flag=True, help="Only print the sign-in URL (for a machine without a browser).")
@click.option("--timeout", "wait_seconds", type=float, default=300.0, show_default=True, help="Seconds to wait.")
def login(name: str, rig_root: Path, no_browser: bool, wait_seconds: float) -> None:
    """Sign in to the remote MCP server NAME (its `auth:` config) and keep the tokens for later runs.

    The browser flow prints the sign-in URL (and opens it unless --no-browser), then waits for the
    redirect on a 127.0.0.1 port. Client credentials are simply tried. Tokens go to the OS keyring when
    one is available, else to a 0600 file in ~/.toolrig/mcp-auth/.
    """
    import anyio

    from toolrig.cli import _fail as fail
    from toolrig.sources.mcp_auth import AuthConfigError
    from toolrig.sources.mcp_login import login as sign_in
    from toolrig.sources.mcp_tokens import McpTokenStore
    from toolrig.sources.mcp_transport import McpStartError

    config = _server_config(name, rig_root)
    if config.auth is None:
        fail(f"the MCP server {name!r} has no 'auth:' in its config (mcp_servers.{name}.auth): nothing to sign in to")
    store = McpTokenStore(name, config)

    async def open_url(url: str) -> None:
        click.echo(f"Sign in to the MCP server '{name}' at:\n\n  {url}\n", err=True)
        if not no_browser:
            import webbrowser

            with contextlib.suppress(Exception):  # no browser here: the printed URL is the way
                await anyio.to_thread.run_sync(webbrowser.open, url)
        click.echo("Waiting for the sign-in to finish...", err=True)

    log_path = rig_root / ".toolrig" / "logs" / f"mcp-{name}.log"
    try:
        listing = anyio.run(
            partial(sign_in, name, config, open_url=open_url, log_path=log_path, store=store, wait_seconds=wait_seconds)
        )
    except (McpStartError, AuthConfigError) as exc:
        fail(str(exc))
    except OSError as exc:  # the configured callback port is taken
        fail(f"cannot listen for the sign-in redirect on 127.0.0.1: {exc.strerror or exc}")
    click.echo(f"Signed in to '{name}': {len(listing)} tools; tokens kept in {store.where}.")


@command.command("list")
@_root
def list_servers(rig_root: Path) -> None:
    """List the configured MCP servers, how many of their tools are trusted and their sign-in state.

    Starts nothing and calls no server: the sign-in state is what the token store holds (signed in, token
    expired, not signed in), or "no auth" for a server without an ``auth:`` block.
    """
    from toolrig.sources.mcp_trust import TrustStore

    servers = _load_config(rig_root).mcp_servers
    store = TrustStore()
    hints: list[str] = []
    for name, config in sorted(servers.items()):
        where = config.url or " ".join([config.command or "", *config.args])
        trusted = store.trusted(name, config)
        status = "never listed" if trusted is None else f"{len(trusted)} tools trusted"
        signed, hint = _sign_in(name, config)
        click.echo(f"{name:<20} {status:<18} {signed:<14} {where}")
        if hint:
            hints.append(f"  {name}: {hint}")
    if not servers:
        click.echo("No MCP servers are configured (mcp_servers: in ~/.toolrig/config.yaml).")
    for hint in hints:
        click.echo(hint)


def _sign_in(name: str, config: McpServerConfig) -> tuple[str, str | None]:
    """The server's sign-in state from its stored tokens, and what to do about it (if anything)."""
    if config.auth is None:
        return "no auth", None
    from toolrig.sources.mcp_tokens import McpTokenStore

    tokens = McpTokenStore(name, config)
    try:
        state = tokens.sign_in_state()
        refreshable = tokens.can_refresh()
    except Exception as exc:  # a locked keyring or a tampered token file must not break the listing
        reason = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return "unknown", f"the token store ({tokens.where}) cannot be read: {reason}"
    login = f"run 'toolrig mcp login {name}' to sign in"
    if state == "token expired":
        return state, "renewed with its refresh token on next use" if refreshable else login
    if state == "not signed in":
        if config.auth.type == "oauth":
            return state, login
        return state, f"signs in by itself on first use ({config.auth.type})"
    return state, None


def _load_config(root: Path) -> Config:
    from toolrig.cli import _fail as fail
    from toolrig.config import load_config
    from toolrig.errors import ConfigError

    try:
        loaded = load_config(root)
    except ConfigError as exc:
        fail(str(exc))
    for warning in loaded.warnings:
        click.echo(f"toolrig: warning: {warning}", err=True)
    return loaded.config


def _server_config(name: str, root: Path) -> McpServerConfig:
    from toolrig.cli import _fail as fail

    servers = _load_config(root).mcp_servers
    config = servers.get(name)
    if config is None:
        known = ", ".join(sorted(servers)) or "none"
        fail(f"no MCP server named {name!r} is configured (configured: {known})")
    return config
