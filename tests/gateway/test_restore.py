"""A run paused before a restart: the next server shows its conversation and resumes it as the agent that paused it."""

from __future__ import annotations

import json
from typing import Any

from tests.gateway.test_runs import _until
from tests.support.fake_llm import Call, Text, reply

NARROW = {
    "approvals": {"mode": "smart", "fallback": "deny"},
    "agents": {"cleaner": {"description": "only wipes", "tools": ["wipe"]}},
}


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {str(t.get("name")) for t in body.get("tools", [])}


def test_a_restored_run_shows_its_conversation_and_resumes_as_its_agent(serve: Any) -> None:
    first = serve(**NARROW)
    first.llm.script(reply(Text("Let me wipe it."), Call("c1", "wipe", '{"target": "x"}')), reply(Text("wiped")))
    with first.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe x please", "agent": "cleaner"}).json()
        _until(first.events(client, run["id"]), "pending")
    narrowed = _tool_names(first.llm.bodies()[0])
    assert "wipe" in narrowed and "add" not in narrowed  # the agent's own, narrower tool list
    first.stop()
    second = serve(**NARROW)
    with second.client() as client:
        restored = client.get("/api/runs").json()["runs"][0]
        assert (restored["agent"], restored["prompt"]) == ("cleaner", "wipe x please")
        events = second.events(client, restored["id"])
        history = _until(events, "history")
        texts = [b.get("text") for m in history["messages"] for b in m["content"] if b["type"] == "text"]
        assert texts == ["wipe x please", "Let me wipe it."]
        calls = [b for m in history["messages"] for b in m["content"] if b["type"] == "tool_call"]
        assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [("wipe", {"target": "x"})]
        card = _until(events, "pending")
        url = f"/api/runs/{restored['id']}/pending/{card['id']}"
        assert client.post(url, json={"verdict": "allow_once"}).status_code == 200
        assert _until(events, "done")["response"] == "wiped"
    assert _tool_names(second.llm.bodies()[-1]) == narrowed  # resumed as "cleaner", not the default agent


def test_a_paused_run_whose_agent_is_gone_stays_paused(serve: Any) -> None:
    first = serve(**NARROW)
    first.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')))
    with first.client() as client:
        run = client.post("/api/runs", json={"prompt": "wipe x", "agent": "cleaner"}).json()
        _until(first.events(client, run["id"]), "pending")
        session_id = client.get(f"/api/runs/{run['id']}").json()["session_id"]
    first.stop()
    second = serve(approvals={"mode": "smart", "fallback": "deny"})  # "cleaner" removed from the config
    with second.client() as client:
        assert client.get("/api/runs").json()["runs"] == []  # not resumed with the default agent's wider tools
    assert (second.rig.workspace.state_dir / "paused" / f"{session_id}.json").is_file()  # kept for later
