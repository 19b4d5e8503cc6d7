"""Providers: which one a model goes to, with which key, and the object that streams its turns.

A model named ``claude-*`` (or ``.../claude-*``) with no ``base_url`` goes to Anthropic natively; anything
else, or any model with a ``base_url``, goes to the OpenAI-compatible provider. ``llm.provider`` forces
either. Both paths get every toolrig tool and the same policy, approvals and hooks.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from toolrig.agent.errors import MissingKeyError, RunError
from toolrig.agent.providers.base import Provider, ProviderName, ProviderSettings, TurnComplete, TurnRequest

if TYPE_CHECKING:
    from toolrig.config import LlmConfig

__all__ = [
    "NOT_CONFIGURED",
    "Provider",
    "ProviderName",
    "ProviderSettings",
    "TurnComplete",
    "TurnRequest",
    "choose_provider",
    "make_provider",
    "settings_from",
]

NOT_CONFIGURED = (
    "no model is configured: pass --model, or set llm.model in ~/.toolrig/config.yaml "
    "(claude-* goes to Anthropic, anything else to an OpenAI-compatible llm.base_url)\n"
    "then export the key: ANTHROPIC_API_KEY for Anthropic, OPENAI_API_KEY for OpenAI (or set llm.api_key_env)"
)

DEFAULT_KEY_ENV: dict[ProviderName, str] = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
# The SDKs read these on their own; toolrig reads them too, or it would judge the endpoint (strict schemas,
# whether a key is needed) as the vendor's while the SDK talks to another server.
BASE_URL_ENV: dict[ProviderName, str] = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}


def _is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def choose_provider(model: str, base_url: str | None, forced: str = "auto") -> ProviderName:
    if forced in ("anthropic", "openai"):
        return forced  # type: ignore[return-value]
    name = model.rsplit("/", 1)[-1]
    return "anthropic" if name.startswith("claude-") and not base_url else "openai"


def settings_from(
    config: LlmConfig, *, model: str | None = None, environ: Mapping[str, str] | None = None
) -> ProviderSettings:
    """Resolve model, provider and key from config, a ``--model`` override and the environment."""
    environ = os.environ if environ is None else environ
    chosen = model or config.model
    if not chosen:
        raise RunError("config", NOT_CONFIGURED)
    provider = choose_provider(chosen, config.base_url, config.provider)
    if provider == "anthropic" and "/" in chosen and not config.base_url:
        chosen = chosen.rsplit("/", 1)[-1]  # "anthropic/claude-..." is a router's name for the same model
    base_url = config.base_url or environ.get(BASE_URL_ENV[provider]) or None
    variable = config.api_key_env or DEFAULT_KEY_ENV[provider]
    key = config.api_key or environ.get(variable, "")
    if not key:
        host = urlsplit(base_url).hostname if base_url else None
        if not _is_loopback(host):
            raise MissingKeyError(variable, provider)
        key = "not-needed"  # local servers (Ollama, vLLM, LM Studio) take any key; the SDK wants one
    return ProviderSettings(
        provider=provider,
        model=chosen,
        api_key=key,
        base_url=base_url,
        thinking=config.thinking,
        effort=config.effort,
        max_tokens=config.max_tokens,
        timeout_seconds=config.request_timeout_seconds,
        max_retries=config.max_retries,
        strict=config.strict,
    )


def make_provider(settings: ProviderSettings) -> Provider:
    if settings.provider == "anthropic":
        from toolrig.agent.providers.anthropic import AnthropicProvider

        return AnthropicProvider(settings)
    from toolrig.agent.providers.openai import OpenAIProvider

    return OpenAIProvider(settings)
