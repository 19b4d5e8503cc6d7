"""Helpers for the file tool tests: a real Rig on a workspace, tree writing, git init."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from toolrig import Rig
from toolrig.result import ToolResult


class Caller:
    """Calls tools through a real Rig (executor, validation, output shaping) on one workspace."""

    def __init__(self, root: Path, config: dict[str, Any] | None = None) -> None:
        self.root = root
        self.rig = Rig(root, config=config or {})

    def __call__(self, name: str, **args: Any) -> ToolResult:
        return self.rig.call_sync(name, args)

    def ok(self, name: str, **args: Any) -> dict[str, Any]:
        result = self(name, **args)
        assert not result.is_error, f"{name} failed: {result.error_type}: {result.message}"
        assert isinstance(result.output, dict)
        return result.output

    def error(self, name: str, error_type: str, **args: Any) -> str:
        result = self(name, **args)
        assert result.is_error, f"{name} should have failed, got {result.output}"
        assert result.error_type == error_type, (result.error_type, result.message)
        return result.message or ""


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True, stdin=subprocess.DEVNULL)
