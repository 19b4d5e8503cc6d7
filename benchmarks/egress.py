"""Cost of a confined command's network: a request through the egress proxy against a direct one, and what the
way to the proxy adds to starting a command.

Requests: an origin (``python -m http.server``, its own process) serves 1 KiB on 127.0.0.1; a client process
(stdlib sockets, its own process, as a command would be) makes one request per new connection, alternating
direct / absolute-form through the proxy / CONNECT through the proxy, medians over rounds. The proxy runs in
this process's event loop, deciding each request with the guard (an injected resolver maps ``bench.test``).

Start-up, per command (bubblewrap around ``true``, medians, interleaved): a new network namespace alone;
the same plus the hand-off bridge (``python3 -I -S egress_bridge.py exec``); joining a session's namespace
(``nsenter --net``) plus one listener round trip to the holder; and no network namespace for scale.

    python benchmarks/egress.py [--rounds N] [--per-round N] [--starts N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from _harness import fmt_seconds, print_table, result_line
from toolrig.sandbox.egress import open_egress
from toolrig.sandbox.netns import BRIDGE, open_session_network
from toolrig.sandbox.network import NetworkPolicy

CLIENT = r"""
import json, socket, statistics, sys, time
origin, proxy, rounds, per_round = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def read_all(sock):
    while sock.recv(65536):
        pass

def direct():
    with socket.create_connection(("127.0.0.1", origin)) as s:
        s.sendall(b"GET /f HTTP/1.0\r\nHost: bench.test\r\n\r\n"); read_all(s)

def absolute():
    with socket.create_connection(("127.0.0.1", proxy)) as s:
        s.sendall(b"GET http://bench.test:%d/f HTTP/1.0\r\n\r\n" % origin); read_all(s)

def connect():
    with socket.create_connection(("127.0.0.1", proxy)) as s:
        s.sendall(b"CONNECT bench.test:%d HTTP/1.1\r\n\r\n" % origin)
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1024)
        assert head.startswith(b"HTTP/1.1 200"), head
        s.sendall(b"GET /f HTTP/1.0\r\nHost: bench.test\r\n\r\n"); read_all(s)

modes = {"direct": direct, "absolute": absolute, "connect": connect}
samples = {name: [] for name in modes}
for _ in range(rounds):
    for name, fn in modes.items():
        start = time.perf_counter()
        for _ in range(per_round):
            fn()
        samples[name].append((time.perf_counter() - start) / per_round)
print(json.dumps({name: statistics.median(values) for name, values in samples.items()}))
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def requests(origin: int, rounds: int, per_round: int) -> dict[str, float]:
    policy = NetworkPolicy(allowed_domains=("bench.test",), allow_loopback=True)
    async with open_egress(policy, resolver=lambda host: ["127.0.0.1"]) as egress:
        import socket

        listener = socket.create_server(("127.0.0.1", 0))
        proxy = int(listener.getsockname()[1])
        egress.adopt(listener)
        argv = [sys.executable, "-I", "-S", "-c", CLIENT, str(origin), str(proxy), str(rounds), str(per_round)]
        cpu = time.process_time()
        done = await anyio.run_process(argv)
        cpu = time.process_time() - cpu
    medians: dict[str, float] = json.loads(done.stdout)
    medians["proxy CPU per proxied request"] = cpu / (2 * rounds * per_round)  # this process runs only the proxy
    return medians


async def starts(count: int) -> dict[str, float]:
    base = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent"]
    samples: dict[str, list[float]] = {"no netns": [], "new netns": [], "new netns + bridge": [], "session join": []}

    async def timed(name: str, argv: list[str], **options: object) -> None:
        start = time.perf_counter()
        await anyio.run_process(argv, **options)  # type: ignore[arg-type]
        samples[name].append(time.perf_counter() - start)

    async with open_session_network() as net:
        for _ in range(count):
            await timed("no netns", [*base, "true"])
            await timed("new netns", [*base, "--unshare-net", "true"])
            async with open_egress(NetworkPolicy()) as egress:  # one proxy per command, opened outside the timing
                bridge = [sys.executable, "-I", "-S", BRIDGE, "exec", egress.socket_path, "--", "true"]
                bind = ["--bind", egress.directory, egress.directory]
                await timed("new netns + bridge", [*base, "--unshare-net", *bind, *bridge])
            async with open_egress(NetworkPolicy()) as egress:
                start = time.perf_counter()
                net.serve(egress)  # the per-command round trip to the holder
                await anyio.run_process([*net.join_prefix(), *base, "true"], pass_fds=net.pass_fds())
                samples["session join"].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=40)
    parser.add_argument("--starts", type=int, default=40)
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        sys.exit("bubblewrap is missing: apt-get install -y bubblewrap")
    with tempfile.TemporaryDirectory() as root:
        Path(root, "f").write_bytes(b"x" * 1024)
        origin = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(origin), "--bind", "127.0.0.1", "--directory", root],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(1.0)  # the server's start-up; the client fails loudly if it is not up
            request = anyio.run(requests, origin, args.rounds, args.per_round)
            start = anyio.run(starts, args.starts)
        finally:
            server.terminate()
            server.wait()
    direct = request["direct"]
    rows = [(name, fmt_seconds(value), f"{value / direct:.2f}x") for name, value in request.items()]
    rows[-1] = (rows[-1][0], rows[-1][1], "")
    print_table("request over a new connection (1 KiB)", rows, ("route", "median", "vs direct"))
    plain = start["new netns"]
    rows = [(name, fmt_seconds(value), f"{value / plain:.2f}x") for name, value in start.items()]
    print_table("command start-up, bwrap around true", rows, ("way to the proxy", "median", "vs new netns alone"))
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cpus")
    print(
        result_line(
            "egress",
            request["connect"],
            direct,
            absolute_ratio=f"{request['absolute'] / direct:.2f}",
            proxy_cpu_per_request=fmt_seconds(request["proxy CPU per proxied request"]).replace(" ", ""),
            bridge_start_ratio=f"{start['new netns + bridge'] / plain:.2f}",
            session_start_ratio=f"{start['session join'] / plain:.2f}",
        )
    )


if __name__ == "__main__":
    main()
