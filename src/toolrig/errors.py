"""The three error families of toolrig, kept apart on purpose.

::

    Exception
    ├── ToolError        a tool (or the executor on its behalf) refuses or fails a call; it becomes an
    │                    error ToolResult the model can act on, never a crash
    └── ToolrigError     developer or operator misuse, raised at definition or start-up time
        ├── DefinitionError   a tool definition is malformed (bad name, missing model, duplicate)
        ├── ConfigError       a config file is wrong; names the file, the key and the line
        └── UsageError        the library was called the wrong way (unknown tool name from Python, ...)

Run failures of the agent loop live with the agent, not here.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path


class ErrorType(StrEnum):
    """Stable error codes a model (and a program) can branch on; never rename one."""

    INVALID_INPUT = "invalid_input"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    PATH_CONFLICT = "path_conflict"  # a write that would replace a file the caller asked not to replace
    DENIED = "denied"
    TIMEOUT = "timeout"
    TOO_LARGE = "too_large"
    RATE_LIMITED = "rate_limited"
    CANCELLED = "cancelled"
    UNAVAILABLE = "unavailable"
    UNKNOWN_TOOL = "unknown_tool"
    INTERNAL = "internal"


_DEFAULT_HINTS: dict[ErrorType, str] = {
    ErrorType.INVALID_INPUT: "Fix the arguments named above and call the tool again.",
    ErrorType.NOT_FOUND: "Check the name or path; list what exists before retrying.",
    ErrorType.CONFLICT: "Re-read the current state, then retry against it.",
    ErrorType.PATH_CONFLICT: "Read the existing file first, or write again with on_conflict='overwrite'.",
    ErrorType.DENIED: "This is refused by policy; do not retry the same call. Choose another approach or ask the user.",
    ErrorType.TIMEOUT: "Retry with a smaller scope or a longer timeout.",
    ErrorType.TOO_LARGE: "Ask for less: narrow the request or page through it.",
    ErrorType.RATE_LIMITED: "Wait before calling this tool again.",
    ErrorType.CANCELLED: "The call was cancelled; retry only if the user still wants it.",
    ErrorType.UNAVAILABLE: "A service this tool needs is unreachable; retry later or use another tool.",
    ErrorType.UNKNOWN_TOOL: "Call one of the tools that are offered to you.",
    ErrorType.INTERNAL: "The tool failed unexpectedly; retrying the same call is unlikely to help.",
}


def default_hint(error_type: ErrorType) -> str:
    return _DEFAULT_HINTS[error_type]


def default_retryable(error_type: ErrorType) -> bool:
    """Whether the same call may succeed later without changes: waiting helps, rewriting is not needed."""
    return error_type in {ErrorType.TIMEOUT, ErrorType.RATE_LIMITED, ErrorType.UNAVAILABLE}


class ToolError(Exception):
    """Raised by a tool to fail a call on purpose; the executor turns it into an error result.

    ``message`` says what went wrong in words a model can act on; ``next_action_hint`` says what to do
    about it. ``retryable`` tells programs whether the same call may succeed later.
    """

    def __init__(
        self,
        error_type: ErrorType | str,
        message: str,
        next_action_hint: str | None = None,
        *,
        retryable: bool | None = None,
    ) -> None:
        self.error_type = ErrorType(error_type)
        self.message = message
        self.next_action_hint = next_action_hint or default_hint(self.error_type)
        self.retryable = default_retryable(self.error_type) if retryable is None else retryable
        super().__init__(f"{self.error_type.value}: {message}")


class ToolrigError(Exception):
    """Base of developer and operator misuse: raised early, never shown to a model."""


class DefinitionError(ToolrigError):
    """A tool definition or registry operation is invalid."""


class UsageError(ToolrigError):
    """The library or the command line was used the wrong way."""


class ConfigError(ToolrigError):
    """A config file is invalid; the message always names the file, and the key and line when known."""

    def __init__(
        self, message: str, *, file: Path | str | None = None, key: str | None = None, line: int | None = None
    ):
        self.file = Path(file) if file is not None else None
        self.key = key
        self.line = line
        where = ""
        if self.file is not None:
            where = str(self.file)
            if line is not None:
                where += f":{line}"
            where += ": "
        if key:
            where += f"{key}: "
        super().__init__(where + message)
