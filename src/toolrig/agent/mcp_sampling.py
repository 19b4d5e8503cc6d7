"""MCP sampling for the run: a server with ``sampling:`` in its config may ask this run's model to write.

Trust model: what the server sends is untrusted text shown to the model without tools (it cannot make
calls), under the server's per-run request cap and each request's approval (sources/mcp_relay.py); the
answer is capped at the smaller of the server's and the config's token limit.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from toolrig.agent.messages import Message, TextBlock
from toolrig.agent.providers import make_provider
from toolrig.agent.providers.base import Provider, TurnComplete, TurnRequest

if TYPE_CHECKING:
    from toolrig.rig import Rig
    from toolrig.sources.mcp_relay import Sampler

_SDK_PROVIDERS = ("toolrig.agent.providers.anthropic", "toolrig.agent.providers.openai")


def sampler_for(provider: Provider) -> Sampler:
    """Answer a server's sampling request with ``provider``'s model, no tools, within the token cap."""

    async def sample(system: str | None, turns: list[tuple[str, str]], max_tokens: int) -> tuple[str, str]:
        messages = [Message("assistant" if role == "assistant" else "user", [TextBlock(text)]) for role, text in turns]
        capped = provider
        if type(provider).__module__ in _SDK_PROVIDERS and provider.settings.max_tokens > max_tokens:
            capped = make_provider(dataclasses.replace(provider.settings, max_tokens=max_tokens))
        text = ""
        try:
            async for item in capped.stream(TurnRequest(system=system, messages=messages, tools=[])):
                if isinstance(item, TurnComplete):
                    text = item.message.text
        finally:
            if capped is not provider:
                await capped.aclose()
        return text, provider.settings.model

    return sample


def install_sampler(rig: Rig, provider: Provider) -> None:
    """Let the rig's MCP servers that enable sampling use this run's model."""
    if rig.mcp_servers is not None:
        rig.mcp_servers.use_model(sampler_for(provider))
