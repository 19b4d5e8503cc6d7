"""Runs over the API: start, follow the events live, answer approvals and questions, cancel, two at once."""

from __future__ import annotations

import json
from typing import Any

from tests.support.fake_llm import Call, Text, reply


def test_a_run_streams_the_events_toolrig_run_json_prints_in_order(serve: Any) -> None:
    gw = serve()
    gw.llm.script(reply(Text("Hel", "lo")))
    with gw.client() as client:
        started = client.post("/api/runs", json={"prompt": "hi"})
        assert started.status_code == 201, started.text
        run = started.json()
        events = list(gw.events(client, run["id"]))
        types = [e["type"] for e in events]
        assert types[0] == "init" and types[-1] == "run_end"
        assert "".join(e["text"] for e in events if e["type"] == "stream_text") == "Hello"
        assert types.index("done") < types.index("run_end")
        done = next(e for e in events if e["type"] == "done")
        assert done["response"] == "Hello" and done["stop_reason"] == "completed"
        info = client.get(f"/api/runs/{run['id']}").json()
        assert info["status"] == "completed" and info["session_id"] == done["session_id"]


SMART = {"approvals": {"mode": "smart", "fallback": "deny"}}
ASK = '{"questions": [{"question": "Which database?", "options": ["PostgreSQL", "SQLite"]}]}'


def _until(events: Any, kind: str) -> dict[str, Any]:
    for event in events:
        if event["type"] == kind:
            return dict(event)
    raise AssertionError(f"the stream ended without a {kind!r} event")


def test_an_approved_call_runs_once_and_its_id_cannot_be_replayed(serve: Any) -> None:
    gw = serve(**SMART)
    gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')), reply(Text("wiped")))
    with gw.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe x"}).json()
        events = gw.events(client, run["id"])
        card = _until(events, "pending")
        assert (card["kind"], card["tool"], card["call_id"]) == ("approval", "wipe", "c1")
        assert json.loads(card["arguments"]) == {"target": "x"}
        assert [p["id"] for p in client.get(f"/api/runs/{run['id']}").json()["pending"]] == [card["id"]]
        url = f"/api/runs/{run['id']}/pending/{card['id']}"
        wrong_call = client.post(url, json={"verdict": "allow_once", "call_id": "c2"})
        assert wrong_call.status_code == 409  # bound to its call: an answer naming another is refused
        answered = client.post(url, json={"verdict": "allow_once", "call_id": "c1"})
        assert answered.status_code == 200, answered.text
        result = _until(events, "tool_result")
        assert result["name"] == "wipe" and not result["is_error"]
        assert _until(events, "done")["response"] == "wiped"
        replay = client.post(url, json={"verdict": "allow_once"})
        assert replay.status_code == 404  # single use
        forged = client.post(f"/api/runs/{run['id']}/pending/made-up", json={"verdict": "allow_once"})
        assert forged.status_code == 404
        refused = [r for r in client.get("/api/audit").json()["rows"] if str(r["approval"]).startswith("refused:")]
        shown = [(r["tool"], r["call_id"]) for r in refused]
        assert shown == [("wipe", "c1"), ("(unknown request)", ""), ("(unknown request)", "")]  # each one audited


def test_a_denied_call_does_not_run(serve: Any) -> None:
    gw = serve(**SMART)
    gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')), reply(Text("ok, not wiped")))
    with gw.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe x"}).json()
        events = gw.events(client, run["id"])
        card = _until(events, "pending")
        client.post(f"/api/runs/{run['id']}/pending/{card['id']}", json={"verdict": "deny", "reason": "no"})
        result = _until(events, "tool_result")
        assert result["is_error"]
        _until(events, "run_end")


def test_an_ask_user_question_is_answered_by_picking_an_option(serve: Any) -> None:
    gw = serve()
    gw.llm.script(reply(Call("q1", "ask_user", ASK)), reply(Text("SQLite it is")))
    with gw.client() as client:
        run = client.post("/api/runs", json={"prompt": "pick"}).json()
        events = gw.events(client, run["id"])
        card = _until(events, "pending")
        assert card["kind"] == "question" and card["questions"][0]["question"] == "Which database?"
        url = f"/api/runs/{run['id']}/pending/{card['id']}"
        assert client.post(url, json={"answers": []}).status_code == 422  # one answer per question
        assert client.post(url, json={"answers": [{"selected": ["SQLite"]}]}).status_code == 200
        result = _until(events, "tool_result")
        assert "SQLite" in result["preview"]
        _until(events, "run_end")
    asked = gw.llm.bodies()[-1]["messages"][-1]["content"][0]["content"]
    assert "SQLite" in str(asked)


def test_cancel_stops_a_run_waiting_for_approval_and_withdraws_its_card(serve: Any) -> None:
    gw = serve(**SMART)
    gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')))
    with gw.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe x"}).json()
        events = gw.events(client, run["id"])
        card = _until(events, "pending")
        assert client.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert _until(events, "pending_withdrawn")["id"] == card["id"]
        end = _until(events, "run_end")
        assert end["status"] in ("aborted", "failed")
        late = client.post(f"/api/runs/{run['id']}/pending/{card['id']}", json={"verdict": "allow_once"})
        assert late.status_code == 404  # stale
    assert len(gw.llm.requests) == 1  # the model was not asked again


def test_two_runs_at_once_on_two_sessions_keep_their_events_apart(serve: Any) -> None:
    gw = serve(**SMART)

    def responder(body: dict[str, Any]) -> Any:
        prompt = str(body["messages"][0]["content"])
        tag = "A" if "run A" in prompt else "B"
        if len(body["messages"]) == 1:
            return reply(Call(f"call{tag}", "wipe", json.dumps({"target": tag})))
        return reply(Text(f"answer {tag}"))

    gw.llm.responder = responder
    try:
        with gw.client() as client:
            a = client.post("/api/runs", json={"prompt": "run A"}).json()
            b = client.post("/api/runs", json={"prompt": "run B"}).json()
            events_a, events_b = gw.events(client, a["id"]), gw.events(client, b["id"])
            card_a, card_b = _until(events_a, "pending"), _until(events_b, "pending")
            shown = (json.loads(card_a["arguments"]), json.loads(card_b["arguments"]))
            assert shown == ({"target": "A"}, {"target": "B"})  # both wait at once
            assert client.post(f"/api/runs/{a['id']}/pending/{card_b['id']}", json={}).status_code == 404
            client.post(f"/api/runs/{b['id']}/pending/{card_b['id']}", json={"verdict": "allow_once"})
            client.post(f"/api/runs/{a['id']}/pending/{card_a['id']}", json={"verdict": "allow_once"})
            done_a, done_b = _until(events_a, "done"), _until(events_b, "done")
            assert (done_a["response"], done_b["response"]) == ("answer A", "answer B")
            assert done_a["session_id"] != done_b["session_id"]
            all_a = list(gw.events(client, a["id"]))
            assert all(e.get("id") != "callB" for e in all_a)
            again = client.post("/api/runs", json={"prompt": "run A again", "session_id": done_a["session_id"]})
            assert again.status_code == 201
            assert _until(gw.events(client, again.json()["id"]), "done")["session_id"] == done_a["session_id"]
    finally:
        gw.llm.responder = None


def test_a_run_paused_for_approval_is_answered_after_the_server_restarts(serve: Any) -> None:
    first = serve(**SMART)
    first.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')), reply(Text("wiped after the restart")))
    with first.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe x"}).json()
        card = _until(first.events(client, run["id"]), "pending")
        session_id = client.get(f"/api/runs/{run['id']}").json()["session_id"]
    first.stop()
    second = serve(**SMART)
    with second.client() as client:
        runs = client.get("/api/runs").json()["runs"]
        assert [(r["status"], [p["call_id"] for p in r["pending"]]) for r in runs] == [("waiting", ["c1"])]
        restored = runs[0]
        assert restored["session_id"] == session_id
        old = client.post(f"/api/runs/{restored['id']}/pending/{card['id']}", json={"verdict": "allow_once"})
        assert old.status_code == 404  # the card ids of the stopped server are spent
        fresh = restored["pending"][0]["id"]
        assert (
            client.post(f"/api/runs/{restored['id']}/pending/{fresh}", json={"verdict": "allow_once"}).status_code
            == 200
        )
        events = list(second.events(client, restored["id"]))
        assert _until(iter(events), "tool_result")["name"] == "wipe"
        assert _until(iter(events), "done")["response"] == "wiped after the restart"


def test_a_pause_another_process_resumed_first_ends_the_run_with_a_state_error(serve: Any) -> None:
    from toolrig.commands import _paused_runs as paused_runs

    gw = serve(**SMART)
    gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')))
    with gw.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe x"}).json()
        events = gw.events(client, run["id"])
        card = _until(events, "pending")
        session_id = client.get(f"/api/runs/{run['id']}").json()["session_id"]
        paused_runs.take(gw.rig.workspace.state_dir, session_id)  # as `toolrig run --resume` elsewhere would
        client.post(f"/api/runs/{run['id']}/pending/{card['id']}", json={"verdict": "allow_once"})
        error = _until(events, "error")
        assert error["kind"] == "state" and "already resumed" in error["message"]
        assert _until(events, "run_end")["status"] == "failed"
    assert len(gw.llm.requests) == 1  # the call did not run twice
