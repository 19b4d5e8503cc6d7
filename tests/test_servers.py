"""The suite's own server helpers hold under `pytest -n 2`: a port is held or its loss is read from the server.

tests/support/servers.py, tests/support/state_servers.py and tests/support/postgres.py: each server that
cannot bind port 0 itself starts again on another port when its own output says the one it was given is taken,
and a "nothing listens here" port is held bound, so no other worker's server can appear on it.
"""

from __future__ import annotations

import errno
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.servers import PortTaken, on_a_free_port, refusing_port
from tests.support.state_servers import BASEX_JAR, start_basex, start_redis, stop_server


def test_a_refusing_port_refuses_connections_and_nobody_can_listen_on_it_meanwhile() -> None:
    with refusing_port() as port:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=10)
        with socket.socket() as other:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with pytest.raises(OSError) as caught:
                other.bind(("127.0.0.1", port))
            assert caught.value.errno == errno.EADDRINUSE


def test_on_a_free_port_stops_after_its_attempts_when_every_port_is_taken() -> None:
    tried: list[int] = []

    def start(port: int) -> int:
        tried.append(port)
        raise PortTaken(str(port))

    with pytest.raises(AssertionError, match="every port tried was taken"):
        on_a_free_port(start, attempts=3)
    assert len(tried) == 3


def _start(name: str, port: int, tmp: Path) -> subprocess.Popen[str]:
    directory = tmp / f"{name}-{port}"
    directory.mkdir()
    if name == "redis":
        return start_redis(shutil.which("redis-server") or "redis-server", directory, port)
    properties = [f"-Dorg.basex.path={directory}/", f"-Dorg.basex.DBPATH={directory}/data", "-cp", str(BASEX_JAR)]
    return start_basex(shutil.which("java") or "java", properties, port)


@pytest.mark.parametrize("name", ["redis", "basex"])
def test_a_server_whose_port_another_process_took_starts_on_another(name: str, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as other_workers_server:
        taken = other_workers_server.getsockname()[1]
        process, port = on_a_free_port(lambda port: (_start(name, port, tmp_path), port), first=taken)
        try:
            assert port != taken  # the first start read "taken" from the server's own output, not a timeout
            socket.create_connection(("127.0.0.1", port), timeout=10).close()
        finally:
            stop_server(process)


def test_postgres_whose_port_another_process_took_starts_on_another() -> None:
    import psycopg

    from tests.support.postgres import postgres_server

    base = Path(tempfile.mkdtemp(prefix="toolrig-pg-"))  # not under pytest's 0700 tmp: the server runs as postgres
    try:
        with socket.create_server(("127.0.0.1", 0)) as other_workers_server:
            taken = other_workers_server.getsockname()[1]
            with postgres_server(base, first_port=taken) as server, psycopg.connect(server.url()) as conn:
                assert server.port != taken
                assert conn.execute("select 1").fetchone() == (1,)
    finally:
        shutil.rmtree(base, ignore_errors=True)
