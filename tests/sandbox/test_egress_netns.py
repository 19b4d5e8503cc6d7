"""Commands in a real empty network namespace (bubblewrap) reach the network only through the egress proxy."""

from __future__ import annotations

import functools
import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest

from tests.conftest import static_resolver
from tests.support.servers import HttpServer
from toolrig.sandbox import command_net
from toolrig.sandbox.egress import Egress, open_egress
from toolrig.sandbox.egress_bridge import proxy_env
from toolrig.sandbox.netns import BRIDGE, SessionNetwork, open_session_network
from toolrig.sandbox.network import NetworkPolicy

ALLOWED = NetworkPolicy(allowed_domains=("allowed.test", "pypi.test"), allow_loopback=True)
RESOLVER = static_resolver({"allowed.test": ["127.0.0.1"], "pypi.test": ["127.0.0.1"]})
PYTHON = "/usr/bin/python3"  # the system's: readable by the unprivileged user too
NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
BASE_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}

pytestmark = pytest.mark.slow  # every test starts bubblewrap and the commands in it


@pytest.fixture(scope="module")
def bwrap() -> str:
    path = shutil.which("bwrap")
    if path is None:
        pytest.fail("bubblewrap is missing: apt-get install -y bubblewrap (see .ci/run)")
    return path


def _sandbox(*extra: str) -> list[str]:
    """A minimal bubblewrap view: the system read-only, no capabilities; no --unshare-net (callers choose)."""
    return ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--cap-drop", "ALL", *extra]


def _probes(port: int) -> str:
    """A command trying every route: the allowed origin through the proxy, the host's loopback three ways."""
    return (
        f"curl -sS http://allowed.test:{port}/egress/ns; echo;"
        f" wget -q -O - http://allowed.test:{port}/egress/ns; echo;"
        f" {PYTHON} -c \"import urllib.request as u; print(u.urlopen('http://allowed.test:{port}/egress/ns').read())\";"
        f" curl -s -o /dev/null -w 'proxied-loopback %{{http_code}}\\n' --noproxy '' --proxy $http_proxy http://127.0.0.1:{port}/;"
        f" curl -s -o /dev/null -w 'outside %{{http_code}}\\n' http://outside.test/;"
        f" (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo direct-open || echo direct-refused"
    )


def _assert_only_the_proxy_led_out(out: str, egress: Egress) -> None:
    assert out.splitlines()[:3] == ["namespaced", "namespaced", "b'namespaced'"], out
    assert "proxied-loopback 403" in out and "outside 403" in out
    assert "direct-refused" in out and "direct-open" not in out
    targets = {refusal.target.split(":")[0] for refusal in egress.refusals}
    assert targets == {"127.0.0.1", "outside.test"}


@pytest.mark.anyio
async def test_a_command_in_its_own_namespace_reaches_only_what_the_guard_allows(
    bwrap: str, http_server: HttpServer
) -> None:
    http_server.route("/egress/ns", body="namespaced")
    async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
        out = await _launch(command_net.private(egress, python=PYTHON), ["bash", "-c", _probes(http_server.port)])
    _assert_only_the_proxy_led_out(out, egress)


@pytest.mark.anyio
async def test_an_offline_command_reaches_nothing(bwrap: str, http_server: HttpServer) -> None:
    probe = f"(exec 3<>/dev/tcp/127.0.0.1/{http_server.port}) 2>/dev/null && echo open || echo refused"
    probe += "; echo ${http_proxy:-none}"
    out = await _launch(command_net.offline(), ["bash", "-c", probe])
    assert out == "refused\nnone\n"


async def _launch(network: command_net.CommandNetwork, command: list[str], *, run_as: tuple[str, ...] = ()) -> str:
    """The launch command_net describes, around a minimal sandbox with a pid namespace of its own."""
    sandbox = _sandbox(*network.bwrap_args, "--unshare-pid", "--die-with-parent")
    argv = [*run_as, *network.before_bwrap, *sandbox, "--", *network.before_command, *command]
    env = {**BASE_ENV, **network.env}
    result = await anyio.run_process(argv, env=env, check=False, pass_fds=network.pass_fds)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


@pytest.mark.anyio
async def test_the_forwarding_bridge_leads_to_the_same_proxy(bwrap: str, http_server: HttpServer) -> None:
    http_server.route("/egress/ns", body="namespaced")
    wait = "for i in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/3128) 2>/dev/null && break; sleep 0.05; done"
    async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
        env = {**BASE_ENV, **proxy_env(3128)}
        script = f"{PYTHON} -I -S {BRIDGE} {egress.socket_path} 3128 & {wait}; {_probes(http_server.port)}"
        argv = [
            *_sandbox("--unshare-net", "--unshare-pid", "--die-with-parent"),
            *("--bind", egress.directory, egress.directory, "--", "bash", "-c", script),
        ]
        result = await anyio.run_process(argv, env=env, check=False)
    assert result.returncode == 0, result.stderr
    _assert_only_the_proxy_led_out(result.stdout.decode(), egress)


async def _run_joined(net: SessionNetwork, egress: Egress, script: str, *, run_as: tuple[str, ...] = ()) -> str:
    network = command_net.joined(net, egress, user=(65534, 65534) if run_as else None)
    argv = [*run_as, *network.before_bwrap, *_sandbox(*network.bwrap_args), "--", "bash", "-c", script]
    result = await anyio.run_process(argv, env={**BASE_ENV, **network.env}, check=False, pass_fds=network.pass_fds)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


@pytest.mark.anyio
@pytest.mark.parametrize("run_as", [(), NOBODY], ids=["root", "unprivileged"])
async def test_a_dev_server_started_by_one_command_is_reached_by_the_next(
    bwrap: str, http_server: HttpServer, run_as: tuple[str, ...]
) -> None:
    http_server.route("/egress/ns", body="namespaced")
    shared = Path(tempfile.mkdtemp(prefix="toolrig-devserver-"))  # where an unprivileged command can write
    shared.chmod(0o777)  # the unprivileged command writes its server's pid here
    pidfile = shared / "server.pid"
    serve = (
        f"setsid -f sh -c 'echo $$ > {pidfile}; exec {PYTHON} -m http.server 8000 --bind 127.0.0.1' >/dev/null 2>&1;"
        " for i in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null && break; sleep 0.05; done"
    )
    async with open_session_network(python=PYTHON, prefix=run_as) as net:
        try:
            async with open_egress(ALLOWED, resolver=RESOLVER) as first:
                await _run_joined(net, first, serve, run_as=run_as)
            async with open_egress(ALLOWED, resolver=RESOLVER) as second:
                reach = "curl -s -o /dev/null -w 'dev %{http_code}\\n' http://127.0.0.1:8000/; " + _probes(
                    http_server.port
                )
                out = await _run_joined(net, second, reach, run_as=run_as)
        finally:
            if pidfile.exists():
                os.kill(int(pidfile.read_text()), signal.SIGTERM)
            shutil.rmtree(shared)
    assert out.startswith("dev 200\n"), out
    _assert_only_the_proxy_led_out(out.split("\n", 1)[1], second)


@pytest.mark.anyio
async def test_an_unprivileged_user_holds_and_joins_a_session_namespace(bwrap: str, http_server: HttpServer) -> None:
    http_server.route("/egress/ns", body="namespaced")
    async with open_session_network(python=PYTHON, prefix=NOBODY) as net:
        assert net.user_fd is not None  # unprivileged, bubblewrap's own user namespace owns the network one
        async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
            script = "id -u; grep CapEff /proc/self/status; " + _probes(http_server.port)
            out = await _run_joined(net, egress, script, run_as=NOBODY)
    uid, caps, rest = out.split("\n", 2)
    assert uid == "65534" and caps.split() == ["CapEff:", "0000000000000000"]
    _assert_only_the_proxy_led_out(rest, egress)


def _tiny_wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("tinypkg/__init__.py", "")
        wheel.writestr("tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n")
        wheel.writestr("tinypkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n")
        wheel.writestr("tinypkg-1.0.dist-info/RECORD", "")
    return buffer.getvalue()


@pytest.mark.anyio
async def test_pip_downloads_from_an_allowed_index_through_the_proxy(
    bwrap: str, http_server: HttpServer, tmp_path: Path
) -> None:
    wheel = _tiny_wheel()
    name = "tinypkg-1.0-py3-none-any.whl"
    link = f'<a href="/egress/files/{name}#sha256={hashlib.sha256(wheel).hexdigest()}">{name}</a>'
    http_server.route("/egress/simple/tinypkg/", body=f"<html><body>{link}</body></html>", content_type="text/html")
    http_server.route(f"/egress/files/{name}", body=wheel, content_type="application/octet-stream")
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check"]
    pip += ["--index-url", f"http://pypi.test:{http_server.port}/egress/simple/", "--trusted-host", "pypi.test"]
    async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
        argv = [
            *_sandbox("--unshare-net", "--unshare-pid", "--die-with-parent"),
            *("--bind", egress.directory, egress.directory, "--bind", str(tmp_path), str(tmp_path)),
            *(PYTHON, "-I", "-S", BRIDGE, "exec", egress.socket_path, "--", *pip, "-d", str(tmp_path), "tinypkg"),
        ]
        env = {**BASE_ENV, "PIP_CONFIG_FILE": "/dev/null", "TMPDIR": str(tmp_path)}
        result = await anyio.run_process(argv, env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / name).read_bytes() == wheel
    assert egress.refusals == []


@pytest.mark.anyio
async def test_git_clones_over_http_through_the_proxy(bwrap: str, tmp_path: Path) -> None:
    served = tmp_path / "served"
    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    (work / "README").write_text("cloned through the guard\n")
    subprocess.run([*git, "-C", str(work), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(work), str(served / "repo.git")], check=True)
    subprocess.run(["git", "-C", str(served / "repo.git"), "update-server-info"], check=True)  # the dumb protocol

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://allowed.test:{server.server_address[1]}/repo.git"
        clone = f"git clone -q {url} {tmp_path}/clone && cat {tmp_path}/clone/README"
        async with open_egress(ALLOWED, resolver=RESOLVER) as egress:
            argv = [
                *_sandbox("--unshare-net", "--unshare-pid", "--die-with-parent"),
                *("--bind", egress.directory, egress.directory, "--bind", str(tmp_path), str(tmp_path)),
                *(PYTHON, "-I", "-S", BRIDGE, "exec", egress.socket_path, "--", "bash", "-c", clone),
            ]
            result = await anyio.run_process(argv, env={**BASE_ENV, "HOME": str(tmp_path)}, check=False)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"cloned through the guard\n"
    assert egress.refusals == []


@pytest.mark.anyio
async def test_with_allow_loopback_http_clients_reach_the_hosts_loopback_through_the_proxy(
    bwrap: str, http_server: HttpServer
) -> None:
    http_server.route("/egress/host-loopback", body="the host's")
    probe = f"curl -sS http://127.0.0.1:{http_server.port}/egress/host-loopback; echo; echo $ALL_PROXY"
    async with open_egress(NetworkPolicy(allow_loopback=True)) as egress:
        network = command_net.private(egress, python=PYTHON, socks=True, host_loopback=True)
        out = await _launch(network, ["bash", "-c", probe])
    said, all_proxy, _ = out.split("\n")
    assert said == "the host's" and all_proxy.startswith("socks5h://127.0.0.1:")
    assert egress.refusals == []
