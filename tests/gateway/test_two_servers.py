"""Two ``toolrig serve`` processes of one workspace on one PostgreSQL (the runs board there): a run started on one
is listed, approved and cancelled from the other, and its session is continued there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from tests.agent.conftest import agent_config
from tests.durable.conftest import postgres  # noqa: F401 - the real server the durable tests start
from tests.support.fake_llm import Call, FakeLLM, Text, reply

pytestmark = [pytest.mark.slow, pytest.mark.servers]
TOKEN = "two-servers-token-" + "t" * 24


@contextmanager
def serving(workspace: Path, env: dict[str, str]) -> Iterator[httpx2.Client]:
    command = [sys.executable, "-m", "toolrig", "serve", "--root", str(workspace), "--port", "0"]
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert "gateway listening on" in first, first + process.stderr.read()
        base = first.rsplit(" ", 1)[1].strip()
        with httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as client:
            yield client
    finally:
        process.terminate()
        process.wait(30)
        if process.stderr is not None:
            process.stderr.close()


def _events(client: httpx2.Client, run_id: str, until: str) -> Iterator[dict[str, Any]]:
    with client.stream("GET", f"/api/runs/{run_id}/events") as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                yield event
                if event["type"] == until:
                    return


def _first(events: Iterator[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(e for e in events if e["type"] == kind)


def test_a_run_started_on_one_server_is_approved_cancelled_and_continued_on_the_other(
    workspace: Path,
    tmp_path: Path,
    llm: FakeLLM,
    postgres: Any,  # noqa: F811
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = {
        **agent_config(llm, "anthropic"),
        "approvals": {"mode": "always", "fallback": "deny"},
        "workers": {"database_url": postgres.new_database()},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(config))  # the user's own config: trusted
    env = {**os.environ, "TOOLRIG_HOME": str(home), "TOOLRIG_GATEWAY_TOKEN": TOKEN}
    llm.reset()
    llm.script(
        reply(Call("c1", "calculate", '{"expression": "6 * 7"}')),
        reply(Text("wiped on one, approved on the other")),
        reply(Text("continued on the other")),
        reply(Call("c2", "calculate", '{"expression": "1 + 1"}')),
    )
    with ExitStack() as stack:
        one = stack.enter_context(serving(workspace, env))
        other = stack.enter_context(serving(workspace, env))
        run = one.post("/api/runs", json={"prompt": "compute"}).json()
        events = _events(one, run["id"], "run_end")
        card = _first(events, "pending")
        listed = {r["id"]: r for r in other.get("/api/runs").json()["runs"]}
        assert listed[run["id"]]["status"] == "waiting"
        assert [p["id"] for p in listed[run["id"]]["pending"]] == [card["id"]]
        assert other.get(f"/api/runs/{run['id']}/events").status_code == 409  # live events: where the run runs
        forged = other.post(f"/api/runs/{run['id']}/pending/made-up", json={"verdict": "allow_once"})
        assert forged.status_code == 404  # checked by the server running it, as its own API would
        answered = other.post(f"/api/runs/{run['id']}/pending/{card['id']}", json={"verdict": "allow_once"})
        assert answered.status_code == 200, answered.text
        assert _first(events, "tool_result")["name"] == "calculate"
        done = _first(events, "done")
        assert done["response"] == "wiped on one, approved on the other"
        session_id = done["session_id"]
        _first(events, "run_end")  # sent once the runs board has the run's end

        assert session_id in [s["id"] for s in other.get("/api/sessions").json()["sessions"]]
        again = other.post("/api/runs", json={"prompt": "go on", "session_id": session_id})
        assert again.status_code == 201, again.text
        continued = list(_events(other, again.json()["id"], "run_end"))
        assert _first(iter(continued), "done")["response"] == "continued on the other"
        messages = one.get(f"/api/sessions/{session_id}").json()["messages"]
        assert "continued on the other" in json.dumps(messages)  # one session, read on either

        second = other.post("/api/runs", json={"prompt": "compute again", "session_id": session_id}).json()
        _first(_events(other, second["id"], "run_end"), "pending")
        busy = one.post("/api/runs", json={"prompt": "me too", "session_id": session_id})
        assert busy.status_code == 409  # one run per session, across the servers
        cancelled = one.post(f"/api/runs/{second['id']}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        end = _first(_events(other, second["id"], "run_end"), "run_end")
        assert end["status"] in ("aborted", "failed")
