from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.servers import HttpServer, SmtpServer, start_smtp
from toolrig.rig import Rig


@pytest.fixture(autouse=True)
def toolrig_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own user-level toolrig home, so no test reads or writes the real ~/.toolrig."""
    home = tmp_path_factory.mktemp("toolrig-home")
    monkeypatch.setenv("TOOLRIG_HOME", str(home))
    yield home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def rig(workspace: Path) -> Iterator[Rig]:
    with Rig(workspace) as opened:
        yield opened


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def http_server() -> Iterator[HttpServer]:
    """One real HTTP server on 127.0.0.1 for the session; tests add routes under their own paths."""
    server = HttpServer().start()
    yield server
    server.stop()


def static_resolver(table: dict[str, list[str]]) -> Callable[[str], list[str]]:
    """A stand-in for DNS: answers from the table, fails like DNS for anything else."""

    def resolve(host: str) -> list[str]:
        if host not in table:
            raise LookupError(f"cannot resolve '{host}': not in the test's table")
        return list(table[host])

    return resolve


@pytest.fixture(scope="session")
def tls_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, str]:
    """A throwaway CA and a certificate for 127.0.0.1: the server's TLS context and the CA file to trust."""
    import trustme

    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server)
    ca_file = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return server, str(ca_file)


@pytest.fixture(scope="session")
def smtp_servers(tls_ca: tuple[ssl.SSLContext, str]) -> Iterator[dict[str, SmtpServer]]:
    """Real aiosmtpd servers on loopback: plain, STARTTLS (required) and implicit TLS, all with AUTH."""
    context, ca_file = tls_ca
    users = {"agent": "s3cret"}
    servers = {
        "none": start_smtp("plain", users=users),
        "starttls": start_smtp("starttls", tls=context, ca_file=ca_file, users=users),
        "tls": start_smtp("tls", tls=context, ca_file=ca_file, users=users),
    }
    yield servers
    for server in servers.values():
        server.stop()


# Real servers (redis-server, BaseX) shared by the whole session; see tests/state_servers.py.
from tests.state_servers import basex_server, kv, librarian, redis_server  # noqa: E402, F401
