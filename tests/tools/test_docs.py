from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.servers import HttpServer
from toolrig.rig import Rig

GUIDE = """# Widgets guide

## Installing

Run `pip install widgets` to install the widget toolkit.

## Frobnicating

Call `widget.frobnicate(level=3)` to frobnicate a widget; levels above 9 are refused.
"""
PAGE = """<html><head><title>T</title><script>alert(1)</script></head><body>
<nav>menu</nav><h1>Sprockets</h1><p>A sprocket turns when its <b>crank</b> is wound clockwise.</p></body></html>"""


def rig_for(workspace: Path, **settings: Any) -> Rig:
    settings.setdefault("allow_loopback", True)
    return Rig(workspace, {"tool_config": {"read_docs": settings}, "approvals": {"mode": "off"}})


def requests_to(server: HttpServer, prefix: str) -> list[str]:
    return [seen.path for seen in server.seen if seen.path.startswith(prefix)]


def test_read_docs_answers_from_a_site_s_llms_full_txt(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/full/llms-full.txt", body=GUIDE, content_type="text/plain")
    with rig_for(workspace) as rig:
        result = rig.call_sync("read_docs", {"query": "how do I frobnicate", "url": http_server.url("/full")})
        assert not result.is_error, result
        first = result.output["passages"][0]
        assert "frobnicate(level=3)" in first["text"]
        assert first["heading"] == "Widgets guide > Frobnicating"
        assert first["url"] == http_server.url("/full/llms-full.txt")
        assert result.output["refreshed"] == [http_server.url("/full")]
        fetched = len(requests_to(http_server, "/full"))
        again = rig.call_sync("read_docs", {"query": "install", "url": http_server.url("/full")})
        assert again.output["refreshed"] == []  # answered from .toolrig/docs.db
        assert len(requests_to(http_server, "/full")) == fetched
        assert "pip install widgets" in again.output["passages"][0]["text"]
    assert (workspace / ".toolrig" / "docs.db").exists()


def test_llms_txt_links_are_followed_on_the_same_host_only(workspace: Path, http_server: HttpServer) -> None:
    links = (
        "# Sprocket docs\n\n- [Sprockets](/links/sprockets.html): how they turn\n"
        "- [Elsewhere](http://example.invalid/page): not ours\n"
    )
    http_server.route("/links/llms.txt", body=links, content_type="text/plain")
    http_server.route("/links/sprockets.html", body=PAGE, content_type="text/html")
    with rig_for(workspace) as rig:
        result = rig.call_sync("read_docs", {"query": "crank clockwise", "url": http_server.url("/links")})
    assert not result.is_error, result
    best = result.output["passages"][0]
    assert best["url"] == http_server.url("/links/sprockets.html")
    assert "**crank**" in best["text"] and "alert" not in best["text"] and "menu" not in best["text"]


def test_without_llms_txt_the_sitemap_gives_the_pages(workspace: Path, http_server: HttpServer) -> None:
    sitemap = f"<urlset><url><loc>{http_server.url('/map/a.html')}</loc></url></urlset>"
    http_server.route("/map/sitemap.xml", body=sitemap, content_type="application/xml")
    http_server.route("/map/a.html", body=PAGE, content_type="text/html")
    with rig_for(workspace, sites=[http_server.url("/map")]) as rig:
        result = rig.call_sync("read_docs", {"query": "sprocket"})
    assert not result.is_error, result
    assert result.output["passages"][0]["url"] == http_server.url("/map/a.html")


def test_a_site_the_policy_denies_is_refused_before_any_request(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/private/llms-full.txt", body=GUIDE, content_type="text/plain")
    config = {
        "tool_config": {"read_docs": {"allow_loopback": True}},
        "tools": {"rules": [{"tool": "read_docs", "subject": "*/private*", "verdict": "deny"}]},
    }
    with Rig(workspace, config) as rig:
        result = rig.call_sync("read_docs", {"query": "widgets", "url": http_server.url("/private")})
    assert result.is_error and result.error_type == "denied"
    assert requests_to(http_server, "/private") == []


def test_the_network_guard_refuses_a_loopback_site_unless_allowed(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/guarded/llms-full.txt", body=GUIDE, content_type="text/plain")
    with rig_for(workspace, allow_loopback=False) as rig:
        result = rig.call_sync("read_docs", {"query": "widgets", "url": http_server.url("/guarded")})
    assert result.is_error and result.error_type == "denied"
    assert requests_to(http_server, "/guarded") == []


def test_no_site_at_all_is_a_clear_input_error(workspace: Path) -> None:
    with rig_for(workspace) as rig:
        result = rig.call_sync("read_docs", {"query": "anything"})
        bad = rig.call_sync("read_docs", {"query": "anything", "url": "file:///etc/passwd"})
    assert result.is_error and result.error_type == "invalid_input"
    assert bad.is_error and bad.error_type == "invalid_input"


def test_a_docs_page_nested_deeper_than_the_converter_recurses_is_still_indexed(
    workspace: Path, http_server: HttpServer, monkeypatch: Any
) -> None:
    from tests.support.threads import record_where
    from toolrig import documents

    where = record_where(monkeypatch, documents, "html_text")
    deep = "<html><body>" + "<div>" * 3000 + "<p>The gizmo spins counterclockwise.</p>" + "</div>" * 3000
    http_server.route("/deep/index.html", body=deep + "</body></html>", content_type="text/html")
    with rig_for(workspace) as rig:
        result = rig.call_sync("read_docs", {"query": "gizmo spins", "url": http_server.url("/deep/index.html")})
    assert not result.is_error, result
    assert any("counterclockwise" in p["text"] for p in result.output["passages"])
    assert where and set(where) == {"worker thread"}  # never on the event loop


def test_a_listing_of_many_links_is_walked_only_to_max_pages() -> None:
    """A hostile llms.txt / sitemap may name ~100,000 links: the walk stops at max_pages, never O(n^2)."""
    import anyio

    from toolrig.tools.docs import ReadDocsConfig, _Fetcher

    fetched: list[str] = []
    consumed = 0

    async def text(url: str) -> str:
        fetched.append(url)
        return "page"

    def links() -> Iterator[str]:
        nonlocal consumed
        for i in range(100_000):
            consumed += 1
            yield f"http://docs.test/{i % 3}" if i < 30 else f"http://docs.test/p{i}"

    fetcher = _Fetcher(None, ReadDocsConfig(max_pages=5), "http://docs.test")  # type: ignore[arg-type]
    fetcher.text = text  # type: ignore[method-assign]
    anyio.run(fetcher.pages, links())
    assert fetched == ["http://docs.test/0", "http://docs.test/1", "http://docs.test/2", "http://docs.test/p30",
                       "http://docs.test/p31"]  # fmt: skip
    assert consumed <= 33  # the walk ends one link past the last one taken


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="htps:/[]()%@#?.x0", max_size=24), max_size=20))
def test_any_links_in_a_listing_are_taken_or_skipped_never_raised(refs: list[str]) -> None:
    import anyio

    from toolrig.tools.docs import ReadDocsConfig, _Fetcher, _joined

    async def text(url: str) -> str:
        return "page"

    fetcher = _Fetcher(None, ReadDocsConfig(max_pages=60), "http://docs.test")  # type: ignore[arg-type]
    fetcher.text = text  # type: ignore[method-assign]
    joined = (_joined("http://docs.test/llms.txt", ref) for ref in refs)
    pages = anyio.run(fetcher.pages, (link for link in joined if link is not None))
    assert all(page.url.startswith("http://docs.test") for page in pages)


def test_a_listing_with_a_link_no_parser_takes_is_still_read(workspace: Path, http_server: HttpServer) -> None:
    links = "# Links\n\n- [broken](http://[x)\n- [guide](/badlink/guide.md)\n- [again](/badlink/guide.md#top)\n"
    http_server.route("/badlink/llms.txt", body=links, content_type="text/plain")
    http_server.route("/badlink/guide.md", body=GUIDE, content_type="text/markdown")
    with rig_for(workspace) as rig:
        result = rig.call_sync("read_docs", {"query": "frobnicate", "url": http_server.url("/badlink")})
    assert not result.is_error, result
    assert result.output["passages"][0]["url"] == http_server.url("/badlink/guide.md")
