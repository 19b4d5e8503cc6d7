"""The librarian: XML documents in named collections, read with XQuery 3.1 and found with full-text search.

Two backends behind one interface: ``embedded`` (files under ``.toolrig/librarian/``, Saxon in a child
process, SQLite FTS5) and ``basex`` (a BaseX server). Names, documents and queries are checked here and
in ``guard``/``xml`` the same way for both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian.guard import COLLECTION_NAME, DOCUMENT_NAME

if TYPE_CHECKING:
    from toolrig.config import LibrarianStoreConfig

VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
RESERVED_VARIABLE_PREFIX = "toolrig_"
MAX_RESULT_ITEMS = 10_000


@dataclass(frozen=True, slots=True)
class StoredDocument:
    path: str
    bytes: int
    replaced: bool


@dataclass(frozen=True, slots=True)
class SearchHit:
    path: str
    score: float
    snippet: str


class Librarian(Protocol):
    def store(self, collection: str, name: str, content: str) -> StoredDocument: ...

    def get(self, path: str) -> str: ...

    def query(self, query: str, collection: str | None, variables: dict[str, Any]) -> list[str]: ...

    def search(self, query: str, collection: str | None, num_results: int) -> list[SearchHit]: ...

    def close(self) -> None: ...


def check_collection(name: str) -> str:
    if not COLLECTION_NAME.match(name):
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"{name[:80]!r} is not a valid collection name.",
            "Use 1-64 letters, digits, '_' or '-', starting with a letter (e.g. 'contracts').",
        )
    return name


def check_document_name(name: str) -> str:
    if not DOCUMENT_NAME.match(name) or ".." in name:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"{name[:80]!r} is not a valid document name.",
            "Use 1-128 letters, digits, '_', '-' or '.', no '/', e.g. 'lease-2024.xml'.",
        )
    return name


def split_path(path: str) -> tuple[str, str]:
    collection, slash, name = path.strip().strip("/").partition("/")
    if not slash:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"{path[:80]!r} is not a document path.",
            "Give 'collection/document', as librarian_store or librarian_search returned it.",
        )
    return check_collection(collection), check_document_name(name)


def check_variables(variables: dict[str, Any]) -> dict[str, Any]:
    for name, value in variables.items():
        if not VARIABLE_NAME.match(name) or name.startswith(RESERVED_VARIABLE_PREFIX):
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"{name[:80]!r} cannot be an XQuery variable name here.",
                "Use letters, digits, '_', '-' and '.', starting with a letter, and not 'toolrig_'.",
            )
        if not isinstance(value, str | int | float | bool) or value is None:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"Variable ${name} must be a string, number or boolean (got {type(value).__name__}).",
                "Pass lists and objects as a JSON string and parse them with parse-json($var).",
            )
    return variables


def open_librarian(directory: Path, config: LibrarianStoreConfig) -> Librarian:
    if config.backend == "basex":
        import os

        from toolrig.stores.librarian.basex import BaseXLibrarian

        password = os.environ.get(config.password_env, "") if config.password_env else config.password
        return BaseXLibrarian(config.url, config.user, password, timeout=config.query_timeout_seconds)
    from toolrig.stores.librarian.embedded import EmbeddedLibrarian

    return EmbeddedLibrarian(directory, timeout=config.query_timeout_seconds)
