"""The native Anthropic provider, on the official ``anthropic`` SDK (streaming Messages API).

Trust model: the endpoint and key come from the user's trusted config or environment; what the model
sends back is untrusted data that only ever reaches tools through the executor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from toolrig.adapters.anthropic import content_blocks, tool_params
from toolrig.agent.messages import (
    Block,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    merged,
)
from toolrig.agent.providers.base import (
    ProviderName,
    ProviderSettings,
    ToolParams,
    TurnComplete,
    TurnRequest,
    call_args,
    provider_error,
)
from toolrig.agent.usage import Usage
from toolrig.content import parts_from_json
from toolrig.events import (
    Event,
    StreamTextEvent,
    ThinkingDeltaEvent,
    ThinkingEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

_EPHEMERAL = {"type": "ephemeral"}


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The neutral history as Messages API params, with a cache breakpoint on the newest user turn."""
    out: list[dict[str, Any]] = []
    for message in merged(list(messages)):
        content = _user_content(message.content) if message.role == "user" else _assistant_content(message.content)
        if content:
            out.append({"role": message.role, "content": content})
    if out and out[-1]["role"] == "user":
        last = out[-1]["content"][-1]
        last["cache_control"] = _EPHEMERAL
    return out


def _user_content(blocks: list[Block]) -> list[dict[str, Any]]:
    # tool_result blocks must come first in a user turn.
    results: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ToolResultBlock):
            content: str | list[dict[str, Any]] = block.content
            if block.media:
                content = [{"type": "text", "text": block.content}, *content_blocks(parts_from_json(block.media))]
            item: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.call_id, "content": content}
            if block.is_error:
                item["is_error"] = True
            results.append(item)
        elif isinstance(block, TextBlock) and block.text:
            texts.append({"type": "text", "text": block.text})
    return results + texts


def _assistant_content(blocks: list[Block]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ThinkingBlock):
            # Only Anthropic's own signed thinking can be sent back; other providers' reasoning is dropped.
            if block.provider == "anthropic" and block.redacted:
                content.append({"type": "redacted_thinking", "data": block.redacted})
            elif block.provider == "anthropic" and block.signature:
                content.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
        elif isinstance(block, TextBlock):
            if block.text:
                content.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCallBlock):
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.parsed() or {}})
    return content


class AnthropicProvider:
    name: ProviderName = "anthropic"

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._client: AsyncAnthropic | None = None
        self._tool_params = ToolParams(lambda tools: tool_params(tools, cache=True))

    def client(self) -> AsyncAnthropic:
        if self._client is None:
            from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

            from toolrig.agent.providers.http import sdk_http_client

            s = self.settings
            self._client = AsyncAnthropic(
                api_key=s.api_key,
                base_url=s.base_url,
                timeout=s.timeout_seconds,
                max_retries=s.max_retries,
                http_client=sdk_http_client(DefaultAsyncHttpxClient, s.base_url),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def params(self, request: TurnRequest) -> dict[str, Any]:
        s = self.settings
        params: dict[str, Any] = {
            "model": s.model,
            "max_tokens": s.max_tokens,
            "messages": wire_messages(request.messages),
        }
        if request.system:
            params["system"] = [{"type": "text", "text": request.system, "cache_control": _EPHEMERAL}]
        if request.tools:
            params["tools"] = self._tool_params(request.tools)
            if request.tool_choice == "none":
                params["tool_choice"] = {"type": "none"}
        if s.thinking == "adaptive":
            params["thinking"] = {"type": "adaptive"}
        if s.effort is not None:
            params["output_config"] = {"effort": s.effort}
        return params

    async def stream(self, request: TurnRequest) -> AsyncIterator[Event | TurnComplete]:
        import anthropic
        import httpx2

        try:
            stream = await self.client().messages.create(**self.params(request), stream=True)
        except anthropic.APIError as exc:
            raise provider_error(exc, "anthropic") from None
        blocks: list[Block] = []
        parts: list[str] = []  # the current block's text, thinking or argument fragments
        current: Block | None = None
        usage = Usage(calls=1)
        stop_reason = ""
        try:
            async with stream:
                async for event in stream:
                    kind = event.type
                    if kind == "content_block_delta":
                        delta = event.delta
                        dkind = delta.type
                        if dkind == "text_delta":
                            parts.append(delta.text)
                            yield StreamTextEvent(delta.text)
                        elif dkind == "input_json_delta" and isinstance(current, ToolCallBlock):
                            if delta.partial_json:
                                parts.append(delta.partial_json)
                                yield ToolCallDeltaEvent(current.id, current.name, delta.partial_json)
                        elif dkind == "thinking_delta":
                            parts.append(delta.thinking)
                            yield ThinkingDeltaEvent(delta.thinking)
                        elif dkind == "signature_delta" and isinstance(current, ThinkingBlock):
                            current.signature += delta.signature
                    elif kind == "content_block_start":
                        block = event.content_block
                        bkind = block.type
                        parts = []
                        if bkind == "text":
                            current = TextBlock("")
                        elif bkind == "tool_use":
                            current = ToolCallBlock(block.id, block.name, "")
                        elif bkind == "thinking":
                            current = ThinkingBlock("", signature=block.signature or "", provider="anthropic")
                            yield ThinkingEvent("start")
                        elif bkind == "redacted_thinking":
                            current = ThinkingBlock("", redacted=block.data, provider="anthropic")
                        else:
                            current = None  # server tools and future block types are not ours to replay
                    elif kind == "content_block_stop":
                        if isinstance(current, TextBlock):
                            current.text = "".join(parts)
                        elif isinstance(current, ToolCallBlock):
                            current.arguments = "".join(parts)
                            yield ToolCallEvent(current.id, current.name, call_args(current))
                        elif isinstance(current, ThinkingBlock) and not current.redacted:
                            current.text = "".join(parts)
                            yield ThinkingEvent("end")
                        if current is not None:
                            blocks.append(current)
                        current, parts = None, []
                    elif kind == "message_start":
                        u = event.message.usage
                        usage.input = u.input_tokens or 0
                        usage.cache_read = u.cache_read_input_tokens or 0
                        usage.cache_write = u.cache_creation_input_tokens or 0
                        usage.output = u.output_tokens or 0
                    elif kind == "message_delta":
                        stop_reason = event.delta.stop_reason or stop_reason
                        u = event.usage
                        usage.output = u.output_tokens or usage.output
                        if getattr(u, "input_tokens", None):
                            usage.input = u.input_tokens
        except (anthropic.APIError, httpx2.HTTPError) as exc:
            raise provider_error(exc, "anthropic") from None
        yield TurnComplete(Message("assistant", blocks), usage, _stop(stop_reason), stop_reason)


def _stop(reason: str) -> str:
    return {"tool_use": "tool_calls", "end_turn": "end", "max_tokens": "length", "refusal": "refusal"}.get(
        reason, reason
    )
