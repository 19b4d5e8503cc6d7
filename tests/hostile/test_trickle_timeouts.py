"""A loopback server trickling its answer a byte at a time: ``timeout_seconds`` bounds the whole call (review D17)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.file_helpers import Caller

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n"


class Trickler:
    """Accepts connections and sends the response (head included, or only the body) one byte per 0.3 s."""

    def __init__(self, *, trickle_head: bool) -> None:
        self.trickle_head = trickle_head
        self.stop = threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.server.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                if not self.trickle_head:
                    conn.sendall(HEAD)
                for byte in (HEAD if self.trickle_head else b"") + b"x" * 100:
                    if self.stop.wait(0.3):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.server.close()


@pytest.fixture(params=[False, True], ids=["body trickles", "head trickles"])
def trickler(request: pytest.FixtureRequest) -> Iterator[Trickler]:
    server = Trickler(trickle_head=request.param)
    yield server
    server.close()


def _caller(workspace: Path) -> Caller:
    reach = {"allow_loopback": True, "timeout_seconds": 1}
    return Caller(
        workspace,
        {"limits": {"timeout_seconds": 20}, "tool_config": {"fetch_url": reach, "webhook": reach}},
    )


def test_fetch_url_timeout_bounds_the_whole_call_not_each_read(workspace: Path, trickler: Trickler) -> None:
    result = _caller(workspace)("fetch_url", url=f"http://127.0.0.1:{trickler.port}/")
    assert result.is_error and result.error_type == "timeout"
    assert "1 seconds" in (result.message or "") and "body" in (result.message or ""), result.message


def test_webhook_timeout_bounds_the_whole_call_not_each_read(workspace: Path, trickler: Trickler) -> None:
    result = _caller(workspace)("webhook", url=f"http://127.0.0.1:{trickler.port}/hook", payload={"a": 1})
    assert result.is_error and result.error_type == "timeout"
    assert "1 seconds" in (result.message or "") and "body" in (result.message or ""), result.message
