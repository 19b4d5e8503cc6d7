"""Fitting an output into the model's budget without breaking its shape.

A result larger than the cap keeps its structure (so it still matches the tool's output schema): long
strings are cut in the middle first, then long lists lose their tail. The caller keeps the whole text
elsewhere and tells the model how to page through it.
"""

from __future__ import annotations

import json
from typing import Any

_MIN_STRING = 80


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def escape_surrogates(value: Any) -> Any:
    r"""The value with text no UTF-8 can carry made visible: JSON, a model and a terminal all take it then.

    A lone surrogate is what ``os.fsdecode`` makes of a file name's undecodable bytes (``b"\xff"`` ->
    ``"\udcff"``): such a byte shows as ``\xff``, as ``ls -b`` shows it; any other lone surrogate as
    ``\ud800``. Keys are escaped too; everything that is not text is kept as it was.
    """
    if isinstance(value, str):
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte made: shown as its code point
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {escape_surrogates(k): escape_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escape_surrogates(v) for v in value]
    return value


def _cut_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head
    dropped = len(text) - head - tail
    return f"{text[:head]}\n…[{dropped:,} characters cut]…\n{text[len(text) - tail :]}"


def _map_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return _cut_text(value, limit)
    if isinstance(value, dict):
        return {k: _map_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, limit) for v in value]
    return value


def _map_lists(value: Any, limit: int) -> Any:
    if isinstance(value, dict):
        return {k: _map_lists(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_lists(v, limit) for v in value[:limit]]
    return value


def _longest(value: Any, kind: type[str] | type[list[Any]]) -> int:
    own = len(value) if isinstance(value, kind) else 0
    if isinstance(value, dict):
        return max([own, *(_longest(v, kind) for v in value.values())])
    if isinstance(value, list):
        return max([own, *(_longest(v, kind) for v in value)])
    return own


def _largest_fitting(value: Any, mapper: Any, low: int, high: int, cap: int) -> tuple[Any, int] | None:
    """Binary search the largest limit whose mapped value fits the cap; None if even ``low`` does not."""
    best = None
    while low <= high:
        middle = (low + high) // 2
        candidate = mapper(value, middle)
        if len(dumps(candidate)) <= cap:
            best = (candidate, middle)
            low = middle + 1
        else:
            high = middle - 1
    return best


def fit(output: dict[str, Any], cap: int) -> tuple[dict[str, Any], str]:
    """Return the output cut to at most ``cap`` JSON characters (when possible) and a note saying how."""
    longest_string = _longest(output, str)
    if longest_string > _MIN_STRING:
        found = _largest_fitting(output, _map_strings, _MIN_STRING, longest_string, cap)
        if found is not None:
            return found[0], f"strings longer than {found[1]:,} characters were cut in the middle"
    shortened = _map_strings(output, _MIN_STRING) if longest_string > _MIN_STRING else output
    longest_list = _longest(shortened, list)
    found = _largest_fitting(shortened, _map_lists, 0, longest_list, cap)
    if found is not None:
        return found[0], f"strings were cut and lists were kept to their first {found[1]:,} items"
    return _map_lists(shortened, 0), "the output was too large to show any part of it"
