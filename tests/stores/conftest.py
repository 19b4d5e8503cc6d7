from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import BaseXServer, RedisServer
from toolrig.stores.kv import KeyValueStore, RedisKeyValueStore, SqliteKeyValueStore
from toolrig.stores.librarian import Librarian
from toolrig.stores.librarian.basex import BaseXLibrarian
from toolrig.stores.librarian.embedded import EmbeddedLibrarian


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
