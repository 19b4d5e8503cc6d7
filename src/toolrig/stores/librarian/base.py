"""What both librarian backends share: the documents and hits they return, and the checks of every name and query.

Apart from the package's ``open_librarian`` (which picks a backend) so that the backends import it without
importing each other through the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian.names import collection_path, document_path

if TYPE_CHECKING:
    pass

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

    def query(self, query: str, collection: str | None, variables: dict[str, Any]) -> list[str]:
        """Run ``query``; its context (a leading '/') and bare ``collection()`` are ``collection``'s documents."""

    def search(self, query: str, collection: str | None, num_results: int) -> list[SearchHit]: ...

    def close(self) -> None: ...


_COLLECTION_HINT = (
    "Use a collection path like 'contracts' or '/db/agents/greeter': up to 8 names of 1-64 letters, digits, "
    "'_' or '-', each starting with a letter, separated by '/'."
)


def check_collection(name: str, *, root: bool = False) -> str:
    """The canonical collection path ('agents/greeter'); '' (the root, /db) only where ``root`` allows it."""
    canonical = collection_path(name)
    if canonical is None or (not canonical and not root):
        raise ToolError(ErrorType.INVALID_INPUT, f"{name[:80]!r} is not a valid collection name.", _COLLECTION_HINT)
    return canonical


def scope(collection: str | None) -> str | None:
    """A query's or search's collection: None (every document) for no collection or the root '/db'."""
    return check_collection(collection, root=True) or None if collection is not None else None


def check_document_name(name: str) -> str:
    if "/" in name or document_path(f"c/{name}") is None:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"{name[:80]!r} is not a valid document name.",
            "Use 1-128 letters, digits, '_', '-' or '.', no '/', e.g. 'lease-2024.xml'.",
        )
    return name


def split_path(path: str) -> tuple[str, str]:
    """(collection, name) of 'collection/document' or '/db/agents/greeter/document.xml'."""
    found = document_path(path)
    if found is None:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"{path[:80]!r} is not a document path.",
            "Give 'collection/document' (or '/db/collection/document'), as librarian_store or librarian_search "
            "returned it.",
        )
    return found


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
