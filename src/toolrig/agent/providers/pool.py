"""Providers kept for a long-lived process (a durable worker): one per distinct model settings, reused by its runs.

A provider holds the SDK client (its connection pool) and the encoded tool lists; a run given one through
``RunOptions.provider`` does not close it. Used from one event loop only (the SDK's connections belong to the
loop that opened them), so there is no lock. Nothing of a run is kept: settings are the user's config.
"""

from __future__ import annotations

from dataclasses import astuple
from typing import Any

from toolrig.agent.providers import Provider, ProviderSettings, make_provider


class ProviderPool:
    def __init__(self) -> None:
        self._providers: dict[tuple[Any, ...], Provider] = {}

    def get(self, settings: ProviderSettings) -> Provider:
        key = astuple(settings)
        provider = self._providers.get(key)
        if provider is None:
            provider = self._providers[key] = make_provider(settings)
        return provider

    async def aclose(self) -> None:
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()
