"""fetch_url and web_search: the web for a model, through the network guard only.

Trust model: URLs and pages are hostile. Every request and redirect hop goes through ``ctx.http``, which
refuses non-public addresses (unless config names them) and pins each connection to the address it
checked; bodies are read as a stream and cut at the size cap.
"""

from __future__ import annotations

import base64
import codecs
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from toolrig.context import HttpAccess, ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.http import check_request_url, whole_exchange
from toolrig.sandbox.network import NetworkDenied, NetworkSettings

if TYPE_CHECKING:
    import httpx2

_FORBIDDEN_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "proxy-authorization",
     "proxy-connection", "keep-alive"}
)  # fmt: skip
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/x-www-form")


class FetchUrlConfig(NetworkSettings):
    """Settings under ``tool_config.fetch_url``."""

    max_bytes: int = Field(default=5_000_000, ge=1_000, description="Largest body read; the rest is cut.")
    timeout_seconds: float = Field(default=30.0, gt=0, description="Connect and read timeout.")
    max_redirects: int = Field(default=5, ge=0, le=5, description="Redirects followed, each checked again.")
    user_agent: str = Field(default="toolrig-fetch/0.1", description="The User-Agent header sent.")


class FetchUrlInput(ToolInput):
    url: Annotated[str, Subject("url")] = Field(description="An http:// or https:// URL on the public internet.")
    method: Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    headers: dict[str, str] | None = Field(default=None, description="Extra request headers.")
    body: str | None = Field(default=None, description="Request body (for POST, PUT, PATCH).")
    format: Literal["raw", "text", "markdown"] = Field(
        default="markdown", description="markdown or text convert HTML pages; raw returns the body as sent."
    )
    max_bytes: int | None = Field(default=None, ge=1, description="Read at most this many bytes of the body.")


class FetchUrlOutput(ToolOutput):
    status_code: int
    headers: dict[str, str]
    body: str
    body_encoding: Literal["text", "base64"] = Field(description="base64 for binary content, text otherwise.")
    final_url: str = Field(description="The URL the body came from, after redirects.")
    truncated: bool = Field(description="True when the body was cut at the size limit.")


def require_http(ctx: ToolContext) -> HttpAccess:
    if ctx.http is None:
        raise ToolError(ErrorType.UNAVAILABLE, "No network access is configured for this call.")
    return ctx.http


def denied(reason: str, url: str) -> ToolError:
    return ToolError(
        ErrorType.DENIED,
        f"Fetching {url} was refused: {reason}.",
        "Only public http(s) addresses are allowed (and only the domains the configuration allows); "
        "do not retry this URL.",
    )


def http_failure(exc: Exception, what: str) -> ToolError:
    import httpx2

    if isinstance(exc, httpx2.InvalidURL | httpx2.UnsupportedProtocol):
        return ToolError(ErrorType.INVALID_INPUT, f"{what} failed: the URL is not usable ({exc}).")
    if isinstance(exc, httpx2.TimeoutException):
        return ToolError(ErrorType.TIMEOUT, f"{what} timed out.", "Retry later, or try another source.")
    if isinstance(exc, httpx2.TooManyRedirects):
        return ToolError(ErrorType.UNAVAILABLE, f"{what} redirected too many times.", retryable=False)
    return ToolError(ErrorType.UNAVAILABLE, f"{what} failed: {type(exc).__name__}: {exc}.")


def early_check(url: str, settings: NetworkSettings) -> None:
    """Refuse on the model's own text what needs no DNS (syntax, scheme, domain lists, literal addresses)."""
    refusal = check_request_url(url, settings.policy())
    if refusal is not None and not refusal.allowed:
        raise denied(refusal.reason, url)


def _is_text(content_type: str) -> bool:
    kind = content_type.split(";", 1)[0].strip().lower()
    return not kind or kind.startswith(_TEXT_TYPES) or kind.endswith(("+json", "+xml"))


async def _convert(text: str, content_type: str, form: str) -> str:
    if form == "raw" or "html" not in content_type.lower():
        return text
    import anyio

    from toolrig.documents import html_text

    # Off the event loop: a megabyte of markup is seconds of CPU that would stall every other call.
    return await anyio.to_thread.run_sync(
        lambda: html_text(text, "markdown" if form == "markdown" else "text"), abandon_on_cancel=True
    )


class FetchUrl(Tool[FetchUrlInput, FetchUrlOutput]):
    name = "fetch_url"
    group = "web"
    open_world = True
    config_model = FetchUrlConfig
    description = (
        "Fetch a web page or API over http(s) and return its status, headers and body. HTML is converted to "
        "markdown by default (format='text' for plain text, 'raw' for the body as sent); binary bodies come back "
        "base64. Private, loopback and cloud-metadata addresses are refused, redirects (at most 5) are checked "
        "again, and large bodies are cut (truncated=true)."
    )

    def reads_only(self, args: Mapping[str, Any] | BaseModel) -> bool:
        """GET and HEAD only read: smart approvals let them run, as seed 002 auto-approves WebFetch; POST asks."""
        method = args.get("method", "GET") if isinstance(args, Mapping) else getattr(args, "method", None)
        return method in ("GET", "HEAD")

    async def execute(self, input: FetchUrlInput, ctx: ToolContext) -> FetchUrlOutput:
        config = ctx.settings(FetchUrlConfig)
        early_check(input.url, config)
        headers = _request_headers(input.headers, config.user_agent)
        limit = min(input.max_bytes or config.max_bytes, config.max_bytes)
        http = require_http(ctx)
        import httpx2

        async with http.client(
            config.policy(), timeout=config.timeout_seconds, max_redirects=config.max_redirects
        ) as client:
            hops: list[str] = []

            async def record(request: httpx2.Request) -> None:
                hops.append(str(request.url))

            client.event_hooks = {"request": [record], "response": []}
            try:
                with whole_exchange(config.timeout_seconds, f"Fetching {input.url}"):
                    async with client.stream(
                        input.method, input.url, headers=headers, content=_body(input.body)
                    ) as response:
                        data, truncated = await _read_capped(response, limit)
            except NetworkDenied as exc:
                if len(hops) > 1:
                    raise denied(f"it redirected to {hops[-1]}, and {exc.decision.reason}", input.url) from None
                raise denied(exc.decision.reason, input.url) from None
            except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
                raise http_failure(exc, f"Fetching {input.url}") from None
        content_type = response.headers.get("content-type", "")
        if _is_text(content_type):
            decoder = codecs.getincrementaldecoder(_charset(response))(errors="replace")
            text = decoder.decode(data, final=not truncated)
            body, encoding = await _convert(text, content_type, input.format), "text"
        else:
            body, encoding = base64.b64encode(data).decode("ascii"), "base64"
        return FetchUrlOutput(
            status_code=response.status_code,
            headers={k: v for k, v in response.headers.items() if k.lower() != "set-cookie"},
            body=body,
            body_encoding=encoding,  # type: ignore[arg-type]
            final_url=str(response.url),
            truncated=truncated,
        )


def _body(text: str | None) -> bytes | None:
    if not text:
        return None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(ErrorType.INVALID_INPUT, "The body is not valid Unicode (it holds a lone surrogate).") from None


def _request_headers(given: dict[str, str] | None, user_agent: str) -> dict[str, str]:
    headers = {"User-Agent": user_agent}
    for name, value in (given or {}).items():
        if any(ch in name + value for ch in "\r\n\x00"):
            raise ToolError(ErrorType.INVALID_INPUT, f"The header {name!r} contains a line break or NUL.")
        if name.strip().lower() in _FORBIDDEN_HEADERS:
            raise ToolError(ErrorType.INVALID_INPUT, f"The header {name!r} may not be set; it is managed by toolrig.")
        headers[name] = value
    return headers


def _charset(response: httpx2.Response) -> str:
    name = response.charset_encoding or "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


async def _read_capped(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes while streaming; the rest is never downloaded."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) >= limit:
            chunks.append(chunk[: limit - size])
            return b"".join(chunks), size + len(chunk) > limit or not _finished(response)
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _finished(response: httpx2.Response) -> bool:
    length = response.headers.get("content-length")
    return length is not None and length.isdigit() and int(length) <= response.num_bytes_downloaded


# ------------------------------------------------------------------------------------------ web_search


class WebSearchConfig(NetworkSettings):
    """Settings under ``tool_config.web_search``; the key may be given as an environment variable's name."""

    provider: Literal["searxng", "brave", "tavily", "serpapi", "duckduckgo"] | None = Field(
        default=None, description="Which search API (duckduckgo needs no key)."
    )
    base_url: str | None = Field(default=None, description="The endpoint (required for SearXNG).")
    api_key: str | None = Field(default=None, description="The key itself (prefer api_key_env).")
    api_key_env: str | None = Field(default=None, description="Name of the environment variable holding the key.")
    timeout_seconds: float = Field(default=20.0, gt=0)


class WebSearchInput(ToolInput):
    query: Annotated[str, Subject("text")] = Field(
        min_length=1, max_length=400, description="What to search for, as you would type it."
    )
    num_results: int = Field(default=5, ge=1, le=20, description="How many results to return (at most 20).")


class SearchResult(ToolOutput):
    title: str
    url: str
    snippet: str


class WebSearchOutput(ToolOutput):
    results: list[SearchResult]


class WebSearch(Tool[WebSearchInput, WebSearchOutput]):
    name = "web_search"
    group = "web"
    read_only = True
    open_world = True
    config_model = WebSearchConfig
    description = (
        "Search the web and get a list of results (title, url, snippet). Use it to find pages, then fetch_url to "
        "read one. Returns at most num_results (default 5, max 20)."
    )

    async def execute(self, input: WebSearchInput, ctx: ToolContext) -> WebSearchOutput:
        from toolrig.websearch import make_provider

        config = ctx.settings(WebSearchConfig)
        if config.provider is None:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "web_search is not configured: no search provider is set.",
                "Ask the user to set tool_config.web_search.provider: duckduckgo needs no key; "
                "searxng, brave, tavily or serpapi use their own endpoint or key.",
                retryable=False,
            )
        key = config.api_key or (os.environ.get(config.api_key_env) if config.api_key_env else None)
        provider = make_provider(config.provider, base_url=config.base_url, api_key=key)
        import httpx2

        async with require_http(ctx).client(config.policy(), timeout=config.timeout_seconds) as client:
            try:
                with whole_exchange(config.timeout_seconds, "The web search"):
                    hits = await provider.search(client, input.query, input.num_results)
            except NetworkDenied as exc:
                raise ToolError(
                    ErrorType.UNAVAILABLE,
                    f"The {provider.name} endpoint is not reachable under the network policy: {exc.decision.reason}.",
                    "Ask the user to allow the endpoint (allow_loopback or allow_networks in web_search's config).",
                    retryable=False,
                ) from None
            except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
                raise http_failure(exc, f"The {provider.name} search") from None
        return WebSearchOutput(results=[SearchResult(title=h.title, url=h.url, snippet=h.snippet) for h in hits])


TOOLS = [FetchUrl(), WebSearch()]
