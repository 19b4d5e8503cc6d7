"""Embedded stores under the workspace's ``.toolrig/`` directory, reached by tools through ``ToolContext.stores``."""

from __future__ import annotations

from pathlib import Path

from toolrig.stores.outputs import OutputStore


class Stores:
    """The stores of one workspace; each opens lazily so a call that needs none pays nothing."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._outputs: OutputStore | None = None

    @property
    def outputs(self) -> OutputStore:
        if self._outputs is None:
            self._outputs = OutputStore(self.state_dir / "outputs")
        return self._outputs
