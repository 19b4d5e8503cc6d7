"""What a provider gives the loop: one streamed model turn, as toolrig events and a finished message.

A provider turns the neutral history into its own wire format, streams the reply, yields events as they
arrive (``stream_text``, ``thinking``, ``tool_call_delta``, ``tool_call``) and ends with ``TurnComplete``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from toolrig.agent.errors import RunError
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


def call_args(block: ToolCallBlock) -> dict[str, Any]:
    """Arguments for a ``tool_call`` event; text that is not a JSON object is shown as it came."""
    parsed = block.parsed()
    return parsed if parsed is not None else {"_invalid_json": block.arguments}


def provider_error(exc: Exception, provider: str) -> RunError:
    """A provider SDK exception as a RunError; both SDKs name their exceptions alike."""
    kind = type(exc).__name__
    status = getattr(exc, "status_code", None)
    message = getattr(exc, "message", None) or str(exc) or kind
    label = f"{provider} returned {status}" if status else provider
    if kind.endswith("Timeout") and kind != "APITimeoutError":  # httpx2 errors raised mid-stream
        return RunError("timeout", f"{provider}: the stream stalled and timed out")
    if kind in ("RemoteProtocolError", "ReadError", "WriteError", "NetworkError", "ProtocolError"):
        return RunError("connection", f"{provider}: the connection broke mid-stream: {message}")
    if kind == "APITimeoutError":
        return RunError("timeout", f"{provider}: the request timed out (after the SDK's retries)")
    if kind == "APIConnectionError":
        return RunError("connection", f"{provider}: cannot reach the endpoint: {message}")
    if kind in ("AuthenticationError", "PermissionDeniedError"):
        return RunError("auth", f"{label}: the API key was refused: {message}")
    if kind == "RateLimitError":
        return RunError("rate_limited", f"{label}: rate limited (after the SDK's retries): {message}")
    if kind in ("OverloadedError", "InternalServerError", "ServiceUnavailableError", "GatewayTimeoutError") or (
        isinstance(status, int) and status >= 500
    ):
        return RunError("overloaded", f"{label}: the provider is overloaded or failing: {message}")
    if kind in ("BadRequestError", "NotFoundError", "UnprocessableEntityError"):
        return RunError("bad_request", f"{label}: the request was rejected: {message}")
    return RunError("provider", f"{label}: {message}")
