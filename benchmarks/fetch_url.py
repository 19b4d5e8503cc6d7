"""Cost of ``fetch_url`` on a 1 MB local response, guard on, against a bare httpx2 GET of the same URL.

The server is ``python -m http.server`` in its own process (so it does not share our GIL) serving a 1 MB
text file from a temporary directory on 127.0.0.1. Ours: ``rig.call("fetch_url", format="raw")`` with
loopback allowed by config (parse, policy, pinned connection, streamed read under the size cap, decode,
output validation). Peers: one long-lived ``httpx2.AsyncClient`` (connection reuse), and a fresh client per
request (what fetch_url does: a client per call). Target: ours / bare GET <= 1.2.

    python benchmarks/fetch_url.py [--rounds N] [--per-round N]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

from _harness import alternate_async, fmt_seconds, print_table, result_line
from toolrig import Rig

SIZE = 1_000_000


def start_server(root: Path) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, port
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("the benchmark server did not start")


async def main(rounds: int, per_round: int) -> None:
    root = Path(tempfile.mkdtemp())
    (root / "big.txt").write_text(("0123456789abcdef" * 64 + "\n") * (SIZE // 1025) + "x" * (SIZE % 1025))
    server, port = start_server(root)
    url = f"http://127.0.0.1:{port}/big.txt"
    config = {"tool_config": {"fetch_url": {"allow_loopback": True}}, "output": {"max_chars": 2_000_000}}
    rig = Rig(tempfile.mkdtemp(), config=config)
    try:
        async with httpx2.AsyncClient() as shared:

            async def bare_get_shared_client() -> object:
                response = await shared.get(url)
                assert len(response.content) == SIZE
                return response.text

            async def bare_get_fresh_client() -> object:
                async with httpx2.AsyncClient() as client:
                    response = await client.get(url)
                return response.text

            async def toolrig_fetch_url() -> object:
                result = await rig.call("fetch_url", {"url": url, "format": "raw"})
                assert len(result.output["body"]) == SIZE, result
                return result

            contenders = {
                "httpx2 GET (long-lived client)": bare_get_shared_client,
                "httpx2 GET (fresh client)": bare_get_fresh_client,
                "toolrig fetch_url (guard on)": toolrig_fetch_url,
            }
            for fn in contenders.values():
                for _ in range(5):
                    await fn()
            series = await alternate_async(contenders, rounds=rounds, per_round=per_round)
    finally:
        server.kill()
        server.wait()
    peer = series["httpx2 GET (long-lived client)"].median
    rows = [(name, fmt_seconds(s.median), f"{s.median / peer:.2f}x") for name, s in series.items()]
    print_table("fetch_url of a 1 MB local response (median per request)", rows, ("path", "per request", "vs peer"))
    ours = series["toolrig fetch_url (guard on)"].median
    fresh = series["httpx2 GET (fresh client)"].median
    print(f"vs a fresh httpx2 client per request: {ours / fresh:.2f}x")
    print(result_line("fetch_url", ours, peer, peer_name="httpx2_get_long_lived_client"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=10)
    options = parser.parse_args()
    anyio.run(main, options.rounds, options.per_round)
