"""Embedded stores under the workspace's ``.toolrig/`` directory, reached by tools through ``ToolContext.stores``.

Which backend each store uses (SQLite or Redis for the key-value store, embedded files or BaseX for the
librarian) comes from the ``stores:`` section of the config; tools never see the difference.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from toolrig.stores.outputs import OutputStore

if TYPE_CHECKING:
    from toolrig.config import StoresConfig
    from toolrig.stores.kv import KeyValueStore
    from toolrig.stores.librarian import Librarian
    from toolrig.stores.memory import MemoryIndexes
    from toolrig.stores.notes import SessionNotes


class Stores:
    """The stores of one workspace; each opens lazily so a call that needs none pays nothing."""

    def __init__(self, state_dir: Path, config: StoresConfig | None = None) -> None:
        self.state_dir = state_dir
        self._config = config
        self._outputs: OutputStore | None = None
        self._kv: KeyValueStore | None = None
        self._memory: MemoryIndexes | None = None
        self._librarian: Librarian | None = None
        self._notes: SessionNotes | None = None
        self._lock = threading.Lock()  # tools run in worker threads: open each store once

    @property
    def config(self) -> StoresConfig:
        if self._config is None:
            from toolrig.config import StoresConfig

            self._config = StoresConfig()
        return self._config

    @property
    def outputs(self) -> OutputStore:
        if self._outputs is None:
            self._outputs = OutputStore(self.state_dir / "outputs")
        return self._outputs

    @property
    def kv(self) -> KeyValueStore:
        with self._lock:
            if self._kv is None:
                from toolrig.stores.kv import Limits, RedisKeyValueStore, SqliteKeyValueStore

                settings = self.config.kv
                limits = Limits(max_value_bytes=settings.max_value_bytes)
                if settings.backend == "redis":
                    self._kv = RedisKeyValueStore(settings.url, limits)
                else:
                    self._kv = SqliteKeyValueStore(self.state_dir / "kv.sqlite", limits)
            return self._kv

    @property
    def memory(self) -> MemoryIndexes:
        with self._lock:
            if self._memory is None:
                from toolrig.stores.memory import MemoryIndexes

                self._memory = MemoryIndexes(self.state_dir / "memory", semantic=self.config.memory.semantic)
            return self._memory

    @property
    def librarian(self) -> Librarian:
        with self._lock:
            if self._librarian is None:
                from toolrig.stores.librarian import open_librarian

                self._librarian = open_librarian(self.state_dir / "librarian", self.config.librarian)
            return self._librarian

    @property
    def notes(self) -> SessionNotes:
        with self._lock:
            if self._notes is None:
                from toolrig.stores.notes import SessionNotes

                self._notes = SessionNotes(self.state_dir / "notes.sqlite")
            return self._notes

    def close(self) -> None:
        """Close what was opened (connections, worker processes); the stores reopen on next use."""
        with self._lock:
            for store in (self._kv, self._memory, self._librarian, self._notes):
                if store is not None:
                    store.close()
            self._kv = self._memory = self._librarian = self._notes = None
