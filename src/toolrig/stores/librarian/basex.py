"""The BaseX librarian: one BaseX database per collection, spoken to over BaseX's client/server protocol.

Debian's ``basex`` package ships the database server (``basexserver``, port 1984) but not the HTTP/REST
module, so this backend speaks the server protocol (https://docs.basex.org/wiki/Server_Protocol) directly.
Trust model: queries pass the same guard as the embedded backend, then run inside ``xquery:eval`` with
read permission and a timeout, so the server enforces both too. Credentials come from trusted config.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.librarian.base import (
    MAX_RESULT_ITEMS,
    SearchHit,
    StoredDocument,
    check_collection,
    check_document_name,
    check_variables,
    scope,
    split_path,
)
from toolrig.stores.librarian.guard import guard
from toolrig.stores.librarian.xml import check_document
from toolrig.stores.memory.chunking import query_terms, snippet

_ESCAPED = re.compile(rb"[\x00\xff]")


def _escape(match: re.Match[bytes]) -> bytes:
    return b"\xff" + match.group()


class BaseXError(Exception):
    """The server answered a request with an error message."""


class BaseXSession:
    """One authenticated connection. Not thread-safe: the librarian serialises access with a lock."""

    def __init__(self, host: str, port: int, user: str, password: str, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._buffer = b""
        try:
            self._authenticate(user, password)
        except BaseException:
            self.sock.close()
            raise

    def _authenticate(self, user: str, password: str) -> None:
        # The protocol's digest scheme (MD5 is BaseX's choice, not ours): md5(md5(user:realm:password) + nonce).
        realm, _, nonce = self._read_string().rpartition(":")
        secret = f"{user}:{realm}:{password}" if realm else password
        code = hashlib.md5(secret.encode()).hexdigest()  # noqa: S324
        digest = hashlib.md5((code + nonce).encode()).hexdigest()  # noqa: S324
        self._send(user.encode(), digest.encode())
        if self._read_byte() != 0:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "The BaseX server refused the login.",
                "Ask the user to check stores.librarian user and password in the toolrig config.",
            )

    # --------------------------------------------------------------- wire format

    def _send(self, *parts: bytes, command: bytes = b"") -> None:
        self.sock.sendall(command + b"".join(_ESCAPED.sub(_escape, part) + b"\x00" for part in parts))

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the BaseX server closed the connection")
        self._buffer += chunk

    def _read_byte(self) -> int:
        if not self._buffer:
            self._fill()
        byte, self._buffer = self._buffer[0], self._buffer[1:]
        return byte

    def _read_string(self) -> str:
        out = bytearray()
        position = 0
        while True:
            while position >= len(self._buffer):
                self._fill()
            byte = self._buffer[position]
            if byte == 0:
                self._buffer = self._buffer[position + 1 :]
                return out.decode("utf-8")
            if byte == 0xFF:
                while position + 1 >= len(self._buffer):
                    self._fill()
                position += 1
                byte = self._buffer[position]
            out.append(byte)
            position += 1

    def _status(self) -> None:
        if self._read_byte() != 0:
            raise BaseXError(self._read_string())

    # --------------------------------------------------------------- requests

    def command(self, text: str) -> str:
        self._send(text.encode())
        result = self._read_string()
        info = self._read_string()
        if self._read_byte() != 0:
            raise BaseXError(info)
        return result

    def replace(self, path: str, content: bytes) -> None:
        self._send(path.encode(), content, command=b"\x0c")
        info = self._read_string()
        if self._read_byte() != 0:
            raise BaseXError(info)

    def query(self, text: str, bindings: dict[str, tuple[str, str]]) -> list[str]:
        """Run a query and return its items as strings; ``bindings`` maps name to (value, xs type)."""
        self._send(text.encode(), command=b"\x00")
        query_id = self._read_string().encode()
        self._status()
        try:
            for name, (value, kind) in bindings.items():
                self._send(query_id, name.encode(), value.encode(), kind.encode(), command=b"\x03")
                self._read_string()
                self._status()
            self._send(query_id, command=b"\x04")
            items: list[str] = []
            while self._read_byte() != 0:  # each item: a type byte, then the item
                items.append(self._read_string())
            self._status()
            return items
        finally:
            self._send(query_id, command=b"\x02")
            self._read_string()
            self._status()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send(b"exit")
        self.sock.close()


_EVAL = """
declare variable $query external;
{declarations}
for $item in xquery:eval($query, map {{ {bindings} }}, map {{ 'timeout': {timeout}, 'permission': 'read' }})
return if ($item instance of node()) then serialize($item, map {{ 'indent': 'no' }})
  else if ($item instance of map(*) or $item instance of array(*)) then serialize($item, map {{ 'method': 'json' }})
  else string($item)
"""

_SEARCH = """
declare variable $dbs external;
declare variable $terms external;
declare variable $limit external;
let $terms := parse-json($terms)
let $phrases := array:flatten($terms?phrases)
let $words := array:flatten($terms?words)
let $ranked := (
  (: BaseX 9 gives no usable score once stemming is on, so a document scores the number of its text
     nodes that match: coarser than BM25, comparable within one search only. :)
  for $text in (for $db in tokenize($dbs, ',') return collection($db))//text()
    [. contains text { $phrases } any using stemming ftor { $words } any word using stemming]
  let $doc := root($text)
  group by $path := db:name($doc) || '/' || db:path($doc)
  order by count($text) descending, $path
  return [$path, count($text), $doc[1]]
)
for $hit in subsequence($ranked, 1, $limit)
return ($hit(1), string($hit(2)), substring(string-join($hit(3)//text(), ' '), 1, 20000))
"""


class BaseXLibrarian:
    def __init__(self, url: str, user: str, password: str, *, timeout: float = 10.0) -> None:
        parts = urlsplit(url if "//" in url else f"basex://{url}")
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 1984
        self.user = user
        self.password = password
        self.timeout = timeout
        self._session: BaseXSession | None = None
        self._lock = threading.Lock()
        self._known: set[str] = set()
        # The server stops a slow query itself (xquery:eval's timeout); this only catches a server that hangs.
        self._wait = max(30.0, self.timeout + 10)

    # --------------------------------------------------------------- connection

    def _call(self, action: Any) -> Any:
        """Run ``action(session)``; a broken connection is dropped (and reopened next time) and reported."""
        with self._lock:
            try:
                if self._session is None:
                    self._session = BaseXSession(self.host, self.port, self.user, self.password, self._wait)
                return action(self._session)
            except TimeoutError:
                self._drop()
                raise ToolError(
                    ErrorType.TIMEOUT, f"The BaseX server did not answer within {self._wait:g} seconds."
                ) from None
            except OSError as exc:
                self._drop()
                raise ToolError(
                    ErrorType.UNAVAILABLE, f"The BaseX server at {self.host}:{self.port} is unreachable: {exc}"
                ) from None

    def _drop(self) -> None:
        if self._session is not None:
            try:
                self._session.sock.close()
            finally:
                self._session = None

    def _collections(self, session: BaseXSession, refresh: bool = False) -> set[str]:
        if refresh or not self._known:
            self._known = set(session.query("db:list()", {}))
        return self._known

    # --------------------------------------------------------------- documents

    def store(self, collection: str, name: str, content: str) -> StoredDocument:
        collection = check_collection(collection)
        check_document_name(name)
        check_document(content)
        data = content.encode("utf-8")
        # One database per top-level collection; nested collections are directories inside it.
        database, _, below = collection.partition("/")
        inner = f"{below}/{name}" if below else name

        def action(session: BaseXSession) -> bool:
            if database not in self._collections(session, refresh=database not in self._known):
                for option in ("FTINDEX true", "AUTOOPTIMIZE true", "UPDINDEX true", "CHOP false"):
                    session.command(f"SET {option}")
                session.command(f"CREATE DB {database}")
                self._known.add(database)
            clash = session.query(
                "declare variable $db external; declare variable $p external; declare variable $dirs external; "
                "(some $d in tokenize($dirs, '\\|') satisfies db:exists($db, $d), "
                "exists(db:list($db, $p)[. != $p]), db:exists($db, $p))",
                {"db": (database, "xs:string"), "p": (inner, "xs:string"), "dirs": (_prefixes(below), "xs:string")},
            )
            if clash[:2] != ["false", "false"]:
                raise ToolError(
                    ErrorType.CONFLICT,
                    f"'{collection}/{name}' clashes with a stored path: a collection and a document cannot share one.",
                    "Choose another document or collection name.",
                )
            session.command(f"OPEN {database}")
            session.replace(inner, data)
            session.command("CLOSE")
            return clash[2] == "true"

        try:
            replaced = self._call(action)
        except BaseXError as exc:
            raise ToolError(ErrorType.INVALID_INPUT, f"BaseX refused the document: {exc}") from None
        return StoredDocument(f"{collection}/{name}", len(data), bool(replaced))

    def get(self, path: str) -> str:
        collection, name = split_path(path)
        database, _, below = collection.partition("/")
        inner = f"{below}/{name}" if below else name

        def action(session: BaseXSession) -> list[str]:
            if database not in self._collections(session, refresh=database not in self._known):
                return []
            return session.query(
                "declare variable $db external; declare variable $p external; "
                "if (db:exists($db, $p)) then serialize(db:open($db, $p), map { 'indent': 'no' }) else ()",
                {"db": (database, "xs:string"), "p": (inner, "xs:string")},
            )

        found = self._call(action)
        if not found:
            raise ToolError(
                ErrorType.NOT_FOUND, f"No document '{collection}/{name}'.", "librarian_search finds what is stored."
            )
        return str(found[0])

    # --------------------------------------------------------------- queries

    def query(self, query: str, collection: str | None, variables: dict[str, Any]) -> list[str]:
        check_variables(variables)
        chosen = scope(collection)
        known = self._call(lambda session: set(self._collections(session, refresh=True)))

        def exists(name: str) -> str:
            database, _, below = name.partition("/")
            if database not in known or (below and not self._call(lambda session: _has_directory(session, name))):
                raise ToolError(
                    ErrorType.NOT_FOUND, f"There is no collection '{name}'.", "Store a document in it first."
                )
            return name

        def rewrite_collection(name: str | None) -> str:
            target = chosen or "" if name is None else name
            names = [exists(target)] if target else sorted(known)
            return "(" + ", ".join(f"collection('{n}')" for n in names) + ")"

        def rewrite_document(coll: str, name: str) -> str:
            return f"doc('{exists(coll)}/{name}')"

        guarded = guard(query, rewrite_collection=rewrite_collection, rewrite_document=rewrite_document)
        inner = guarded.with_declarations(guarded.externals(list(variables)))
        bindings: dict[str, tuple[str, str]] = {"query": (inner, "xs:string")}
        declarations: list[str] = []
        entries: list[str] = []
        for number, (name, value) in enumerate(variables.items()):
            bindings[f"v{number}"] = _typed(value)
            declarations.append(f"declare variable $v{number} external;")
            entries.append(f"'{name}': $v{number}")
        outer = _EVAL.format(
            declarations="\n".join(declarations), bindings=", ".join(entries), timeout=max(1, math.ceil(self.timeout))
        )
        try:
            items: list[str] = self._call(lambda session: session.query(outer, bindings))
        except BaseXError as exc:
            message = " ".join(str(exc).split())
            if "BXXQ0004" in message or "imeout" in message:
                raise ToolError(
                    ErrorType.TIMEOUT,
                    f"The query ran longer than {self.timeout:g} seconds and was stopped.",
                    "Make the query cheaper (filter early, avoid nested loops over whole collections).",
                    retryable=False,
                ) from None
            raise ToolError(
                ErrorType.INVALID_INPUT, f"The query failed: {message[:2000]}", "Fix the query and run it again."
            ) from None
        if len(items) > MAX_RESULT_ITEMS:
            raise ToolError(ErrorType.TOO_LARGE, f"The query returned {len(items):,} items.", "Narrow the query.")
        return items

    def search(self, query: str, collection: str | None, num_results: int) -> list[SearchHit]:
        phrases, words = query_terms(query)
        if not phrases and not words:
            raise ToolError(
                ErrorType.INVALID_INPUT, "The search has no words.", 'Search for words or a "quoted phrase".'
            )

        chosen = scope(collection)

        def action(session: BaseXSession) -> list[str]:
            known = self._collections(session, refresh=True)
            names = [chosen] if chosen else sorted(known)
            if not names or (chosen and chosen.partition("/")[0] not in known):
                return []
            return session.query(
                _SEARCH,
                {
                    "dbs": (",".join(names), "xs:string"),
                    "terms": (json.dumps({"phrases": phrases, "words": words}), "xs:string"),
                    "limit": (str(num_results), "xs:integer"),
                },
            )

        try:
            flat = self._call(action)
        except BaseXError as exc:
            raise ToolError(ErrorType.INVALID_INPUT, f"The search failed: {exc}") from None
        return [
            SearchHit(flat[i], round(float(flat[i + 1]), 4), snippet(flat[i + 2], query, 300))
            for i in range(0, len(flat) - 2, 3)
        ]

    def drop_all(self) -> None:
        """Drop every database (tests use it to start clean)."""

        def action(session: BaseXSession) -> None:
            for name in self._collections(session, refresh=True):
                session.command(f"DROP DB {name}")
            self._known.clear()

        self._call(action)

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None


def _prefixes(below: str) -> str:
    """'a/b' -> 'a|a/b': the directories on the way, each of which must not be a document."""
    parts = below.split("/") if below else []
    return "|".join("/".join(parts[: depth + 1]) for depth in range(len(parts)))


def _has_directory(session: BaseXSession, collection: str) -> bool:
    database, _, below = collection.partition("/")
    found = session.query(
        "declare variable $db external; declare variable $p external; exists(db:list($db, $p)[starts-with(., $p)])",
        {"db": (database, "xs:string"), "p": (below + "/", "xs:string")},
    )
    return found == ["true"]


def _typed(value: Any) -> tuple[str, str]:
    if isinstance(value, bool):
        return ("true" if value else "false", "xs:boolean")
    if isinstance(value, int):
        return (str(value), "xs:integer")
    if isinstance(value, float):
        return (repr(value), "xs:double")
    return (str(value), "xs:string")
