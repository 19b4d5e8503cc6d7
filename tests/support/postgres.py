"""A real PostgreSQL server for the tests: Debian's ``postgresql`` binaries, a temporary data directory,
listening on 127.0.0.1 only. As root (CI), the server runs as the ``postgres`` user, since it refuses root.
PostgreSQL cannot bind port 0, so it starts on a port free a moment ago, and on another when its log says that
one was taken (``on_a_free_port``: safe with two xdist workers each starting one).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.servers import PortTaken, on_a_free_port

INSTALL_HINT = "PostgreSQL is needed for these tests: apt-get install -y postgresql (bash .ci/run does it)."


def _bindir() -> Path:
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    raise RuntimeError(INSTALL_HINT)


@dataclass
class PostgresServer:
    port: int
    user: str = "toolrig"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = "t_" + secrets.token_hex(6)
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@contextmanager
def postgres_server(base: Path, first_port: int | None = None) -> Iterator[PostgresServer]:
    bindir = _bindir()
    data = base / "pgdata"
    sockets = base / "pgsock"
    data.mkdir()
    sockets.mkdir()
    run_as: list[str] = []
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        for path in (base, data, sockets):
            os.chown(path, account.pw_uid, account.pw_gid)
        base.chmod(0o755)
        run_as = ["runuser", "-u", "postgres", "--"]

    def pg(*args: str) -> None:
        subprocess.run([*run_as, *args], check=True, capture_output=True, timeout=120)

    pg(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "toolrig", "--no-sync")

    def start(port: int) -> int:
        options = (
            f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off -c max_connections=300"
        )
        log = base / f"pg-{port}.log"
        try:
            pg(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start")
        except subprocess.CalledProcessError:
            said = log.read_text(errors="replace") if log.exists() else ""
            if "Address already in use" in said:  # 'could not bind IPv4 address "127.0.0.1": Address already in use'
                raise PortTaken(said) from None
            raise
        return port

    port = on_a_free_port(start, first=first_port)
    try:
        yield PostgresServer(port)
    finally:
        pg(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
