"""read_docs: answer from a documentation site's own pages, indexed locally and ranked by BM25.

Trust model: the URL and every page are hostile. Each request goes through ``ctx.http`` with this tool's
network settings (the same guard and domain lists as fetch_url), and the URL is a policy subject, so a
rule or a domain list that refuses a site refuses read_docs too. Only pages on the site's own host are
followed, at most ``max_pages`` of them, each cut at ``max_page_bytes``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urljoin, urlsplit

import anyio
from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Subject, Tool, ToolInput, ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.http import check_request_url
from toolrig.sandbox.network import NetworkDenied, NetworkSettings
from toolrig.skills.docindex import DocIndex, Page

if TYPE_CHECKING:
    import httpx2

_MD_LINK = re.compile(r"\]\((?P<url>[^)\s]+)")
_LOC = re.compile(r"<loc>\s*([^<\s]+)\s*</loc>", re.IGNORECASE)


class ReadDocsConfig(NetworkSettings):
    """Settings under ``tool_config.read_docs``."""

    sites: list[str] = Field(default_factory=list, description="Documentation sites searched when no url is given.")
    max_age_seconds: float = Field(default=86_400.0, gt=0, description="Re-fetch a site indexed longer ago.")
    max_pages: int = Field(default=60, ge=1, le=2_000, description="Pages fetched per site.")
    max_page_bytes: int = Field(default=1_000_000, ge=1_000, description="Largest page read; the rest is cut.")
    timeout_seconds: float = Field(default=30.0, gt=0)


class ReadDocsInput(ToolInput):
    query: str = Field(min_length=1, max_length=500, description="What you want to know, in a few words.")
    url: Annotated[str | None, Subject("url")] = Field(
        default=None, description="The documentation site (e.g. https://docs.example.com); default: the configured."
    )
    max_tokens: int = Field(default=2_000, ge=100, le=20_000, description="About how much text to return.")


class DocPassage(ToolOutput):
    url: str
    heading: str
    text: str


class ReadDocsOutput(ToolOutput):
    passages: list[DocPassage] = Field(description="The best passages first, each with the page it came from.")
    sites: list[str]
    refreshed: list[str] = Field(description="Sites fetched and indexed during this call.")


def _site(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolError(ErrorType.INVALID_INPUT, f"{url!r} is not an http(s) URL of a documentation site.")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def _denied(site: str, reason: str) -> ToolError:
    return ToolError(
        ErrorType.DENIED,
        f"Reading the documentation at {site} was refused: {reason}.",
        "Use a site the configuration allows, or ask the user to allow this one.",
    )


async def _to_markdown(text: str, content_type: str) -> str:
    if "html" not in content_type.lower():
        return text
    from toolrig.documents import html_text

    # Off the event loop: up to max_pages pages of seconds of CPU each would stall every other call.
    return await anyio.to_thread.run_sync(lambda: html_text(text, "markdown", drop_chrome=True), abandon_on_cancel=True)


class ReadDocs(Tool[ReadDocsInput, ReadDocsOutput]):
    name = "read_docs"
    group = "docs"
    read_only = True
    open_world = True
    config_model = ReadDocsConfig
    description = (
        "Search a documentation site and get the passages that answer a question, with the URL of each. The site "
        "(url, or the configured ones) is read through its llms.txt / llms-full.txt when it has one, else its "
        "sitemap, and indexed locally; later questions are answered from the index."
    )

    async def execute(self, input: ReadDocsInput, ctx: ToolContext) -> ReadDocsOutput:
        config = ctx.config if isinstance(ctx.config, ReadDocsConfig) else ReadDocsConfig()
        sites = [_site(input.url)] if input.url else [_site(s) for s in config.sites]
        if not sites:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                "No documentation site was given and none is configured.",
                "Pass url='https://docs.example.com', or configure tool_config.read_docs.sites.",
            )
        for site in sites:
            refusal = check_request_url(site, config.policy())
            if refusal is not None and not refusal.allowed:
                raise _denied(site, refusal.reason)
        index = DocIndex(ctx.workspace.state_dir)
        try:
            refreshed = []
            for site in sites:
                age = await anyio.to_thread.run_sync(index.age, site)
                if age is None or age > config.max_age_seconds:
                    source, pages = await _fetch_site(ctx, config, site)
                    await anyio.to_thread.run_sync(index.replace, site, source, pages)
                    refreshed.append(site)
            hits = await anyio.to_thread.run_sync(index.search, sites, input.query, 50)
        finally:
            index.close()
        budget = input.max_tokens * 4  # about four characters a token
        passages: list[DocPassage] = []
        for hit in hits:
            if budget <= 0:
                break
            text = hit.text[:budget]
            passages.append(DocPassage(url=hit.url, heading=hit.heading, text=text))
            budget -= len(text)
        return ReadDocsOutput(passages=passages, sites=sites, refreshed=refreshed)


async def _fetch_site(ctx: ToolContext, config: ReadDocsConfig, site: str) -> tuple[str, list[Page]]:
    """(how it was read, its pages): llms-full.txt, else llms.txt and the pages it links, else the sitemap."""
    if ctx.http is None:
        raise ToolError(ErrorType.UNAVAILABLE, "No network access is configured for this call.")
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(site))
    bases = list(dict.fromkeys([site, origin]))
    async with ctx.http.client(config.policy(), timeout=config.timeout_seconds, max_redirects=3) as client:
        fetch = _Fetcher(client, config, site)
        for base in bases:
            full = await fetch.text(f"{base}/llms-full.txt")
            if full is not None:
                return "llms-full.txt", [Page(f"{base}/llms-full.txt", full)]
        for base in bases:
            listing = await fetch.text(f"{base}/llms.txt")
            if listing is not None:
                pages = [Page(f"{base}/llms.txt", listing)]
                links = (_joined(f"{base}/llms.txt", m.group("url")) for m in _MD_LINK.finditer(listing))
                pages += await fetch.pages(link for link in links if link is not None)
                return "llms.txt", pages
        for base in bases:
            sitemap = await fetch.text(f"{base}/sitemap.xml")
            if sitemap is not None:
                return "sitemap.xml", await fetch.pages(_LOC.findall(sitemap))
        page = await fetch.text(site)
        if page is None:
            raise ToolError(
                ErrorType.NOT_FOUND,
                f"{site} has no llms.txt, no sitemap.xml and no page at its address.",
                "Check the URL of the documentation site.",
            )
        return "page", [Page(site, page)]


def _joined(base: str, reference: str) -> str | None:
    """``reference`` resolved against ``base``; None for one no URL parser takes (``http://[x``)."""
    try:
        return urljoin(base, reference)
    except ValueError:
        return None


class _Fetcher:
    def __init__(self, client: httpx2.AsyncClient, config: ReadDocsConfig, site: str) -> None:
        self.client = client
        self.config = config
        self.host = urlsplit(site).netloc

    async def text(self, url: str) -> str | None:
        """The page as Markdown, or None when it is missing; a refusal by the guard is an error."""
        import httpx2

        try:
            async with self.client.stream("GET", url) as response:
                if response.status_code != 200:
                    return None
                data = b""
                async for piece in response.aiter_bytes():
                    data += piece
                    if len(data) >= self.config.max_page_bytes:
                        data = data[: self.config.max_page_bytes]
                        break
                content_type = response.headers.get("content-type", "")
        except NetworkDenied as exc:
            raise _denied(url, exc.decision.reason) from None
        except httpx2.HTTPError:
            return None
        return await _to_markdown(data.decode(response.charset_encoding or "utf-8", errors="replace"), content_type)

    async def pages(self, urls: Iterable[str]) -> list[Page]:
        """Pages on the site's own host only, each once, at most ``max_pages``.

        A listing is the site's word: it may name a hundred thousand links, so they are walked once, with a
        set (not a list) for the ones already taken, and the walk stops at ``max_pages``.
        """
        chosen: dict[str, None] = {}
        for url in urls:
            if len(chosen) >= self.config.max_pages:
                break
            try:
                parts = urlsplit(url)
            except ValueError:  # '[' in a host: not a URL this site can serve
                continue
            clean = parts._replace(fragment="").geturl()
            if parts.scheme in ("http", "https") and parts.netloc == self.host:
                chosen.setdefault(clean)
        pages = []
        for url in chosen:
            text = await self.text(url)
            if text:
                pages.append(Page(url, text))
        return pages


TOOLS = [ReadDocs()]
