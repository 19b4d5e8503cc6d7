from __future__ import annotations

import signal
from pathlib import Path

import pytest

from toolrig import Rig
from toolrig.result import ToolResult


def test_call_sync_never_builds_the_repr_of_its_result(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Python 3.11's asyncio.Runner formats the main task (result included) when it restores SIGINT handling;
    # for a large output that repr cost more than the call itself.
    built: list[str] = []

    def record(self: ToolResult) -> str:
        built.append("repr")  # reprlib swallows exceptions, so record rather than raise
        return "ToolResult(...)"

    monkeypatch.setattr(ToolResult, "__repr__", record)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a plain script
    try:
        result = Rig(workspace, config={}).call_sync("calculate", {"expression": "1 + 1"})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.output == {"result": 2}
    assert built == []
