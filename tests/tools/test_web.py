from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import HttpServer, Seen, refusing_port
from toolrig import Rig
from toolrig.errors import ConfigError
from toolrig.result import ToolResult

PAGE = """<!doctype html><html><head><title>Doc</title><style>p{color:red}</style>
<script>alert('x')</script></head><body><h1>Release notes</h1>
<p>Version <b>2.0</b> adds <a href="/changes">changes</a>.</p><ul><li>one</li><li>two</li></ul></body></html>"""


def web(workspace: Path, tool: str = "fetch_url", **settings: Any) -> Rig:
    settings.setdefault("allow_loopback", True)
    return Rig(workspace, config={"tool_config": {tool: settings}})


def fetch(rig: Rig, url: str, **args: Any) -> ToolResult:
    return rig.call_sync("fetch_url", {"url": url, **args})


def test_html_becomes_markdown_by_default(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/page", body=PAGE, content_type="text/html; charset=utf-8")
    result = fetch(web(workspace), http_server.url("/web/page"))
    body = result.output["body"]
    assert body.startswith("# Release notes")
    assert "Version **2.0** adds [changes](/changes)." in body
    assert "* one" in body or "- one" in body
    assert "alert" not in body and "color:red" not in body
    assert result.output["status_code"] == 200 and result.output["truncated"] is False


def test_text_format_gives_the_words_only(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/page-text", body=PAGE, content_type="text/html")
    body = fetch(web(workspace), http_server.url("/web/page-text"), format="text").output["body"]
    assert body == "Release notes\nVersion\n2.0\nadds\nchanges\n.\none\ntwo\n"


def test_raw_format_returns_the_body_as_sent(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/page-raw", body=PAGE, content_type="text/html")
    assert fetch(web(workspace), http_server.url("/web/page-raw"), format="raw").output["body"] == PAGE


def test_json_is_returned_as_text_whatever_the_format(workspace: Path, http_server: HttpServer) -> None:
    http_server.route_json("/web/data", {"a": [1, 2]})
    result = fetch(web(workspace), http_server.url("/web/data"))
    assert json.loads(result.output["body"]) == {"a": [1, 2]}
    assert result.output["headers"]["content-type"] == "application/json"


def test_binary_bodies_come_back_as_base64(workspace: Path, http_server: HttpServer) -> None:
    data = bytes(range(256))
    http_server.route("/web/bin", body=data, content_type="application/octet-stream")
    result = fetch(web(workspace), http_server.url("/web/bin"))
    assert result.output["body_encoding"] == "base64"
    assert base64.b64decode(result.output["body"]) == data


def test_bodies_are_cut_at_max_bytes_while_streaming(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/big", body="x" * 300_000, content_type="text/plain")
    result = fetch(web(workspace), http_server.url("/web/big"), max_bytes=1000)
    assert result.output["body"] == "x" * 1000
    assert result.output["truncated"] is True


def test_the_config_cap_wins_over_a_larger_request(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/big2", body="y" * 10_000, content_type="text/plain")
    result = fetch(web(workspace, max_bytes=2000), http_server.url("/web/big2"), max_bytes=50_000)
    assert len(result.output["body"]) == 2000 and result.output["truncated"] is True


def test_a_body_exactly_at_the_limit_is_not_marked_truncated(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/exact", body="z" * 1000, content_type="text/plain")
    result = fetch(web(workspace), http_server.url("/web/exact"), max_bytes=1000)
    assert result.output["truncated"] is False


def test_redirects_are_followed_and_the_final_url_reported(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/old", 301, Location="/web/new")
    http_server.route("/web/new", body="moved here", content_type="text/plain")
    result = fetch(web(workspace), http_server.url("/web/old"))
    assert result.output["body"] == "moved here"
    assert result.output["final_url"] == http_server.url("/web/new")


def test_method_headers_and_body_are_sent(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/echo", 201, body="created", content_type="text/plain")
    result = fetch(
        web(workspace), http_server.url("/web/echo"), method="POST", headers={"X-Trace": "t1"}, body='{"k": 1}'
    )
    assert result.output["status_code"] == 201
    seen = http_server.seen[-1]
    assert (seen.method, seen.headers["X-Trace"], seen.body) == ("POST", "t1", b'{"k": 1}')


@pytest.mark.parametrize(
    "headers",
    [{"Host": "internal"}, {"X-A": "v\r\nX-Injected: 1"}, {"Transfer-Encoding": "chunked"}, {"X\nB": "1"}],
)
def test_headers_that_could_smuggle_or_rewrite_the_request_are_refused(
    workspace: Path, http_server: HttpServer, headers: dict[str, str]
) -> None:
    result = fetch(web(workspace), http_server.url("/web/echo"), headers=headers)
    assert result.error_type == "invalid_input"


def test_charset_from_the_headers_is_honoured(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/web/latin1", body="café".encode("latin-1"), content_type="text/plain; charset=latin-1")
    assert fetch(web(workspace), http_server.url("/web/latin1")).output["body"] == "café"


def test_an_unreachable_host_is_unavailable(workspace: Path) -> None:
    with refusing_port() as port:
        result = fetch(web(workspace), f"http://127.0.0.1:{port}/")
    assert result.error_type == "unavailable"


def test_a_domain_allowlist_refuses_other_hosts(workspace: Path, http_server: HttpServer) -> None:
    rig = web(workspace, allowed_domains=["docs.example.com"])
    result = fetch(rig, http_server.url("/web/page"))
    assert result.error_type == "denied" and "allowlist" in result.message


def test_fetch_url_settings_are_validated_at_start_up(workspace: Path) -> None:
    with pytest.raises(ConfigError, match="allow_networks"):
        Rig(workspace, config={"tool_config": {"fetch_url": {"allow_networks": ["not-a-net"]}}}).tools()
    with pytest.raises(ConfigError, match="max_redirects"):
        Rig(workspace, config={"tool_config": {"fetch_url": {"max_redirects": 9}}}).tools()


# ------------------------------------------------------------------------------------------ web_search

SEARXNG = {
    "query": "toolrig",
    "number_of_results": 2,
    "results": [
        {"url": "https://a.example/", "title": "A", "content": "first hit", "engine": "x", "score": 1.0},
        {"url": "https://b.example/", "title": "B", "content": "second hit", "engine": "y", "score": 0.5},
        {"url": "https://c.example/", "title": "C", "content": "third hit", "engine": "y", "score": 0.2},
    ],
    "answers": [],
    "suggestions": [],
    "unresponsive_engines": [],
}
BRAVE = {
    "type": "search",
    "query": {"original": "toolrig"},
    "web": {
        "type": "search",
        "results": [
            {
                "title": "A",
                "url": "https://a.example/",
                "description": "first <strong>hit</strong>",
                "type": "search_result",
            },
            {"title": "B", "url": "https://b.example/", "description": "second hit", "type": "search_result"},
        ],
    },
}
TAVILY = {
    "query": "toolrig",
    "answer": None,
    "images": [],
    "results": [
        {"title": "A", "url": "https://a.example/", "content": "first hit", "score": 0.9, "raw_content": None},
        {"title": "B", "url": "https://b.example/", "content": "second hit", "score": 0.8, "raw_content": None},
    ],
    "response_time": 0.5,
}


def search(workspace: Path, **settings: Any) -> ToolResult:
    args = settings.pop("args", {"query": "toolrig", "num_results": 2})
    return web(workspace, "web_search", **settings).call_sync("web_search", args)


def test_searxng_results_are_read_from_its_json_api(workspace: Path, http_server: HttpServer) -> None:
    http_server.route_json("/searxng/search", SEARXNG)
    result = search(workspace, provider="searxng", base_url=http_server.url("/searxng"))
    assert result.output["results"] == [
        {"title": "A", "url": "https://a.example/", "snippet": "first hit"},
        {"title": "B", "url": "https://b.example/", "snippet": "second hit"},
    ]
    seen = http_server.seen[-1]
    assert seen.query == {"q": ["toolrig"], "format": ["json"]}


def test_brave_results_are_read_and_the_key_sent(
    workspace: Path, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    http_server.route_json("/brave/res/v1/web/search", BRAVE)
    monkeypatch.setenv("TEST_BRAVE_KEY", "brave-secret")
    result = search(
        workspace, provider="brave", base_url=http_server.url("/brave/res/v1/web/search"), api_key_env="TEST_BRAVE_KEY"
    )
    assert [r["snippet"] for r in result.output["results"]] == ["first <strong>hit</strong>", "second hit"]
    seen = http_server.seen[-1]
    assert seen.headers["X-Subscription-Token"] == "brave-secret"
    assert seen.query == {"q": ["toolrig"], "count": ["2"]}


def test_tavily_results_are_read_and_the_key_sent_as_bearer(workspace: Path, http_server: HttpServer) -> None:
    http_server.route_json("/tavily/search", TAVILY)
    result = search(workspace, provider="tavily", base_url=http_server.url("/tavily/search"), api_key="tvly-key")
    assert [r["url"] for r in result.output["results"]] == ["https://a.example/", "https://b.example/"]
    seen: Seen = http_server.seen[-1]
    assert seen.method == "POST"
    assert seen.headers["Authorization"] == "Bearer tvly-key"
    assert seen.json() == {"query": "toolrig", "max_results": 2, "search_depth": "basic"}


SERPAPI = {
    "search_metadata": {"id": "x", "status": "Success"},
    "search_parameters": {"engine": "google", "q": "toolrig"},
    "organic_results": [
        {"position": 1, "title": "A", "link": "https://a.example/", "snippet": "first hit"},
        {"position": 2, "title": "B", "link": "https://b.example/", "snippet": "second hit"},
        {"position": 3, "title": "C", "link": "https://c.example/", "snippet": "third hit"},
    ],
}

DUCKDUCKGO = """<!DOCTYPE html><html><body><div id="links" class="results">
<div class="result results_links results_links_deep result--ad "><div class="links_main links_deep result__body">
 <h2 class="result__title"><a rel="nofollow" class="result__a" href="https://ads.example/click">Sponsored</a></h2>
 <a class="result__snippet" href="https://ads.example/click">Buy now</a></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
 <h2 class="result__title"><a rel="nofollow" class="result__a"
   href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2Fdocs%3Fq%3D1&amp;rut=abc">The <b>A</b> page</a></h2>
 <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2F">first <b>hit</b></a></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
 <h2 class="result__title"><a class="result__a" href="javascript:alert(1)">Not a page</a></h2></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
 <h2 class="result__title"><a rel="nofollow" class="result__a" href="https://b.example/">B</a></h2>
 <a class="result__snippet">second hit</a></div></div>
</div></body></html>"""


def test_serpapi_results_are_read_and_the_key_sent_as_a_parameter(workspace: Path, http_server: HttpServer) -> None:
    http_server.route_json("/serpapi/search.json", SERPAPI)
    result = search(workspace, provider="serpapi", base_url=http_server.url("/serpapi/search.json"), api_key="serp")
    assert result.output["results"] == [
        {"title": "A", "url": "https://a.example/", "snippet": "first hit"},
        {"title": "B", "url": "https://b.example/", "snippet": "second hit"},
    ]
    assert http_server.seen[-1].query == {"engine": ["google"], "q": ["toolrig"], "num": ["2"], "api_key": ["serp"]}


def test_serpapi_no_results_is_an_empty_list_and_a_bad_key_a_clear_error(
    workspace: Path, http_server: HttpServer
) -> None:
    http_server.route_json("/serp-none/search.json", {"error": "Google hasn't returned any results for this query."})
    none = search(workspace, provider="serpapi", base_url=http_server.url("/serp-none/search.json"), api_key="k")
    assert none.output["results"] == []
    http_server.route_json("/serp-bad/search.json", {"error": "Invalid API key."}, status=401)
    bad = search(workspace, provider="serpapi", base_url=http_server.url("/serp-bad/search.json"), api_key="k")
    assert bad.error_type == "unavailable" and "API key" in bad.message


def test_duckduckgo_needs_no_key_skips_ads_and_unwraps_its_redirect_links(
    workspace: Path, http_server: HttpServer
) -> None:
    http_server.route("/ddg/html/", body=DUCKDUCKGO, content_type="text/html; charset=utf-8")
    result = search(workspace, provider="duckduckgo", base_url=http_server.url("/ddg/html/"), args={"query": "a b"})
    assert result.output["results"] == [
        {"title": "The A page", "url": "https://a.example/docs?q=1", "snippet": "first hit"},
        {"title": "B", "url": "https://b.example/", "snippet": "second hit"},
    ]
    seen = http_server.seen[-1]
    assert seen.method == "POST" and seen.body == b"q=a+b"


def test_duckduckgo_taking_us_for_a_bot_is_rate_limited_not_empty(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/ddg-busy/html/", status=202, body="<html></html>", content_type="text/html")
    result = search(workspace, provider="duckduckgo", base_url=http_server.url("/ddg-busy/html/"))
    assert result.error_type == "rate_limited"


def test_without_a_provider_web_search_says_it_is_not_configured(workspace: Path) -> None:
    result = Rig(workspace, config={}).call_sync("web_search", {"query": "x"})
    assert result.error_type == "unavailable" and "not configured" in result.message


def test_a_missing_key_is_a_clear_error(workspace: Path) -> None:
    result = search(workspace, provider="brave", api_key_env="TEST_UNSET_KEY_VARIABLE")
    assert result.error_type == "unavailable" and "no API key" in result.message


def test_a_rejected_key_is_reported_as_such(workspace: Path, http_server: HttpServer) -> None:
    http_server.route_json("/tavily-denied/search", {"detail": {"error": "Unauthorized"}}, status=401)
    result = search(workspace, provider="tavily", base_url=http_server.url("/tavily-denied/search"), api_key="bad")
    assert result.error_type == "unavailable" and "API key" in result.message


def test_an_unreachable_provider_is_unavailable(workspace: Path) -> None:
    with refusing_port() as port:
        result = search(workspace, provider="searxng", base_url=f"http://127.0.0.1:{port}")
    assert result.error_type == "unavailable" and "SearXNG" in result.message


def test_a_provider_rate_limit_is_passed_on(workspace: Path, http_server: HttpServer) -> None:
    http_server.route_json("/brave-busy/search", {"error": "busy"}, status=429)
    result = search(workspace, provider="brave", base_url=http_server.url("/brave-busy/search"), api_key="k")
    assert result.error_type == "rate_limited"


def test_garbage_from_a_provider_is_unavailable_not_a_crash(workspace: Path, http_server: HttpServer) -> None:
    http_server.route("/searx-garbage/search", body="<html>not json", content_type="text/html")
    result = search(workspace, provider="searxng", base_url=http_server.url("/searx-garbage"))
    assert result.error_type == "unavailable" and "not JSON" in result.message


def test_a_provider_on_loopback_needs_the_network_policy_to_allow_it(workspace: Path, http_server: HttpServer) -> None:
    result = search(workspace, provider="searxng", base_url=http_server.url("/searxng"), allow_loopback=False)
    assert result.error_type == "unavailable" and "network policy" in result.message


def test_num_results_is_capped_at_twenty(workspace: Path) -> None:
    result = search(workspace, provider="searxng", base_url="http://x.test", args={"query": "q", "num_results": 21})
    assert result.error_type == "invalid_input"


DEEP = "<html><body>" + "<div>" * 3000 + "<p>deep leaf</p>" + "</div>" * 3000 + "</body></html>"


@pytest.mark.parametrize("form", ["markdown", "text"])
def test_a_page_nested_deeper_than_the_converter_recurses_is_still_read(
    workspace: Path, http_server: HttpServer, form: str
) -> None:
    http_server.route(f"/web/deep-{form}", body=DEEP, content_type="text/html")
    result = fetch(web(workspace), http_server.url(f"/web/deep-{form}"), format=form)
    assert not result.is_error, result
    assert "deep leaf" in result.output["body"]


def test_html_is_converted_off_the_event_loop(
    workspace: Path, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seconds of CPU for a big page must not stall the loop every other call (and the timeout) runs on."""
    from tests.support.threads import record_where
    from toolrig import documents

    where = record_where(monkeypatch, documents, "html_text")
    http_server.route("/web/spied", body=PAGE, content_type="text/html")
    assert not fetch(web(workspace), http_server.url("/web/spied")).is_error
    assert where == ["worker thread"]
