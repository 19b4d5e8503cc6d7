"""Sampling answered by the run's own model: a tool's ``ctx.sample``, and a remote MCP server's request.

Trust model: what a tool or a server sends is untrusted text shown to the model without tools (it cannot
make calls); the requests are approved and capped before they get here (``toolrig.sampling`` for tools,
``sources/mcp_relay.py`` for servers, under the server's per-run cap), and the answer is capped at the
smaller of the asker's and the config's token limit. Every token is the run's: it is priced, added to the
usage of the run that made the call (so ``max_budget_usd`` covers it, and a parent's covers its children)
and shown as a usage event; a run whose budget is already spent gets no more sampling.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from toolrig.agent.messages import Message, TextBlock
from toolrig.agent.providers import make_provider
from toolrig.agent.providers.base import Provider, TurnComplete, TurnRequest
from toolrig.agent.usage import Usage
from toolrig.context import Sample
from toolrig.errors import ErrorType, ToolError

_SDK_PROVIDERS = ("toolrig.agent.providers.anthropic", "toolrig.agent.providers.openai")


async def complete(
    provider: Provider, system: str | None, turns: list[tuple[str, str]], max_tokens: int
) -> tuple[Sample, Usage]:
    """One model call without tools, its answer capped at ``max_tokens``: the answer and what it used."""
    messages = [Message("assistant" if role == "assistant" else "user", [TextBlock(text)]) for role, text in turns]
    capped = provider
    if type(provider).__module__ in _SDK_PROVIDERS and provider.settings.max_tokens > max_tokens:
        capped = make_provider(dataclasses.replace(provider.settings, max_tokens=max_tokens))
    done: TurnComplete | None = None
    try:
        async for item in capped.stream(TurnRequest(system=system, messages=messages, tools=[])):
            if isinstance(item, TurnComplete):
                done = item
    finally:
        if capped is not provider:
            await capped.aclose()
    if done is None:
        return Sample("", provider.settings.model), Usage()
    stop = "maxTokens" if done.stop_reason == "max_tokens" else "endTurn"
    return Sample(done.message.text, provider.settings.model, stop), done.usage


class SpendingRun(Protocol):
    """The run that pays for a sampling request (``toolrig.agent.loop``'s): its model and its budget."""

    provider: Provider

    def over_budget(self) -> bool: ...

    def spend(self, usage: Usage) -> None: ...


class RunModels:
    """The agent runtime's answer to sampling: its run's model, on the run's budget (``ModelSource.run``).

    Made per run and passed in the run's call scope: a tool's ``ctx.sample`` in a child's call, and a remote
    MCP server's request made during one of the run's calls, are answered by that run, never found again by a
    session id or set on the shared servers. Without a run ``provider`` answers and the tokens count nowhere.
    """

    def __init__(self, provider: Provider, run: SpendingRun | None = None) -> None:
        self.provider = provider
        self.run = run

    async def sample(self, turns: list[tuple[str, str]], max_tokens: int, system: str | None) -> Sample:
        run = self.run
        if run is not None and run.over_budget():
            raise ToolError(
                ErrorType.DENIED,
                "The run's budget (max_budget_usd) is spent: no more model calls for it.",
                "Finish with what you have.",
            )
        sample, usage = await complete(run.provider if run is not None else self.provider, system, turns, max_tokens)
        usage.calls = usage.calls or 1
        if run is not None:
            run.spend(usage)
        return sample
