"""Several users on one gateway: each sees and steers only their own runs and sessions (the operator sees all,
``--shared`` lets everyone); another user's run or session is as unknown as a made-up id; the audit says whose."""

from __future__ import annotations

from typing import Any

import httpx2

from tests.gateway.conftest import TOKEN
from tests.gateway.test_runs import SMART, _until
from tests.support.fake_llm import Call, Text, reply

ALICE, BOB = "alice-token-" + "a" * 24, "bob-token-" + "b" * 24
USERS = {"alice": ALICE, "bob": BOB}


def _as(gw: Any, token: str) -> httpx2.Client:
    return httpx2.Client(base_url=gw.base, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _waiting_run(gw: Any, client: httpx2.Client) -> tuple[dict[str, Any], dict[str, Any], str]:
    run = client.post("/api/runs", json={"prompt": "wipe x"}).json()
    card = _until(gw.events(client, run["id"]), "pending")
    return run, card, client.get(f"/api/runs/{run['id']}").json()["session_id"]


def test_a_user_cannot_read_cancel_answer_or_continue_another_users_run(serve: Any) -> None:
    gw = serve(users=USERS, **SMART)
    gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')), reply(Text("wiped for alice")))
    with _as(gw, ALICE) as alice, _as(gw, BOB) as bob, gw.client() as operator:
        run, card, session_id = _waiting_run(gw, alice)
        assert alice.get(f"/api/runs/{run['id']}").json()["user"] == "alice"
        rid = run["id"]
        for response in (
            bob.get(f"/api/runs/{rid}"),
            bob.get(f"/api/runs/{rid}/events"),
            bob.post(f"/api/runs/{rid}/cancel"),
            bob.post(f"/api/runs/{rid}/pending/{card['id']}", json={"verdict": "allow_once", "call_id": "c1"}),
            bob.get(f"/api/sessions/{session_id}"),
            bob.get(f"/api/sessions/{session_id}/notes"),
            bob.post("/api/runs", json={"prompt": "mine now", "session_id": session_id}),
        ):
            assert response.status_code == 404, response.text  # as unknown as a made-up id: nothing leaks
        assert bob.get("/api/runs").json()["runs"] == []
        assert bob.get("/api/sessions").json()["sessions"] == []
        assert bob.get("/api/tasks").status_code == 403 and bob.get("/api/schedules").status_code == 403
        assert [r["id"] for r in operator.get("/api/runs").json()["runs"]] == [rid]  # the operator sees all
        assert client_status(alice, rid) == "waiting"  # bob's attempts changed nothing
        answered = alice.post(f"/api/runs/{rid}/pending/{card['id']}", json={"verdict": "allow_once"})
        assert answered.status_code == 200
        done = [e for e in gw.events(alice, rid) if e["type"] == "done"]
        assert done[-1]["response"] == "wiped for alice"
        assert [s["id"] for s in alice.get("/api/sessions").json()["sessions"]] == [session_id]
        rows = alice.get("/api/audit").json()["rows"]
        wipe = next(r for r in rows if r["tool"] == "wipe" and r["call_id"] == "c1")
        assert wipe["user"] == "alice"  # the audit says whose run made the call
        refused = [r for r in operator.get("/api/audit").json()["rows"] if "another user" in str(r["approval"])]
        assert len(refused) == 1 and "alice" in str(refused[0]["args"])  # bob's try at answering is audited
        assert bob.get("/api/audit").json()["rows"] == []  # and bob does not see alice's calls


def client_status(client: httpx2.Client, run_id: str) -> str:
    return str(client.get(f"/api/runs/{run_id}").json()["status"])


def test_shared_users_see_and_steer_each_others_runs(serve: Any) -> None:
    gw = serve(users=USERS, shared=True, **SMART)
    gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')), reply(Text("bob approved it")))
    with _as(gw, ALICE) as alice, _as(gw, BOB) as bob:
        run, card, _ = _waiting_run(gw, alice)
        assert [r["id"] for r in bob.get("/api/runs").json()["runs"]] == [run["id"]]
        url = f"/api/runs/{run['id']}/pending/{card['id']}"
        assert bob.post(url, json={"verdict": "allow_once"}).status_code == 200
        events = list(gw.events(bob, run["id"]))
        assert _until(iter(events), "pending_answered")["by"] == "bob"  # who answered, in the stream
        assert [e for e in events if e["type"] == "done"][-1]["response"] == "bob approved it"


def test_each_users_token_logs_in_as_that_user_and_a_wrong_one_as_nobody(serve: Any) -> None:
    gw = serve(users=USERS)
    with httpx2.Client(base_url=gw.base, timeout=30) as browser:
        assert browser.get(f"/login?token={BOB}").status_code == 303
        cookie = browser.cookies.get("toolrig_gateway")
    with httpx2.Client(base_url=gw.base, timeout=30) as browser:
        browser.get(f"/login?token={TOKEN}")
        assert browser.cookies.get("toolrig_gateway") not in (None, cookie)  # the operator's cookie is another
    with httpx2.Client(base_url=gw.base, timeout=30) as stranger:
        assert stranger.get("/login?token=" + "z" * 40).status_code == 401
        assert stranger.get("/api/runs", headers={"Authorization": "Bearer " + "z" * 40}).status_code == 401


def test_a_users_paused_run_stays_theirs_after_a_restart(serve: Any) -> None:
    first = serve(users=USERS, **SMART)
    first.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')), reply(Text("still alice's")))
    with _as(first, ALICE) as alice:
        _waiting_run(first, alice)
    first.stop()
    second = serve(users=USERS, **SMART)
    with _as(second, ALICE) as alice, _as(second, BOB) as bob:
        restored = alice.get("/api/runs").json()["runs"]
        assert [(r["user"], r["status"]) for r in restored] == [("alice", "waiting")]
        assert bob.get("/api/runs").json()["runs"] == []
        assert bob.get(f"/api/runs/{restored[0]['id']}").status_code == 404


def test_a_users_page_cookie_is_that_user_not_the_operator(serve: Any) -> None:
    gw = serve(users=USERS, **SMART)
    gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')))
    with _as(gw, ALICE) as alice, httpx2.Client(base_url=gw.base, timeout=30) as bobs_browser:
        run, card, _ = _waiting_run(gw, alice)
        assert bobs_browser.get(f"/login?token={BOB}").status_code == 303
        assert bobs_browser.get("/api/runs").json()["runs"] == []  # the cookie is bob's, not the operator's
        page = {"origin": gw.base}
        answer = bobs_browser.post(f"/api/runs/{run['id']}/pending/{card['id']}", json={}, headers=page)
        assert answer.status_code == 404
        alice.post(f"/api/runs/{run['id']}/cancel")
