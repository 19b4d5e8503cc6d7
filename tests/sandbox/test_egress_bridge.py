from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest

from tests.conftest import static_resolver
from tests.support.servers import HttpServer
from toolrig.sandbox.egress import open_egress
from toolrig.sandbox.egress_bridge import HANDOFF, hand_off, main, proxy_env
from toolrig.sandbox.netns import BRIDGE
from toolrig.sandbox.network import NetworkPolicy

ALLOWED = NetworkPolicy(allowed_domains=("allowed.test",), allow_loopback=True)
RESOLVER = static_resolver({"allowed.test": ["127.0.0.1"]})


@pytest.mark.anyio
async def test_handed_off_listeners_are_served_by_the_proxy(http_server: HttpServer) -> None:
    http_server.route("/bridge/handoff", body="handed")
    async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
        port = await anyio.to_thread.run_sync(hand_off, egress.socket_path)

        def fetch() -> bytes:
            proxy = urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"})
            url = http_server.url("/bridge/handoff", host="allowed.test")
            with urllib.request.build_opener(proxy).open(url, timeout=10) as response:
                return bytes(response.read())

        assert await anyio.to_thread.run_sync(fetch) == b"handed"


@pytest.mark.anyio
async def test_a_hand_off_of_anything_but_a_listening_tcp_socket_is_refused() -> None:
    def forge(path: str) -> bytes:
        left, right = socket.socketpair()
        with left, right, socket.socket(socket.AF_UNIX) as conn:
            conn.connect(path)
            socket.send_fds(conn, [HANDOFF], [left.fileno(), right.fileno()])
            return conn.recv(16)

    async with open_egress(ALLOWED) as egress:
        assert await anyio.to_thread.run_sync(forge, egress.socket_path) == b"NO\n"
        assert egress._listeners == 0


def test_the_bridge_runs_without_toolrig_or_site_packages() -> None:
    # -I -S: no site, no toolrig on the path; a usage error proves the module imported and ran.
    done = subprocess.run([sys.executable, "-I", "-S", BRIDGE], capture_output=True, check=False, timeout=30)
    assert done.returncode == 2 and b"usage" in done.stderr
    assert main(["exec", "sock"]) == 2


def test_the_proxy_environment_covers_the_common_clients() -> None:
    env = proxy_env(3128)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy"):
        assert env[name] == "http://127.0.0.1:3128"
    assert "127.0.0.1" in env["no_proxy"] and "localhost" in env["NO_PROXY"]
    assert "ALL_PROXY" not in env  # httpx clients fail at creation on a SOCKS ALL_PROXY without socksio
    assert proxy_env(3128, socks=True)["all_proxy"] == "socks5h://127.0.0.1:3128"


@pytest.mark.anyio
async def test_exec_finds_the_command_on_path_and_sets_the_proxy_variables(tmp_path: Path) -> None:
    async with open_egress(ALLOWED) as egress:
        bridge = [sys.executable, "-I", "-S", BRIDGE, "exec", egress.socket_path, "--"]
        env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "KEPT": "yes"}
        found = await anyio.run_process([*bridge, "sh", "-c", "echo $KEPT $http_proxy"], env=env)
        missing = await anyio.run_process([*bridge, "no-such-command-here"], env=env, check=False)
    kept, proxy = found.stdout.decode().split()
    assert kept == "yes" and proxy.startswith("http://127.0.0.1:")
    assert missing.returncode == 127 and b"cannot run no-such-command-here" in missing.stderr
