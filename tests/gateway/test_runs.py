"""Runs over the API: start, follow the events live, answer approvals and questions, cancel, two at once."""

from __future__ import annotations

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
