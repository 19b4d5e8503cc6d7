"""Real servers for the tests: redis-server and BaseX, each started once per session on a free loopback port.

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
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(directory), "--loglevel", "notice"],  # fmt: skip
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
    process = subprocess.Popen(
        [java, f"-Dorg.basex.path={home}/", f"-Dorg.basex.DBPATH={home}/data", "-cp", str(BASEX_JAR),
         "org.basex.BaseXServer", "-n127.0.0.1", f"-p{port}", "-c", f"ALTER PASSWORD admin {password}"],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    _wait_for_line(process, "Server was started", "BaseX")
    yield BaseXServer(port, password)
    _stop(process)
