"""``allowed_paths``: a tool's own setting that narrows the workspace to some of its paths.

Trust model: the patterns come from trusted config (an untrusted workspace config cannot set ``tool_config``);
the paths are hostile and were resolved by ``Workspace.resolve`` first, so this only ever narrows: both the
path as spelled (normalised) and the real path it resolves to must match, so a symlink inside an allowed
directory cannot lead the tool to a file outside it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolrig.errors import ErrorType, ToolError
from toolrig.narrowing import Narrow
from toolrig.sandbox.paths import Workspace
from toolrig.sandbox.patterns import PatternSet


class AllowedPathsSettings(BaseModel):
    """The ``allowed_paths`` setting shared by the file tools' config models."""

    model_config = ConfigDict(extra="forbid")

    # An untrusted workspace may only keep entries of the list (never add one), like allowed_domains.
    allowed_paths: Annotated[list[str], Narrow.INTERSECT] = Field(
        default_factory=list,
        description=(
            "Gitignore-style globs relative to the workspace root ('data/**', 'output/') the tool may use; "
            "empty: the whole workspace. They only narrow it: deny globs and the workspace bounds still apply."
        ),
    )

    @field_validator("allowed_paths")
    @classmethod
    def _relative_globs(cls, value: list[str]) -> list[str]:
        for pattern in value:
            body = pattern.lstrip("!").strip()
            if not body or body.startswith("~") or ".." in body.split("/") or "\x00" in body:
                raise ValueError(f"{pattern!r} must be a glob relative to the workspace root, without '..' or '~'")
        try:
            PatternSet(value, braces=True)
        except ValueError as exc:
            raise ValueError(f"the allowed_paths globs cannot be used: {exc}") from None
        return value

    def allowed(self) -> AllowedPaths | None:
        return AllowedPaths(self.allowed_paths) if self.allowed_paths else None


class AllowedPaths:
    """Compiled ``allowed_paths``; ``check`` raises ``denied`` for a path outside them."""

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = patterns
        self._set = PatternSet(patterns, braces=True)

    def permits(self, workspace: Workspace, spelled: str, resolved: Path) -> bool:
        lexical = Path(os.path.normpath(spelled if os.path.isabs(spelled) else workspace.root / spelled))
        is_dir = os.path.isdir(resolved)
        for candidate in dict.fromkeys((lexical, resolved)):
            try:
                rel = workspace.relative(candidate)
            except ToolError:
                return False
            if rel == "." or self._set.matches_path_or_parent(rel, is_dir=is_dir) is None:
                return False
        return True

    def check(self, workspace: Workspace, spelled: str, resolved: Path, tool: str) -> None:
        if not self.permits(workspace, spelled, resolved):
            raise ToolError(
                ErrorType.DENIED,
                f"'{spelled}' is outside the paths {tool} may use here ({', '.join(self.patterns[:10])}).",
                f"Use a path under {', '.join(self.patterns[:10])}, or ask the user to widen "
                f"tool_config.{tool}.allowed_paths.",
                retryable=False,
            )
