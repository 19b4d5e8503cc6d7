"""What a provider gives the loop: one streamed model turn, as toolrig events and a finished message.

A provider turns the neutral history into its own wire format, streams the reply, yields events as they
arrive (``stream_text``, ``thinking``, ``tool_call_delta``, ``tool_call``) and ends with ``TurnComplete``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from toolrig.agent.errors import RunError, RunErrorKind
from toolrig.agent.messages import Message, ToolCallBlock
from toolrig.agent.usage import Usage
from toolrig.events import Event
from toolrig.registry import AnyTool

ProviderName = Literal["anthropic", "openai"]
Thinking = Literal["adaptive", "off"]
Effort = Literal["low", "medium", "high", "max"]


@dataclass(slots=True)
class ProviderSettings:
    """Everything needed to reach one model; built from config and command-line options."""

    provider: ProviderName
    model: str
    api_key: str
    base_url: str | None = None
    thinking: Thinking = "off"
    effort: Effort | None = None
    max_tokens: int = 16_000
    timeout_seconds: float = 600.0
    max_retries: int = 2
    strict: bool | None = None  # OpenAI strict function schemas; None = where the endpoint is known to take them


@dataclass(slots=True)
class TurnRequest:
    system: str | None
    messages: Sequence[Message]
    tools: Sequence[AnyTool]
    tool_choice: Literal["auto", "none"] = "auto"


@dataclass(slots=True)
class TurnComplete:
    """The end of a streamed turn: the assistant message, its usage and the provider's stop reason."""

    message: Message
    usage: Usage
    stop_reason: str = ""
    raw_stop_reason: str = field(default="")


class Provider(Protocol):
    name: ProviderName
    settings: ProviderSettings

    def stream(self, request: TurnRequest) -> AsyncIterator[Event | TurnComplete]: ...

    async def aclose(self) -> None: ...


class ToolParams:
    """A provider's wire form of each tool list it was asked with, built once per list and reused.

    A worker's provider serves many runs, and a run's turns offer the same list again and again: building the
    48 tools' schemas for each turn was a fixed cost per turn. The key is the tools' identities; the tools are
    kept with their entry, so an id cannot be reused by another object while its entry lives. A few lists at once
    (runs as different agents on one provider); the oldest goes first.
    """

    LIMIT = 8

    def __init__(self, build: Callable[[Sequence[AnyTool]], list[dict[str, Any]]]) -> None:
        self._build = build
        self._lists: dict[tuple[int, ...], tuple[tuple[AnyTool, ...], list[dict[str, Any]]]] = {}

    def __call__(self, tools: Sequence[AnyTool]) -> list[dict[str, Any]]:
        key = tuple(id(t) for t in tools)
        entry = self._lists.get(key)
        if entry is None:
            if len(self._lists) >= self.LIMIT:
                del self._lists[next(iter(self._lists))]
            entry = self._lists[key] = (tuple(tools), self._build(tools))
        return entry[1]


def call_args(block: ToolCallBlock) -> dict[str, Any]:
    """Arguments for a ``tool_call`` event; text that is not a JSON object is shown as it came."""
    parsed = block.parsed()
    return parsed if parsed is not None else {"_invalid_json": block.arguments}


_BY_CLASS: dict[str, RunErrorKind] = {
    "APITimeoutError": "timeout",
    "APIConnectionError": "connection",
    "AuthenticationError": "auth",
    "PermissionDeniedError": "auth",
    "RateLimitError": "rate_limited",
    "InternalServerError": "overloaded",
    "OverloadedError": "overloaded",
    "ServiceUnavailableError": "overloaded",
    "GatewayTimeoutError": "overloaded",
    "BadRequestError": "bad_request",
    "NotFoundError": "bad_request",
    "UnprocessableEntityError": "bad_request",
    # httpx2's own errors, raised while a stream is being read
    "ReadTimeout": "timeout",
    "WriteTimeout": "timeout",
    "PoolTimeout": "timeout",
    "ConnectTimeout": "timeout",
    "RemoteProtocolError": "connection",
    "ReadError": "connection",
    "WriteError": "connection",
    "ConnectError": "connection",
}
# Error events inside a 200 stream name their type in the body (Anthropic's `event: error`).
_BY_ERROR_TYPE: dict[str, RunErrorKind] = {
    "overloaded_error": "overloaded",
    "api_error": "overloaded",
    "rate_limit_error": "rate_limited",
    "authentication_error": "auth",
    "invalid_request_error": "bad_request",
}
_WHAT: dict[RunErrorKind, str] = {
    "timeout": "timed out (after the SDK's retries)",
    "connection": "cannot be reached or dropped the connection",
    "auth": "refused the API key",
    "rate_limited": "rate limited the request (after the SDK's retries)",
    "overloaded": "is overloaded or failing (after the SDK's retries)",
    "bad_request": "rejected the request",
    "provider": "failed",
}


def provider_error(exc: Exception, provider: str) -> RunError:
    """A provider SDK (or httpx2) exception as a RunError whose ``kind`` scripts can branch on."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    error_type = str(error.get("type", "")) if isinstance(error, dict) else ""
    kind: RunErrorKind = _BY_CLASS.get(type(exc).__name__, "provider")
    if status == 200 and error_type:
        kind = _BY_ERROR_TYPE.get(error_type, "provider")
        status = None
    elif kind == "provider" and isinstance(status, int) and status >= 500:
        kind = "overloaded"
    detail = str(error.get("message")) if isinstance(error, dict) and error.get("message") else ""
    detail = detail or getattr(exc, "message", None) or str(exc) or type(exc).__name__
    label = f"{provider} ({status})" if status else provider
    return RunError(kind, f"{label} {_WHAT[kind]}: {detail}")
