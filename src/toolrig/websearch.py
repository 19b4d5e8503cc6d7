"""Web search providers behind one small interface: SearXNG, Brave, Tavily, SerpAPI and DuckDuckGo (no key).

Trust model: the endpoint and key come from trusted config; the query comes from a model and only ever
travels as a parameter. Answers are untrusted JSON: read defensively, every field optional, capped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from toolrig.errors import ErrorType, ToolError

if TYPE_CHECKING:
    import httpx2

MAX_RESULTS = 20
_SNIPPET_CHARS = 1_000


@dataclass(frozen=True, slots=True)
class SearchHit:
    title: str
    url: str
    snippet: str


class SearchProvider(Protocol):
    name: ClassVar[str]

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]: ...


def _text(value: Any, limit: int = _SNIPPET_CHARS) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _hits(items: Any, snippet_key: str, count: int) -> list[SearchHit]:
    hits: list[SearchHit] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            hits.append(SearchHit(_text(item.get("title"), 300), item["url"][:2000], _text(item.get(snippet_key))))
        if len(hits) >= count:
            break
    return hits


async def _json(response: httpx2.Response, provider: str) -> Any:
    if response.status_code in (401, 403):
        raise ToolError(
            ErrorType.UNAVAILABLE,
            f"{provider} refused the request ({response.status_code}): the API key is missing, wrong or not allowed.",
            "Ask the user to check the web_search key in the toolrig config.",
            retryable=False,
        )
    if response.status_code == 429:
        raise ToolError(ErrorType.RATE_LIMITED, f"{provider} says too many requests (429).")
    if response.status_code >= 400:
        raise ToolError(ErrorType.UNAVAILABLE, f"{provider} answered HTTP {response.status_code}.")
    try:
        return response.json()
    except ValueError:
        raise ToolError(ErrorType.UNAVAILABLE, f"{provider} answered something that is not JSON.") from None


@dataclass
class SearXNG:
    """A SearXNG instance's JSON API (``/search?format=json``; the instance must enable the json format)."""

    base_url: str
    name: ClassVar[str] = "SearXNG"

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        url = self.base_url.rstrip("/") + "/search"
        response = await client.get(url, params={"q": query, "format": "json"}, headers={"Accept": "application/json"})
        if response.status_code == 403:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "SearXNG refused the JSON format (403): the instance does not enable it.",
                "Ask the user to add 'json' to search.formats in the SearXNG settings.",
                retryable=False,
            )
        data = await _json(response, self.name)
        return _hits(data.get("results") if isinstance(data, dict) else None, "content", count)


@dataclass
class Brave:
    """Brave Search API web search (``GET /res/v1/web/search``, key in ``X-Subscription-Token``)."""

    api_key: str
    base_url: str = "https://api.search.brave.com/res/v1/web/search"
    name: ClassVar[str] = "Brave Search"

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        response = await client.get(
            self.base_url,
            params={"q": query, "count": count},
            headers={"Accept": "application/json", "X-Subscription-Token": self.api_key},
        )
        data = await _json(response, self.name)
        web = data.get("web") if isinstance(data, dict) else None
        return _hits(web.get("results") if isinstance(web, dict) else None, "description", count)


@dataclass
class Tavily:
    """Tavily search (``POST /search`` with a JSON body, key as a bearer token)."""

    api_key: str
    base_url: str = "https://api.tavily.com/search"
    name: ClassVar[str] = "Tavily"

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        response = await client.post(
            self.base_url,
            json={"query": query, "max_results": count, "search_depth": "basic"},
            headers={"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"},
        )
        data = await _json(response, self.name)
        return _hits(data.get("results") if isinstance(data, dict) else None, "content", count)


@dataclass
class SerpApi:
    """SerpAPI's Google results (``GET /search.json?engine=google``, key as the ``api_key`` parameter)."""

    api_key: str
    base_url: str = "https://serpapi.com/search.json"
    name: ClassVar[str] = "SerpAPI"

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        params: dict[str, str | int] = {"engine": "google", "q": query, "num": count, "api_key": self.api_key}
        response = await client.get(self.base_url, params=params, headers={"Accept": "application/json"})
        data = await _json(response, self.name)
        if isinstance(data, dict) and isinstance(data.get("error"), str) and not data.get("organic_results"):
            if "results" in data["error"].lower():  # "Google hasn't returned any results for this query."
                return []
            raise ToolError(ErrorType.UNAVAILABLE, f"SerpAPI answered an error: {data['error'][:300]}")
        items = data.get("organic_results") if isinstance(data, dict) else None
        renamed = [{**i, "url": i.get("link")} for i in items if isinstance(i, dict)] if isinstance(items, list) else []
        return _hits(renamed, "snippet", count)


@dataclass
class DuckDuckGo:
    """DuckDuckGo's HTML endpoint (``POST /html/``): needs no key, so web_search works with no account.

    The page is untrusted HTML: only result links and snippets are read, and DuckDuckGo's redirect links
    (``//duckduckgo.com/l/?uddg=<url>``) are unwrapped to the page they point at.
    """

    base_url: str = "https://html.duckduckgo.com/html/"
    name: ClassVar[str] = "DuckDuckGo"

    async def search(self, client: httpx2.AsyncClient, query: str, count: int) -> list[SearchHit]:
        from bs4 import BeautifulSoup

        response = await client.post(self.base_url, data={"q": query}, headers={"Accept": "text/html"})
        if response.status_code in (202, 403, 429):  # how it answers a client it takes for a bot
            raise ToolError(ErrorType.RATE_LIMITED, f"DuckDuckGo refused the search for now ({response.status_code}).")
        if response.status_code >= 400:
            raise ToolError(ErrorType.UNAVAILABLE, f"DuckDuckGo answered HTTP {response.status_code}.")
        page = BeautifulSoup(response.text, "html.parser")
        hits: list[SearchHit] = []
        for result in page.select(".result"):
            link = result.select_one("a.result__a")
            href = link.get("href") if link is not None else None
            if link is None or not isinstance(href, str) or "result--ad" in (result.get("class") or []):
                continue
            snippet = result.select_one(".result__snippet")
            text = snippet.get_text(" ", strip=True) if snippet is not None else ""
            url = _unwrap_redirect(href)
            if url.startswith(("http://", "https://")):
                hits.append(SearchHit(link.get_text(" ", strip=True)[:300], url[:2000], text[:_SNIPPET_CHARS]))
            if len(hits) >= count:
                break
        return hits


def _unwrap_redirect(href: str) -> str:
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(href if "://" in href else "https:" + href if href.startswith("//") else href)
    if parts.path == "/l/" and parts.hostname and parts.hostname.endswith("duckduckgo.com"):
        target = parse_qs(parts.query).get("uddg")
        if target:
            return target[0]
    return href


PROVIDERS = ("searxng", "brave", "tavily", "serpapi", "duckduckgo")


def make_provider(name: str, *, base_url: str | None, api_key: str | None) -> SearchProvider:
    """The client for a configured provider; a missing key or endpoint is a clear ``unavailable``."""
    if name == "duckduckgo":
        return DuckDuckGo(base_url) if base_url else DuckDuckGo()
    if name == "searxng":
        if not base_url:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "web_search uses SearXNG but no base_url is configured.",
                "Ask the user to set tool_config.web_search.base_url to the SearXNG instance.",
                retryable=False,
            )
        return SearXNG(base_url)
    if not api_key:
        raise ToolError(
            ErrorType.UNAVAILABLE,
            f"web_search uses {name} but has no API key.",
            "Ask the user to set tool_config.web_search.api_key_env to a variable that holds the key.",
            retryable=False,
        )
    if name == "brave":
        return Brave(api_key, base_url) if base_url else Brave(api_key)
    if name == "serpapi":
        return SerpApi(api_key, base_url) if base_url else SerpApi(api_key)
    return Tavily(api_key, base_url) if base_url else Tavily(api_key)
