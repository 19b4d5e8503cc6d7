"""Key-value store for agents: JSON values by (namespace, key), with TTLs, on SQLite or Redis.

Trust model: keys, namespaces and values come from models: they are checked against size limits and a
namespace pattern here, for both backends, and reach the backend only as bound parameters.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from toolrig.errors import ErrorType, ToolError
from toolrig.stores.sqlite import Database

if TYPE_CHECKING:
    import redis

NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9_.@-]{1,128}$")
DEFAULT_NAMESPACE = "default"
MAX_KEY_CHARS = 512
DEFAULT_MAX_VALUE_BYTES = 1_000_000
MAX_TTL_SECONDS = 10 * 365 * 24 * 3600
REDIS_PREFIX = "toolrig:kv:"

MIGRATIONS = (
    """
    CREATE TABLE kv (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        expires_at REAL,
        PRIMARY KEY (namespace, key)
    ) WITHOUT ROWID;
    CREATE INDEX kv_expiry ON kv (expires_at) WHERE expires_at IS NOT NULL;
    """,
)


@dataclass(frozen=True, slots=True)
class Limits:
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES


def check_namespace(namespace: str) -> str:
    if not NAMESPACE_PATTERN.match(namespace):
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The namespace {namespace[:80]!r} is not valid.",
            "Use 1-128 characters from letters, digits, '_', '.', '@' and '-'.",
        )
    return namespace


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_CHARS or "\x00" in key:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The key must be 1-{MAX_KEY_CHARS} characters without NUL bytes (got {len(key)}).",
            "Use a short, descriptive key such as 'project/status'.",
        )
    _utf8(key, "key")
    return key


def _utf8(text: str, what: str) -> bytes:
    """Both backends store UTF-8: a lone surrogate (valid in JSON text, not in UTF-8) is refused here."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The {what} is not valid Unicode (it holds a lone surrogate).",
            "Send well-formed text.",
        ) from None


def encode_value(value: Any, limits: Limits) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError) as exc:
        raise ToolError(ErrorType.INVALID_INPUT, f"The value is not plain JSON: {exc}.") from None
    except RecursionError:
        raise ToolError(ErrorType.INVALID_INPUT, "The value nests too deeply to store.", "Flatten it.") from None
    size = len(_utf8(text, "value"))
    if size > limits.max_value_bytes:
        raise ToolError(
            ErrorType.TOO_LARGE,
            f"The value is {size:,} bytes as JSON; the limit is {limits.max_value_bytes:,}.",
            "Store less (a summary, or split it across several keys), or write a file instead.",
        )
    return text


def check_ttl(ttl: float | None) -> float | None:
    if ttl is not None and not 0 < ttl <= MAX_TTL_SECONDS:
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"ttl must be between 0 and {MAX_TTL_SECONDS:,} seconds (got {ttl:g}).",
            "Give the lifetime in seconds, or leave ttl out to keep the value until it is deleted.",
        )
    return ttl


class KeyValueStore(Protocol):
    """What the kv tools need; both backends check their inputs with the functions above."""

    def get(self, namespace: str, key: str) -> tuple[bool, Any]: ...

    def set(self, namespace: str, key: str, value: Any, ttl: float | None = None) -> None: ...

    def delete(self, namespace: str, key: str) -> bool: ...

    def close(self) -> None: ...


class SqliteKeyValueStore:
    """The default backend: one WAL database under ``.toolrig/``, safe to share between processes.

    ``synchronous=FULL``: a set that returned is on disk, so it survives even a power cut, not only a
    killed process.
    """

    PURGE_EVERY = 256

    def __init__(self, path: Path, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.db = Database(path, MIGRATIONS, synchronous="FULL")
        self._sets = 0
        self._count_lock = threading.Lock()

    def get(self, namespace: str, key: str) -> tuple[bool, Any]:
        check_namespace(namespace)
        check_key(key)
        row = self.db.read(
            lambda conn: conn.execute(
                "SELECT value FROM kv WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)",
                (namespace, key, time.time()),
            ).fetchone()
        )
        return (False, None) if row is None else (True, json.loads(row[0]))

    def set(self, namespace: str, key: str, value: Any, ttl: float | None = None) -> None:
        check_namespace(namespace)
        check_key(key)
        text = encode_value(value, self.limits)
        ttl = check_ttl(ttl)
        expires = time.time() + ttl if ttl is not None else None
        with self._count_lock:
            self._sets += 1
            purge = self._sets % self.PURGE_EVERY == 0

        def body(conn: Any) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?)",
                (namespace, key, text, expires),
            )
            if purge:  # expired rows are invisible already; this only reclaims their space
                conn.execute("DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?", (time.time(),))

        self.db.write(body)

    def delete(self, namespace: str, key: str) -> bool:
        check_namespace(namespace)
        check_key(key)

        def body(conn: Any) -> bool:
            cursor = conn.execute(
                "DELETE FROM kv WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)",
                (namespace, key, time.time()),
            )
            conn.execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (namespace, key))
            return bool(cursor.rowcount)

        return self.db.write(body)

    def close(self) -> None:
        self.db.close()


class RedisKeyValueStore:
    """Redis backend (the ``redis`` extra): keys are ``toolrig:kv:<namespace>:<key>``, TTLs are Redis's own."""

    def __init__(self, url: str, limits: Limits | None = None) -> None:
        try:
            import redis
        except ImportError:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "The Redis key-value backend needs the redis package.",
                "Ask the user to install it: pip install 'toolrig[redis]'.",
            ) from None

        self.limits = limits or Limits()
        self.url = url
        self.client: redis.Redis = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)

    @staticmethod
    def _name(namespace: str, key: str) -> str:
        # The namespace cannot contain ':', so the first ':' after the prefix ends it: no two pairs collide.
        return f"{REDIS_PREFIX}{check_namespace(namespace)}:{check_key(key)}"

    def get(self, namespace: str, key: str) -> tuple[bool, Any]:
        name = self._name(namespace, key)
        raw = self._call(lambda: self.client.get(name))
        return (False, None) if raw is None else (True, json.loads(raw))

    def set(self, namespace: str, key: str, value: Any, ttl: float | None = None) -> None:
        name = self._name(namespace, key)
        text = encode_value(value, self.limits)
        ttl = check_ttl(ttl)
        milliseconds = max(1, round(ttl * 1000)) if ttl is not None else None
        self._call(lambda: self.client.set(name, text.encode("utf-8"), px=milliseconds))

    def delete(self, namespace: str, key: str) -> bool:
        name = self._name(namespace, key)
        return bool(self._call(lambda: self.client.delete(name)))

    def close(self) -> None:
        self.client.close()

    def _call(self, action: Any) -> Any:
        import redis

        try:
            return action()
        except redis.exceptions.ConnectionError as exc:  # TimeoutError is a subclass
            raise ToolError(
                ErrorType.UNAVAILABLE, f"The Redis key-value store is unreachable: {exc}", "Retry later."
            ) from None
        except redis.exceptions.ResponseError as exc:
            raise ToolError(ErrorType.UNAVAILABLE, f"Redis refused the command: {exc}") from None
