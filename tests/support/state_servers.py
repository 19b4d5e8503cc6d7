"""Real servers for the state-store tests: redis-server and BaseX, each started once per session (per xdist worker).

Neither can bind port 0 and say which port it got, so each starts on a port free a moment ago and again on
another when its own log says the port was taken (``on_a_free_port``). A missing binary fails the fixture with
the command that installs it (``.ci/run`` runs that command).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.servers import PortTaken, on_a_free_port
from toolrig.stores.kv import KeyValueStore, RedisKeyValueStore, SqliteKeyValueStore
from toolrig.stores.librarian import Librarian
from toolrig.stores.librarian.basex import BaseXLibrarian
from toolrig.stores.librarian.embedded import EmbeddedLibrarian

BASEX_JAR = Path("/usr/share/java/basex.jar")


def _wait_for_line(process: subprocess.Popen[str], marker: str, name: str, taken: str) -> None:
    """Read the server's own log until it says it is ready: an event, not a guess at how long it takes.

    A server that exits saying ``taken`` lost its port to another process: ``PortTaken``, to start it on another.
    """
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        if marker in line:
            return
    process.wait()
    process.stdout.close()
    if any(taken in line for line in seen):
        raise PortTaken(seen[-1])
    pytest.fail(f"{name} exited before it was ready (code {process.returncode}):\n{''.join(seen)[-2000:]}")


def stop_server(process: subprocess.Popen[str]) -> None:
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


def start_redis(binary: str, directory: Path, port: int) -> subprocess.Popen[str]:
    """redis-server on 127.0.0.1:``port``, ready; ``PortTaken`` when another process holds the port."""
    arguments = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(
        [binary, *arguments, "--dir", str(directory), "--loglevel", "notice"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    _wait_for_line(process, "Ready to accept connections", "redis-server", taken="Address already in use")
    return process


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: run `apt-get install -y redis-server` (.ci/run does)")
    directory = tmp_path_factory.mktemp("redis")
    process, port = on_a_free_port(lambda port: (start_redis(binary, directory, port), port))
    yield RedisServer(port)
    stop_server(process)


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


def start_basex(java: str, properties: list[str], port: int) -> subprocess.Popen[str]:
    """A BaseX server on 127.0.0.1:``port``, ready; ``PortTaken`` when another process holds the port."""
    process = subprocess.Popen(
        [java, *properties, "org.basex.BaseXServer", "-n127.0.0.1", f"-p{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    # BaseX's words when its bind fails: "Server is running or permission was denied (port: N)."
    _wait_for_line(process, "Server was started", "BaseX", taken="Server is running or permission was denied")
    return process


@pytest.fixture(scope="session")
def basex_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaseXServer]:
    java = shutil.which("java")
    if java is None or not BASEX_JAR.is_file():
        pytest.fail("BaseX is not installed: run `apt-get install -y basex` (.ci/run does)")
    home = tmp_path_factory.mktemp("basex")
    password = secrets.token_hex(8)
    properties = [f"-Dorg.basex.path={home}/", f"-Dorg.basex.DBPATH={home}/data", "-cp", str(BASEX_JAR)]
    # Set the admin password standalone first: the server's own -c runs after it reports that it started.
    subprocess.run(
        [java, *properties, "org.basex.BaseX", "-c", f"ALTER PASSWORD admin {password}"],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    process, port = on_a_free_port(lambda port: (start_basex(java, properties, port), port))
    yield BaseXServer(port, password)
    stop_server(process)


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
