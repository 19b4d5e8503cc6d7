"""What OpenTelemetry costs per tool call: ``rig.call`` with telemetry on (spans and metrics exported over
OTLP/HTTP to a loopback receiver that discards them) against off, measured alternately in one run.

Off is the default and imports nothing (docs/telemetry.md); on adds an ``execute_tool`` span, its
attributes and two metric updates per call, plus the exporter's background thread. ``ratio`` = on / off.

    python benchmarks/telemetry.py [--rounds N] [--per-round N]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio

from _harness import alternate_async, fmt_seconds, print_table, result_line
from toolrig import Rig, tool
from toolrig.registry import Registry


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class _Discard(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


async def main(rounds: int, per_round: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Discard)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    configs: dict[str, dict[str, Any]] = {
        "off": {"audit": {"enabled": False}},
        "on": {"audit": {"enabled": False}, "telemetry": {"endpoint": endpoint}},
        "on + content": {"audit": {"enabled": False}, "telemetry": {"endpoint": endpoint, "capture_content": True}},
    }
    rigs = {
        name: Rig(tempfile.mkdtemp(), config=config, registry=Registry([tool(name="add")(add)]))
        for name, config in configs.items()
    }
    assert rigs["off"].telemetry is None and rigs["on"].telemetry is not None
    args = {"a": 2, "b": 3}

    def contender(rig: Rig) -> Any:
        async def run() -> object:
            result = await rig.call("add", args)
            if result.is_error:
                raise RuntimeError(result.to_json())
            return result

        return run

    contenders = {name: contender(rig) for name, rig in rigs.items()}
    for fn in contenders.values():  # warm up: imports, plans, the exporter's connection
        for _ in range(500):
            await fn()
    series = await alternate_async(contenders, rounds=rounds, per_round=per_round)
    off = series["off"].median
    rows = [
        (name, fmt_seconds(s.median), fmt_seconds(s.median - off), fmt_seconds(min(s.samples)))
        for name, s in series.items()
    ]
    print_table(
        "rig.call on a trivial async tool, audit off (median over rounds)",
        rows,
        ("telemetry", "per call", "added", "best round"),
    )
    on = series["on"].median
    print(f"\ntelemetry on adds {fmt_seconds(on - off)} per tool call")
    telemetry = rigs["on"].telemetry
    assert telemetry is not None
    from toolrig.telemetry.setup import shutdown

    shutdown()  # the exporters' last flush while the receiver still listens
    server.shutdown()
    print(result_line("telemetry", on, off, added_us=f"{(on - off) * 1e6:.1f}"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=2000)
    options = parser.parse_args()
    anyio.run(main, options.rounds, options.per_round)
