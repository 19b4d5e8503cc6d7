"""Who may use the gateway and what every read endpoint answers, hostile requests included."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.fake_llm import Call, Text, reply
from toolrig.adapters.http_auth import TokenError
from toolrig.gateway.auth import COOKIE, cookie_value, gateway_guard


def test_without_the_token_the_api_answers_401_and_the_page_still_loads(serve: Any) -> None:
    gw = serve()
    with gw.client(auth=False) as client:
        for method, path in [("GET", "/api/sessions"), ("POST", "/api/runs"), ("GET", "/api/openapi.json"),
                             ("GET", "/api/audit"), ("POST", "/api/runs/x/cancel")]:  # fmt: skip
            response = client.request(method, path, json={"prompt": "x"})
            assert response.status_code == 401, path
            assert response.headers["www-authenticate"].startswith("Bearer")
        wrong = client.get("/api/sessions", headers={"Authorization": "Bearer " + "y" * 40})
        assert wrong.status_code == 401
        page = client.get("/")
        assert page.status_code == 200 and '<script src="/static/app.js"' in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "default-src 'none'" in page.headers["content-security-policy"]


def test_a_foreign_origin_or_host_is_refused_even_with_the_token(serve: Any) -> None:
    gw = serve()
    with gw.client() as client:
        assert client.get("/api/sessions", headers={"Origin": "http://evil.example"}).status_code == 403
        assert client.get("/api/sessions", headers={"Host": "evil.example:80"}).status_code == 421
        assert client.get("/", headers={"Host": "rebound.example"}).status_code == 421  # DNS rebinding


def test_the_login_link_sets_an_httponly_cookie_and_the_cookie_needs_the_page_origin_to_change_anything(
    serve: Any,
) -> None:
    gw = serve()
    gw.llm.script(reply(Text("ok")))
    with gw.client(auth=False, follow_redirects=False) as client:
        bad = client.get("/login?token=" + "z" * 40)
        assert bad.status_code == 401 and COOKIE not in client.cookies
        login = client.get(f"/login?token={gw.token}")
        assert login.status_code == 303 and login.headers["location"] == "/"
        set_cookie = login.headers["set-cookie"]
        assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and gw.token not in set_cookie
        assert client.get("/api/sessions").status_code == 200  # a read with the cookie
        cross_site = client.get("/api/sessions", headers={"Sec-Fetch-Site": "cross-site"})
        assert cross_site.status_code == 401
        no_origin = client.post("/api/runs", json={"prompt": "hi"})
        assert no_origin.status_code == 401  # CSRF: a state change by cookie must say it comes from the page
        from_page = client.post("/api/runs", json={"prompt": "hi"}, headers={"Origin": gw.base})
        assert from_page.status_code == 201
        assert list(gw.events(client, from_page.json()["id"]))[-1]["status"] == "completed"
    assert cookie_value(gw.token) != cookie_value(gw.token + "x")


def test_a_tokenless_gateway_is_refused_beyond_loopback() -> None:
    with pytest.raises(TokenError):
        gateway_guard(lambda *a: None, host="0.0.0.0", port=8780, token=None)  # noqa: S104


def test_malformed_oversized_and_unknown_requests_get_a_reason_never_a_traceback(serve: Any) -> None:
    gw = serve()
    with gw.client() as client:
        assert client.post("/api/runs", content=b"{not json").status_code == 422
        assert client.post("/api/runs", json={"prompt": ""}).status_code == 422
        assert client.post("/api/runs", json={"prompt": "x", "extra": 1}).status_code == 422
        assert client.post("/api/runs", json={"prompt": "x", "session_id": "../../etc"}).status_code == 422
        assert client.post("/api/runs", json={"prompt": "x", "session_id": "nope"}).status_code == 404
        assert client.post("/api/runs", json={"prompt": "x", "agent": "nobody"}).status_code == 422
        huge = client.post("/api/runs", content=b'{"prompt": "' + b"a" * 1_100_000 + b'"}')
        assert huge.status_code == 413
        assert client.get("/api/runs/nope").status_code == 404
        assert client.get("/api/runs/nope/events").status_code == 404
        assert client.post("/api/runs/nope/pending/x", json={}).status_code == 404
        assert client.get("/api/sessions/nope").status_code == 404
        assert client.get("/api/sessions/nope/notes").status_code == 404
        assert client.get("/api/sessions?limit=0").status_code == 422
        assert client.get("/api/audit?since=yesterday-ish").status_code == 422
        assert client.get("/static/../../etc/passwd").status_code == 404
        for response in (client.get("/api/runs/nope"), client.get("/api/audit?limit=x")):
            assert set(response.json()) == {"error"}


def test_sessions_notes_and_audit_read_what_a_run_did(serve: Any) -> None:
    gw = serve()
    todos = '{"todos": [{"task": "wipe", "status": "in_progress"}]}'
    gw.llm.script(reply(Call("t1", "write_todos", todos), Call("a1", "add", '{"a": 1, "b": 2}')), reply(Text("3")))
    with gw.client() as client:
        run = client.post("/api/runs", json={"prompt": "add"}).json()
        events = list(gw.events(client, run["id"]))
        assert any(e["type"] == "todos" for e in events)
        session_id = next(e["session_id"] for e in events if e["type"] == "init")
        listed = client.get("/api/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [session_id]
        detail = client.get(f"/api/sessions/{session_id}").json()
        assert {c["name"] for c in detail["tool_calls"]} == {"write_todos", "add"}
        notes = client.get(f"/api/sessions/{session_id}/notes").json()
        assert notes["todos"] == [{"task": "wipe", "status": "in_progress"}]
        audit = client.get("/api/audit", params={"tool": "add", "since": "1h"}).json()["rows"]
        assert [row["tool"] for row in audit] == ["add"] and audit[0]["session"] == session_id
        assert client.get("/api/audit", params={"agent": "someone-else"}).json()["rows"] == []
        runs = client.get("/api/runs").json()["runs"]
        assert [r["id"] for r in runs] == [run["id"]]


def test_the_openapi_document_names_every_route_and_its_models(serve: Any) -> None:
    gw = serve()
    with gw.client() as client:
        doc = client.get("/api/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    assert {"/api/runs", "/api/runs/{run_id}/events", "/api/runs/{run_id}/pending/{pending_id}", "/api/audit"} <= set(
        doc["paths"]
    )
    assert {"StartRun", "RunInfo", "Answer", "SessionDetail", "Rows"} <= set(doc["components"]["schemas"])
    json.dumps(doc)


def test_tasks_and_schedules_answer_rows_or_say_what_is_missing(serve: Any) -> None:
    gw = serve()
    with gw.client() as client:
        for path in ("/api/tasks", "/api/schedules"):
            response = client.get(path)
            assert response.status_code in (200, 503), response.text
            assert ("rows" in response.json()) == (response.status_code == 200)


def test_any_run_id_is_a_404_never_a_server_error(serve: Any) -> None:
    """Ids reach the runs board's database for runs this server does not run: none may break it."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    gw = serve()
    with gw.client() as client:

        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.text(min_size=1, max_size=300).filter(lambda t: "/" not in t and t not in (".", "..")))
        def check(run_id: str) -> None:
            from urllib.parse import quote

            path = f"/api/runs/{quote(run_id, safe='')}"
            for response in (
                client.get(path),
                client.post(f"{path}/cancel"),
                client.post(f"{path}/pending/x", json={"verdict": "deny"}),
                client.get(f"{path}/events"),
            ):
                assert response.status_code == 404, (run_id, response.status_code, response.text)

        check()
