"""toolrig: real, safe, fast tools for LLM agents.

The public API is small and imported lazily, so ``toolrig --help`` and plain imports stay fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from toolrig.version import __version__

_EXPORTS = {
    "Rig": "toolrig.rig",
    "Tool": "toolrig.definition",
    "ToolInput": "toolrig.definition",
    "ToolOutput": "toolrig.definition",
    "tool": "toolrig.function_tool",
    "schema_tool": "toolrig.schema_tools",
    "ToolContext": "toolrig.context",
    "ToolResult": "toolrig.result",
    "ToolError": "toolrig.errors",
    "ErrorType": "toolrig.errors",
    "Registry": "toolrig.registry",
    "Config": "toolrig.config",
}

__all__ = [
    "Config",
    "ErrorType",
    "Registry",
    "Rig",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolInput",
    "ToolOutput",
    "ToolResult",
    "__version__",
    "schema_tool",
    "tool",
]

if TYPE_CHECKING:
    from toolrig.config import Config
    from toolrig.context import ToolContext
    from toolrig.definition import Tool, ToolInput, ToolOutput
    from toolrig.errors import ErrorType, ToolError
    from toolrig.function_tool import tool
    from toolrig.registry import Registry
    from toolrig.result import ToolResult
    from toolrig.rig import Rig
    from toolrig.schema_tools import schema_tool


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolrig' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
