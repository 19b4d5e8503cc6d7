"""A session's commands share one network namespace, started once, independent of event loops; each keeps its rules.

The namespace is the session's (``SessionSandbox``): later commands reach a server in it, and each command's own
proxy listens there taking only that command's credential, so a narrower caller's command cannot use a wider
one's proxy that it finds on the shared loopback. A real bubblewrap runs every command here.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.conftest import static_resolver
from toolrig.result import ToolResult
from toolrig.rig import Rig
from toolrig.sandbox.egress import open_egress
from toolrig.sandbox.network import NetworkPolicy
from toolrig.sandbox.session import SessionSandbox
from toolrig.scope import CallScope

NET = "readlink /proc/self/ns/net"


class _Origin(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"ORIGIN-OK"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def origin() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _run(rig: Rig, command: str, **options: object) -> ToolResult:
    result = rig.call_sync("run_command", {"command": command}, **options)
    assert not result.is_error, result
    return result


def _stdout(rig: Rig, command: str, **options: object) -> str:
    return str(_run(rig, command, **options).output["stdout"])


def test_the_commands_of_a_session_share_one_namespace_across_event_loops_until_the_rig_closes(
    workspace: Path,
) -> None:
    rig = Rig(workspace, config={})
    sandbox = rig.executor.sandbox
    assert sandbox is not None
    first = _stdout(rig, NET)
    assert _stdout(rig, NET) == first  # call_sync: each call in an event loop of its own
    assert first != os.readlink("/proc/self/ns/net")
    holder = sandbox.network().process
    rig.close()
    assert holder.poll() is not None  # ended with the Rig, not left behind
    assert _stdout(rig, NET) != first  # a closed session sandbox starts a new namespace on its next use
    rig.close()


def test_each_command_keeps_its_own_descriptors_only(workspace: Path) -> None:
    """The namespace's descriptors reach nsenter only: the prelude closes them before the command."""
    rig = Rig(workspace, config={})
    listing = _stdout(rig, "for fd in /proc/self/fd/*; do readlink $fd; done")
    assert "net:[" not in listing and "user:[" not in listing and "toolrig-prelude" not in listing, listing
    rig.close()


def test_a_server_in_the_session_namespace_is_reached_by_later_commands_not_by_offline_ones(
    workspace: Path,
) -> None:
    rig = Rig(workspace, config={})
    offline = Rig(workspace, config={"tool_config": {"run_command": {"network": "none"}}})
    sandbox = rig.executor.sandbox
    assert sandbox is not None
    net = sandbox.network()
    serve = "import http.server as h, sys; s = h.HTTPServer(('127.0.0.1', 0), h.SimpleHTTPRequestHandler); "
    serve += "print(s.server_address[1], flush=True); s.serve_forever()"
    server = subprocess.Popen(  # a server as a background command of the session would start it
        ["nsenter", f"--net=/proc/self/fd/{net.net_fd}", "python3", "-c", serve],
        pass_fds=(net.net_fd,),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=workspace,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        probe = f"curl -s -o /dev/null -w '%{{http_code}}' -m 5 http://127.0.0.1:{port}/"
        assert _stdout(rig, probe) == "200"
        # The same session's offline commands have a namespace of their own, where nothing leads anywhere.
        assert _stdout(offline, probe, scope=CallScope(sandbox=sandbox)) != "200"
        # Another session (its own sandbox) does not see the server either.
        with SessionSandbox() as other:
            assert _stdout(rig, probe, scope=CallScope(sandbox=other)) != "200"
    finally:
        server.kill()
        server.communicate()
        rig.close()
        offline.close()


def _narrow_and_wide(workspace: Path) -> Rig:
    resolver = static_resolver({"wide.test": ["127.0.0.1"], "narrow.test": ["127.0.0.1"]})
    from toolrig.sandbox.http import GuardedHttp

    settings = {"allowed_domains": ["wide.test", "narrow.test"], "allow_loopback": True}
    narrow = {"tool_config": {"run_command": {"allowed_domains": ["narrow.test"]}}}
    return Rig(
        workspace,
        config={"tool_config": {"run_command": settings}, "agents": {"narrow": narrow}},
        http=GuardedHttp(resolver=resolver),
    )


def test_a_narrow_agent_and_a_wide_one_in_the_same_session_each_get_their_own_rules(
    workspace: Path, origin: int
) -> None:
    rig = _narrow_and_wide(workspace)
    fetch = f"curl -sS -m 5 http://wide.test:{origin}/"
    assert _stdout(rig, fetch, session_id="s") == "ORIGIN-OK"
    refused = _run(rig, fetch, session_id="s", agent_id="narrow")
    assert "ORIGIN-OK" not in refused.output["stdout"]
    assert "wide.test" in (refused.output["note"] or "")
    assert _stdout(rig, f"curl -sS -m 5 http://narrow.test:{origin}/", session_id="s", agent_id="narrow") == "ORIGIN-OK"
    rig.close()


def test_a_narrow_command_cannot_use_the_wide_commands_proxy_it_finds_on_the_shared_loopback(
    workspace: Path, origin: int
) -> None:
    """Both run at once in one namespace; the narrow one learns the wide one's proxy port (not its credential)."""
    rig = _narrow_and_wide(workspace)
    wide = "echo ${http_proxy##*@} > port.txt; for i in $(seq 600); do [ -e done ] && break; sleep 0.05; done"
    narrow = (
        "for i in $(seq 600); do [ -s port.txt ] && break; sleep 0.05; done; "
        f"curl -s -m 5 --proxy http://$(cat port.txt) -w ' %{{http_code}}' http://wide.test:{origin}/; "
        f"curl -s -m 5 --proxy http://toolrig:guess@$(cat port.txt) -w ' %{{http_code}}' http://wide.test:{origin}/; "
        "touch done"
    )
    results: dict[str, ToolResult] = {}

    async def both() -> None:
        async def one(name: str, command: str, agent: str | None) -> None:
            results[name] = await rig.call("run_command", {"command": command}, session_id="s", agent_id=agent)

        async with anyio.create_task_group() as group:
            group.start_soon(one, "wide", wide, None)
            group.start_soon(one, "narrow", narrow, "narrow")

    anyio.run(both)
    out = results["narrow"].output["stdout"]
    assert "ORIGIN-OK" not in out and out.count(" 407") == 2, results["narrow"].output
    rig.close()


@pytest.mark.anyio
async def test_the_proxy_with_a_credential_serves_only_the_client_that_presents_it(origin: int) -> None:
    policy = NetworkPolicy(allowed_domains=("allowed.test",), allow_loopback=True)
    resolver = static_resolver({"allowed.test": ["127.0.0.1"]})
    async with open_egress(policy, resolver=resolver, credential="s3cret", unix=False) as egress:
        import socket

        listener = socket.create_server(("127.0.0.1", 0))
        egress.adopt(listener)
        port = listener.getsockname()[1]
        url = f"http://allowed.test:{origin}/"

        async def curl(*args: str) -> tuple[str, str]:
            done = await anyio.run_process(["curl", "-s", "-m", "5", "-w", " %{http_code}", *args, url], check=False)
            return done.stdout.decode(), done.stderr.decode()

        assert (await curl("--proxy", f"http://127.0.0.1:{port}"))[0].endswith(" 407")
        assert (await curl("--proxy", f"http://toolrig:wrong@127.0.0.1:{port}"))[0].endswith(" 407")
        assert (await curl("--proxy", f"http://toolrig:s3cret@127.0.0.1:{port}"))[0] == "ORIGIN-OK 200"
        assert (await curl("--proxy", f"socks5h://toolrig:s3cret@127.0.0.1:{port}"))[0] == "ORIGIN-OK 200"
        assert "ORIGIN-OK" not in (await curl("--proxy", f"socks5h://toolrig:wrong@127.0.0.1:{port}"))[0]
        assert "ORIGIN-OK" not in (await curl("--proxy", f"socks5h://127.0.0.1:{port}"))[0]
    assert egress.refusals == []  # another command's knocking is not this command's refusal


def test_without_a_session_namespace_a_command_gets_one_of_its_own_and_containment_says_why(
    workspace: Path, origin: int
) -> None:
    """A holder that cannot start (simulated: ``false`` before bubblewrap) leaves the bridge's way, still guarded."""
    rig = _narrow_and_wide(workspace)
    broken = SessionSandbox(prefix=("false",))
    result = _run(rig, f"curl -sS -m 5 http://wide.test:{origin}/; {NET}", scope=CallScope(sandbox=broken))
    assert result.output["stdout"].startswith("ORIGIN-OK")
    assert broken.failure is not None and "did not start" in broken.failure
    assert "in a namespace of its own (the network namespace holder did not start" in result.output["containment"]
    joined = _run(rig, "true").output["containment"]
    assert joined.endswith("network: through the egress proxy's guard, in the session's namespace"), joined
    rig.close()
