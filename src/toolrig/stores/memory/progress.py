"""A progress bar for the first build of a large index, drawn only when a person watches a terminal."""

from __future__ import annotations

import sys
from typing import TextIO


class TerminalProgress:
    """Draws ``[#####.....] 500/10000 files`` on a terminal; does nothing on a pipe, a file or in CI logs."""

    WIDTH = 30

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.enabled = self.stream.isatty()
        except (AttributeError, ValueError):
            self.enabled = False
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        filled = self.WIDTH * done // total
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} files")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
        self._drawn = True
