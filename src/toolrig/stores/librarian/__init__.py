"""The librarian: XML documents in named collections, read with XQuery 3.1 and found with full-text search.

Two backends behind one interface: ``embedded`` (files under ``.toolrig/librarian/``, Saxon in a child
process, SQLite FTS5) and ``basex`` (a BaseX server). Names, documents and queries are checked here and
in ``guard``/``xml`` the same way for both.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from toolrig.stores.librarian.base import (
    MAX_RESULT_ITEMS,
    RESERVED_VARIABLE_PREFIX,
    VARIABLE_NAME,
    Librarian,
    SearchHit,
    StoredDocument,
    check_collection,
    check_document_name,
    check_variables,
    scope,
    split_path,
)

if TYPE_CHECKING:
    from toolrig.config import LibrarianStoreConfig

__all__ = [
    "MAX_RESULT_ITEMS",
    "RESERVED_VARIABLE_PREFIX",
    "VARIABLE_NAME",
    "Librarian",
    "SearchHit",
    "StoredDocument",
    "check_collection",
    "check_document_name",
    "check_variables",
    "open_librarian",
    "scope",
    "split_path",
]


def open_librarian(directory: Path, config: LibrarianStoreConfig) -> Librarian:
    if config.backend == "basex":
        import os

        from toolrig.stores.librarian.basex import BaseXLibrarian

        password = os.environ.get(config.password_env, "") if config.password_env else config.password
        return BaseXLibrarian(config.url, config.user, password, timeout=config.query_timeout_seconds)
    from toolrig.stores.librarian.embedded import EmbeddedLibrarian

    return EmbeddedLibrarian(directory, timeout=config.query_timeout_seconds)
