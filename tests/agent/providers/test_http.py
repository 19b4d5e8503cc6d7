"""The provider SDKs' HTTP clients: one verifying TLS context per process, none read for a plain-http model URL;
each tool list's wire form built once per provider."""

from __future__ import annotations

import ssl
from typing import Any

import anthropic
import openai
import pytest

from toolrig.agent.providers.base import ToolParams
from toolrig.agent.providers.http import sdk_http_client, verified_context


def _context(client: Any) -> ssl.SSLContext:
    return client._transport._pool._ssl_context  # type: ignore[no-any-return]


@pytest.mark.parametrize("factory", [anthropic.DefaultAsyncHttpxClient, openai.DefaultAsyncHttpxClient])
def test_a_plain_http_model_url_reads_no_ca_bundle_and_follows_no_redirect(
    factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    client = sdk_http_client(factory, "http://127.0.0.1:8080/v1")
    assert _context(client) is not verified_context()
    assert _context(client).cert_store_stats()["x509_ca"] == 0
    assert client.follow_redirects is False  # a redirect could lead to https, which this client would not verify


@pytest.mark.parametrize("url", ["https://api.anthropic.com", None, "https://127.0.0.1:9/v1"])
def test_every_other_url_shares_the_one_verifying_context(url: str | None) -> None:
    first = sdk_http_client(anthropic.DefaultAsyncHttpxClient, url)
    second = sdk_http_client(openai.DefaultAsyncHttpxClient, url)
    assert _context(first) is _context(second) is verified_context()
    assert verified_context().verify_mode == ssl.CERT_REQUIRED and verified_context().check_hostname
    assert first.follow_redirects is True  # the SDK's own default stays


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_proxy_in_the_environment_keeps_verification_for_a_plain_http_url(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "https://proxy.example:3128")
    client = sdk_http_client(anthropic.DefaultAsyncHttpxClient, "http://model.internal:8000")
    assert _context(client) is verified_context()


class _Tool:
    def __init__(self, name: str) -> None:
        self.name = name


def test_a_tool_list_is_built_once_and_reused_for_the_same_tools() -> None:
    built: list[list[str]] = []

    def build(tools: Any) -> list[dict[str, Any]]:
        built.append([t.name for t in tools])
        return [{"name": t.name} for t in tools]

    params = ToolParams(build)
    tools = [_Tool("a"), _Tool("b")]
    first = params(tools)
    assert params(list(tools)) is first  # a new list of the same tools: the same wire form
    other = params([tools[0]])
    assert other == [{"name": "a"}] and params(tools) is first
    assert built == [["a", "b"], ["a"]]


def test_the_oldest_tool_list_goes_when_more_are_kept_than_the_limit() -> None:
    params = ToolParams(lambda tools: [{"name": t.name} for t in tools])
    lists = [[_Tool(str(i))] for i in range(ToolParams.LIMIT + 1)]
    firsts = [params(tools) for tools in lists]
    assert params(lists[-1]) is firsts[-1]
    assert params(lists[0]) is not firsts[0] and params(lists[0]) == firsts[0]
