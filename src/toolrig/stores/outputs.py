"""Full tool outputs that were too large for the model, kept so the model can page through them.

Trust model: handles come back from the model, so they are validated against a strict pattern before
they become file names; the directory and files are reached without following symlinks (``statedir``),
so only files this store wrote can be read.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.statedir import StatePath

_HANDLE = re.compile(r"^out_[0-9a-f]{16}$")


class OutputStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._state = StatePath.of(directory)

    def save(self, text: str) -> str:
        handle = f"out_{secrets.token_hex(8)}"
        # surrogatepass: a tool's output may carry a lone surrogate; it reads back as it was written.
        self._state.write_bytes(f"{handle}.txt", data=text.encode("utf-8", errors="surrogatepass"))
        return handle

    def read(self, handle: str, offset: int = 0, limit: int = 20_000) -> tuple[str, int]:
        """Return ``limit`` characters from ``offset`` and the total length of the stored output."""
        if not _HANDLE.match(handle):
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"'{handle}' is not an output handle.",
                "Use the handle exactly as the cut result gave it (out_ followed by 16 hex digits).",
            )
        try:
            text = self._state.read_bytes(f"{handle}.txt").decode("utf-8", errors="surrogatepass")
        except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
            raise ToolError(ErrorType.NOT_FOUND, f"No stored output has the handle '{handle}'.") from None
        return text[offset : offset + limit], len(text)
