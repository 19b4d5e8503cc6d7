"""The OpenAI-compatible provider, on the official ``openai`` SDK (streaming chat completions).

Any ``base_url`` works (OpenAI, DeepSeek, OpenRouter, Ollama, vLLM, LM Studio). Tool-call arguments arrive
as fragments keyed by index and are joined here. Trust model: the endpoint and key come from the user's
trusted config or environment; what the model sends back reaches tools only through the executor.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from toolrig.adapters.openai import function_tools, media_parts
from toolrig.agent.messages import Block, Message, TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock, merged
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
from toolrig.events import Event, StreamTextEvent, ThinkingDeltaEvent, ThinkingEvent, ToolCallDeltaEvent, ToolCallEvent

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# Endpoints known to accept strict function schemas; elsewhere strict is sent only when asked for.
STRICT_HOSTS = frozenset({"api.openai.com"})


def wire_messages(system: str | None, messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The neutral history as chat-completion messages: tool results become ``tool`` messages."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in merged(list(messages)):
        if message.role == "user":
            media: list[dict[str, Any]] = []
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    out.append({"role": "tool", "tool_call_id": block.call_id, "content": block.content})
                    media += media_parts(parts_from_json(block.media), f"the {block.name} call {block.call_id}")
            if media:  # after every tool message of the turn: the API wants those right after the calls
                out.append({"role": "user", "content": media})
            text = message.text
            if text:
                out.append({"role": "user", "content": text})
            continue
        text = message.text
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments or "{}"}}
            for c in message.tool_calls
        ]
        if not text and not calls:
            continue
        item: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            item["tool_calls"] = calls
        out.append(item)
    return out


class _Call:
    __slots__ = ("arguments", "id", "name")

    def __init__(self, id: str, name: str) -> None:
        self.id = id
        self.name = name
        self.arguments: list[str] = []


class OpenAIProvider:
    name: ProviderName = "openai"

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._client: AsyncOpenAI | None = None
        self._tool_params = ToolParams(lambda tools: function_tools(tools, strict=self.strict))

    def client(self) -> AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI, DefaultAsyncHttpxClient

            from toolrig.agent.providers.http import sdk_http_client

            s = self.settings
            self._client = AsyncOpenAI(
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

    @property
    def strict(self) -> bool | None:
        """Strict schemas where the endpoint is known to take them; ``llm.strict`` forces either way."""
        if self.settings.strict is not None:
            return self.settings.strict
        host = urlsplit(self.settings.base_url).hostname if self.settings.base_url else "api.openai.com"
        return None if host in STRICT_HOSTS else False

    def params(self, request: TurnRequest) -> dict[str, Any]:
        s = self.settings
        params: dict[str, Any] = {
            "model": s.model,
            "messages": wire_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_completion_tokens": s.max_tokens,
        }
        if request.tools:
            params["tools"] = self._tool_params(request.tools)
            params["tool_choice"] = request.tool_choice
            if request.tool_choice == "auto":
                params["parallel_tool_calls"] = True
        if s.effort is not None:
            params["reasoning_effort"] = s.effort
        return params

    async def stream(self, request: TurnRequest) -> AsyncIterator[Event | TurnComplete]:
        import httpx2
        import openai

        try:
            stream = await self.client().chat.completions.create(**self.params(request))
        except openai.APIError as exc:
            raise provider_error(exc, self._label()) from None
        text: list[str] = []
        thinking: list[str] = []
        calls: dict[int, _Call] = {}
        usage = Usage(calls=1)
        finish = ""
        try:
            async with stream:
                async for chunk in stream:
                    if chunk.usage is not None:
                        u = chunk.usage
                        details = u.prompt_tokens_details
                        cached = (details.cached_tokens or 0) if details is not None else 0
                        usage.input = (u.prompt_tokens or 0) - cached
                        usage.cache_read = cached
                        usage.output = u.completion_tokens or 0
                    if not chunk.choices:
                        continue
                    choice = chunk.choices[0]
                    delta = choice.delta
                    if delta.content:
                        if thinking and not text:
                            yield ThinkingEvent("end")
                        text.append(delta.content)
                        yield StreamTextEvent(delta.content)
                    elif delta.model_extra:
                        # DeepSeek, vLLM and Ollama stream reasoning beside the content.
                        reasoning = delta.model_extra.get("reasoning_content") or delta.model_extra.get("reasoning")
                        if isinstance(reasoning, str) and reasoning:
                            if not thinking:
                                yield ThinkingEvent("start")
                            thinking.append(reasoning)
                            yield ThinkingDeltaEvent(reasoning)
                    if delta.tool_calls:
                        for fragment in delta.tool_calls:
                            call = calls.get(fragment.index)
                            function = fragment.function
                            if call is None:
                                name = (function.name if function else None) or ""
                                # Ids a server omits are made unique: an id names one call for the whole session
                                # (results, paused decisions), never the first call of every turn.
                                call_id = fragment.id or f"call_{secrets.token_hex(6)}"
                                call = calls[fragment.index] = _Call(call_id, name)
                            elif function is not None and function.name and not call.name:
                                call.name = function.name
                            if function is not None and function.arguments:
                                call.arguments.append(function.arguments)
                                yield ToolCallDeltaEvent(call.id, call.name, function.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except (openai.APIError, httpx2.HTTPError) as exc:
            raise provider_error(exc, self._label()) from None
        if thinking and not text:
            yield ThinkingEvent("end")
        blocks: list[Block] = []
        if thinking:
            blocks.append(ThinkingBlock("".join(thinking), provider="openai"))
        if text:
            blocks.append(TextBlock("".join(text)))
        for index in sorted(calls):
            call = calls[index]
            block = ToolCallBlock(call.id, call.name, "".join(call.arguments))
            blocks.append(block)
            yield ToolCallEvent(block.id, block.name, call_args(block))
        stop = {"tool_calls": "tool_calls", "stop": "end", "length": "length", "content_filter": "refusal"}
        yield TurnComplete(Message("assistant", blocks), usage, stop.get(finish, finish), finish)

    def _label(self) -> str:
        host = urlsplit(self.settings.base_url).hostname if self.settings.base_url else None
        return f"openai-compatible endpoint {host}" if host else "openai"
