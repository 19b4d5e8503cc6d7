"""Real servers for the state-store tests: redis-server and BaseX, each started once per session on a free port.

A missing binary fails the fixture with the command that installs it (``.ci/run`` runs that command).
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolrig.stores.kv import KeyValueStore, RedisKeyValueStore, SqliteKeyValueStore
from toolrig.stores.librarian import Librarian
from toolrig.stores.librarian.basex import BaseXLibrarian
from toolrig.stores.librarian.embedded import EmbeddedLibrarian

BASEX_JAR = Path("/usr/share/java/basex.jar")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_line(process: subprocess.Popen[str], marker: str, name: str) -> None:
    """Read the server's own log until it says it is ready: an event, not a guess at how long it takes."""
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        if marker in line:
            return
    process.wait()
    pytest.fail(f"{name} exited before it was ready (code {process.returncode}):\n{''.join(seen)[-2000:]}")


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


@dataclass(frozen=True)
class RedisServer:
    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: run `apt-get install -y redis-server` (.ci/run does)")
    port = free_port()
    directory = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
            "--loglevel",
            "notice",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    _wait_for_line(process, "Ready to accept connections", "redis-server")
    yield RedisServer(port)
    _stop(process)


@dataclass(frozen=True)
class BaseXServer:
    port: int
    password: str

    @property
    def url(self) -> str:
        return f"basex://127.0.0.1:{self.port}"

    def config(self, timeout: float = 10.0) -> dict[str, object]:
        return {
            "backend": "basex",
            "url": self.url,
            "user": "admin",
            "password": self.password,
            "query_timeout_seconds": timeout,
        }


@pytest.fixture(scope="session")
def basex_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseXServer]:
    java = shutil.which("java")
    if java is None or not BASEX_JAR.is_file():
        pytest.fail("BaseX is not installed: run `apt-get install -y basex` (.ci/run does)")
    home = tmp_path_factory.mktemp("basex")
    port = free_port()
    password = secrets.token_hex(8)
    properties = [f"-Dorg.basex.path={home}/", f"-Dorg.basex.DBPATH={home}/data", "-cp", str(BASEX_JAR)]
    # Set the admin password standalone first: the server's own -c runs after it reports that it started.
    subprocess.run(
        [java, *properties, "org.basex.BaseX", "-c", f"ALTER PASSWORD admin {password}"],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    process = subprocess.Popen(
        [java, *properties, "org.basex.BaseXServer", "-n127.0.0.1", f"-p{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    _wait_for_line(process, "Server was started", "BaseX")
    yield BaseXServer(port, password)
    _stop(process)


# ------------------------------------------------------------------ stores on either backend


@pytest.fixture(params=["sqlite", "redis"])
def kv(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyValueStore]:
    """The same key-value suite runs on SQLite and on a real redis-server."""
    store: KeyValueStore
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        redis_store = RedisKeyValueStore(server.url)
        redis_store.client.flushdb()
        store = redis_store
    else:
        store = SqliteKeyValueStore(tmp_path / "kv.sqlite")
    yield store
    store.close()


def make_librarian(kind: str, request: pytest.FixtureRequest, directory: Path, timeout: float = 10.0) -> Librarian:
    if kind == "basex":
        server: BaseXServer = request.getfixturevalue("basex_server")
        librarian = BaseXLibrarian(server.url, "admin", server.password, timeout=timeout)
        librarian.drop_all()
        return librarian
    return EmbeddedLibrarian(directory, timeout=timeout)


@pytest.fixture(params=["embedded", "basex"])
def librarian(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Librarian]:
    """The same librarian suite runs embedded (files + Saxon + FTS5) and on a real BaseX server."""
    store = make_librarian(request.param, request, tmp_path / "librarian")
    yield store
    store.close()
