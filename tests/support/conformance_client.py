"""The client the MCP conformance suite launches: ``python -m tests.support.conformance_client URL``.

The suite starts a scenario's servers, then runs this with the MCP server URL as the last argument,
``MCP_CONFORMANCE_SCENARIO`` naming the scenario and ``MCP_CONFORMANCE_CONTEXT`` holding its data
(client credentials, keys). It turns that into an ``mcp_servers:`` entry as a user would write it and
does what a user does: ``toolrig mcp login`` (toolrig's own login, its loopback callback included), then
a run that lists the tools and calls one with the stored tokens; a run told to sign in again (a scope
step-up) is followed by another login and run, as the message tells the user. The only stand-in is the
browser: it fetches the authorization URL and takes its redirect to toolrig's callback, as a user's would.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from toolrig.config import McpServerConfig
from toolrig.context import ToolContext
from toolrig.errors import ErrorType, ToolError
from toolrig.sources.mcp_auth import LoginRequired
from toolrig.sources.mcp_client import McpServer
from toolrig.sources.mcp_login import login
from toolrig.sources.mcp_transport import McpStartError

NAME = "conformance"
CIMD_URL = "https://conformance-test.local/client-metadata.json"  # the suite's auth servers accept this one
MAX_LOGINS = 3


async def browser(url: str) -> None:
    """A user's browser on an auth server that approves at once: follow its redirect to the callback."""
    import httpx2

    async with httpx2.AsyncClient(timeout=20, follow_redirects=False) as http:
        answer = await http.get(url)
        location = answer.headers.get("location")
        if not location:
            raise RuntimeError(f"the authorization endpoint answered {answer.status_code} without a redirect")
        await http.get(location)


def _discover_issuer(url: str) -> str:
    import httpx2

    base = url.split("/mcp")[0]
    with httpx2.Client(timeout=20) as http:
        prm = http.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
    return str(prm["authorization_servers"][0])


def server_config(url: str, scenario: str, context: dict[str, Any], scratch: Path) -> McpServerConfig:
    """The ``mcp_servers:`` entry a user would write for this scenario (secrets by variable or key file)."""
    config: dict[str, Any] = {"url": url, "startup_timeout_seconds": 20}
    if not scenario.startswith("auth/"):
        return McpServerConfig.model_validate(config)
    auth: dict[str, Any] = {"store": "file"}
    if "client_secret" in context:
        os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        auth["client_secret_env"] = "CONFORMANCE_CLIENT_SECRET"
    if scenario in ("auth/client-credentials-basic", "auth/client-credentials-jwt"):
        auth.update(type="client_credentials", client_id=context["client_id"])
        if "private_key_pem" in context:
            key = scratch / "client-key.pem"
            key.write_text(context["private_key_pem"], encoding="utf-8")
            auth.update(private_key_file=str(key), signing_algorithm=context.get("signing_algorithm") or "ES256")
    elif scenario == "auth/cross-app-access-complete-flow":
        os.environ["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        auth.update(
            type="identity_assertion",
            client_id=context["client_id"],
            issuer=_discover_issuer(url),
            idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context["idp_client_id"],
            id_token_env="CONFORMANCE_ID_TOKEN",
        )
    elif "client_id" in context:
        auth.update(client_id=context["client_id"])  # pre-registered
    else:
        auth.update(client_metadata_url=CIMD_URL)
    config["auth"] = auth
    return McpServerConfig.model_validate(config)


class User:
    """The person at the run's approval channel: answers the server's questions with yes (the form's defaults)."""

    async def ask(self, tool: str, subject: str, reason: str, *, call_id: str = "") -> bool:
        print(f"asked ({tool}): {subject} [{reason}] -> yes")
        return True

    async def ask_user(self, questions: Any, **_: Any) -> list[dict[str, Any]]:
        print(f"form ({len(questions)} fields) -> left empty: the defaults")
        return [{} for _ in questions]


async def run(config: McpServerConfig, log_dir: Path) -> None:
    """What a `toolrig run` does with the server: connect with the stored tokens, list, call a tool."""
    server = McpServer(NAME, config, log_dir=log_dir, root=log_dir)
    names = [d["name"] for d in await server.list_once()]
    print("tools:", ", ".join(names))
    if names:
        ctx = ToolContext.for_tests(str(log_dir), approvals=User(), tool_name=names[0])
        try:
            output = await server.call(names[0], {}, ctx)
            print("called", names[0], "->", output.text[:200])
        except ToolError as err:
            if err.error_type != ErrorType.INVALID_INPUT:  # the server's own isError answer is an answer
                raise
            print("called", names[0], "-> the server reported an error:", err.message[:200])


def _needs_login(error: BaseException) -> bool:
    pending = [error]
    while pending:
        current = pending.pop()
        if isinstance(current, LoginRequired):
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return "toolrig mcp login" in str(error)


async def session(config: McpServerConfig, log_dir: Path, *, run_only: bool = False) -> None:
    if run_only:  # a run with no sign-in yet: it must say what to do, not open a browser
        await run(config, log_dir)
        return
    for attempt in range(MAX_LOGINS):
        if config.auth is not None and config.auth.type == "oauth":
            await login(NAME, config, open_url=browser, log_path=log_dir / f"mcp-{NAME}.log", wait_seconds=20)
            print("signed in")
        try:
            await run(config, log_dir)
            return
        except Exception as exc:
            if attempt + 1 == MAX_LOGINS or not _needs_login(exc):
                raise
            print(f"told to sign in again: {exc}")


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="toolrig-conformance-") as scratch:
        home = Path(os.environ.get("CONFORMANCE_TOOLRIG_HOME") or Path(scratch) / "home" / ".toolrig")
        home.mkdir(parents=True, exist_ok=True)
        os.environ["TOOLRIG_HOME"] = str(home)
        try:
            config = server_config(url, scenario, context, Path(scratch))
            anyio.run(partial(session, config, home, run_only="--run-only" in sys.argv[1:-1]))
        except (McpStartError, Exception) as exc:
            print(f"client error: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
