""" "Allow always" on a card: the terminal's semantics (an allowlist pattern, scoped to the run's agent), audited."""

from __future__ import annotations

from typing import Any

from tests.gateway.test_restore import NARROW
from tests.gateway.test_runs import _until
from tests.support.fake_llm import Call, Text, reply


def _run(gw: Any, client: Any, prompt: str, agent: str | None) -> tuple[str, Any]:
    body = {"prompt": prompt, **({"agent": agent} if agent else {})}
    run = client.post("/api/runs", json=body).json()
    return run["id"], gw.events(client, run["id"])


def test_allow_always_saves_the_pattern_for_the_runs_agent_only(serve: Any) -> None:
    gw = serve(**NARROW)
    gw.llm.script(
        reply(Call("c1", "wipe", '{"target": "x"}')),
        reply(Text("wiped x")),
        reply(Call("c2", "wipe", '{"target": "y"}')),
        reply(Text("wiped y")),
        reply(Call("c3", "wipe", '{"target": "z"}')),
    )
    with gw.client() as client:
        run_id, events = _run(gw, client, "wipe x", "cleaner")
        card = _until(events, "pending")
        assert card["suggested"] == ["wipe"]  # what "always" saves: the call's subjects, else the tool
        url = f"/api/runs/{run_id}/pending/{card['id']}"
        answered = client.post(url, json={"verdict": "allow_always", "call_id": "c1"})
        assert answered.status_code == 200, answered.text
        assert _until(events, "done")["response"] == "wiped x"
        _, events = _run(gw, client, "wipe y", "cleaner")  # the same agent: allowed without a card now
        kinds = [e["type"] for e in events]
        assert "pending" not in kinds and "tool_result" in kinds
        run_id, events = _run(gw, client, "wipe z", None)  # another agent: still asked
        assert _until(events, "pending")["call_id"] == "c3"
        client.post(f"/api/runs/{run_id}/cancel")
        rows = client.get("/api/audit?tool=wipe").json()["rows"]
        by_call = {r["call_id"]: r["approval"] for r in rows}
        assert by_call["c1"] == "allow_always"  # audited as the terminal's "always" is


def test_allow_always_is_refused_for_a_question_and_a_typed_pattern_is_the_terminals(serve: Any) -> None:
    from tests.gateway.test_runs import ASK
    from toolrig.agent.state import PendingCall
    from toolrig.gateway.channel import always_patterns

    gw = serve()
    gw.llm.script(reply(Call("q1", "ask_user", ASK)))
    with gw.client() as client:
        run_id, events = _run(gw, client, "pick", None)
        card = _until(events, "pending")
        refused = client.post(f"/api/runs/{run_id}/pending/{card['id']}", json={"verdict": "allow_always"})
        assert refused.status_code == 422
        assert client.get(f"/api/runs/{run_id}").json()["pending"][0]["id"] == card["id"]  # still open
        client.post(f"/api/runs/{run_id}/cancel")
    call = PendingCall("c", "run_command", "{}")
    assert always_patterns(call, "git *", ("run_command:git status",)) == ("run_command:git *",)
    assert always_patterns(call, None, ("run_command:git status",)) == ("run_command:git status",)
    assert always_patterns(call, "  ", ()) == ("run_command",)
    assert always_patterns(call, "read_files:src/**", ()) == ("read_files:src/**",)
