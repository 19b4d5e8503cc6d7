"""Collection and document names: the eXist-db shape (``/db/agents/greeter/conversation-001.xml``).

Collections nest; ``db`` is the root, as in eXist-db, so ``/db/agents/greeter``, ``db/agents/greeter`` and
``agents/greeter`` name the same collection, stored as ``agents/greeter``. Every segment is a plain name, so a
checked name can become a path, a BaseX database path or a query literal without escaping.
"""

from __future__ import annotations

import re

SEGMENT = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
COLLECTION_NAME = SEGMENT  # one segment: a top-level collection (a BaseX database)
DOCUMENT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
ROOT = "db"
MAX_DEPTH = 8


def _segments(text: str) -> list[str] | None:
    """The names in a path, without the root; None for an absolute path outside '/db' ('/etc/passwd')."""
    text = text.strip()
    trimmed = text.strip("/")
    parts = trimmed.split("/") if trimmed else []
    if "" in parts:  # 'a//b'
        return None
    if parts and parts[0] == ROOT:
        return parts[1:]
    if text.startswith("/") and parts:
        return None
    return parts


def collection_path(text: str) -> str | None:
    """The canonical collection ('agents/greeter'; '' for the root), or None when ``text`` is not one."""
    parts = _segments(text)
    if parts is None or len(parts) > MAX_DEPTH or not all(SEGMENT.match(part) for part in parts):
        return None
    return "/".join(parts)


def document_path(text: str) -> tuple[str, str] | None:
    """(collection, document name) of a document path, or None when ``text`` is not one."""
    parts = _segments(text)
    if parts is None or len(parts) < 2:
        return None
    collection = collection_path("/".join(parts[:-1]))
    name = parts[-1]
    if not collection or not DOCUMENT_NAME.match(name) or ".." in name:
        return None
    return collection, name


def within(collection: str, scope: str) -> bool:
    """Whether ``collection`` is ``scope`` or below it (eXist-db's collection() reads sub-collections too)."""
    return not scope or collection == scope or collection.startswith(scope + "/")
