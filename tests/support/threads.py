"""Where a function ran: on an event loop (and which) or in a worker thread."""

from __future__ import annotations

from typing import Any

import pytest


def record_where(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[str]:
    """Replace ``module.name`` with itself plus a note of where each call ran: the async library, or a thread."""
    import sniffio

    where: list[str] = []
    original = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        try:
            where.append(sniffio.current_async_library())
        except sniffio.AsyncLibraryNotFoundError:
            where.append("worker thread")
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return where
