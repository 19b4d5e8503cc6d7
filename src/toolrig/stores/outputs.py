"""Full tool outputs that were too large for the model, kept so the model can page through them.

Trust model: handles come back from the model, so they are validated against a strict pattern before
they become file names; only files this store wrote can be read.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.atomic import atomic_write_text

_HANDLE = re.compile(r"^out_[0-9a-f]{16}$")


class OutputStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def save(self, text: str) -> str:
        self.directory.mkdir(parents=True, exist_ok=True)
        handle = f"out_{secrets.token_hex(8)}"
        atomic_write_text(self.directory / f"{handle}.txt", text)
        return handle

    def read(self, handle: str, offset: int = 0, limit: int = 20_000) -> tuple[str, int]:
        """Return ``limit`` characters from ``offset`` and the total length of the stored output."""
        if not _HANDLE.match(handle):
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"'{handle}' is not an output handle.",
                "Use the handle exactly as the cut result gave it (out_ followed by 16 hex digits).",
            )
        path = self.directory / f"{handle}.txt"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ToolError(ErrorType.NOT_FOUND, f"No stored output has the handle '{handle}'.") from None
        return text[offset : offset + limit], len(text)
