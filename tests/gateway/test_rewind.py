"""Rewinding a session's files over the API: turns listed, a dry run first, all or nothing, refused by name when a
person edited a file (unless forced), refused while a run of the session goes, another user's session a 404, audited.

The sessions are real (a run through the gateway); their file changes are made by the real file tools under the
session's checkpoint mark, as an agent's turn makes them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import httpx2

from tests.gateway.test_runs import SMART, _until
from tests.gateway.test_users import ALICE, BOB, USERS, _as
from tests.support.fake_llm import Call, Text, reply
from toolrig.rig import Rig
from toolrig.scope import CallScope
from toolrig.stores.checkpoints import Checkpoints, Mark

HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">&amp;\u202e.txt'
BEFORE = b"\x00\xffbefore\r\nno newline at the end"


def _session(gw: Any, client: httpx2.Client) -> str:
    """A real session: one finished run through the gateway (as ``client``: a user's run makes it theirs)."""
    gw.llm.script(reply(Text("ok")))
    run = client.post("/api/runs", json={"prompt": "hi"}).json()
    events = list(gw.events(client, run["id"]))
    assert events[-1]["status"] == "completed", events
    return str(events[0]["session_id"])


def _write(workspace: Path, session: str, turn: int, path: str, content: str, agent: str | None = None) -> None:
    with Rig(workspace) as rig:
        scope = CallScope(session_id=session, checkpoint=Mark(session, turn, agent))
        result = rig.call_sync("write_file", {"path": path, "content": content}, scope=scope)
        assert not result.is_error, result.to_json()


def _agent_turns(workspace: Path, session: str) -> None:
    """Turn 0 rewrites a binary file; turn 1 (a subagent's) creates a hostile name in a new folder; a command too."""
    data = workspace / "data.bin"
    data.write_bytes(BEFORE)
    os.chmod(data, 0o640)
    _write(workspace, session, 0, "data.bin", "the agent's version\n")
    _write(workspace, session, 1, f"made/{HOSTILE_NAME}", "new\n", agent="helper-1")
    with Rig(workspace) as rig:
        Checkpoints(rig.workspace).record_commands(Mark(session, 1, "helper-1"), "run_command", "c9", ["built.o"], True)


def _rewind(client: httpx2.Client, session: str, **body: Any) -> httpx2.Response:
    return client.post(f"/api/sessions/{session}/rewind", json=body)


def test_turns_are_listed_a_dry_run_changes_nothing_and_a_rewind_restores_the_exact_bytes(
    serve: Any, workspace: Path
) -> None:
    gw = serve()
    with gw.client() as client:
        session = _session(gw, client)
        _agent_turns(workspace, session)
        listed = client.get(f"/api/sessions/{session}/turns")
        assert listed.status_code == 200, listed.text
        assert listed.json() == {
            "session_id": session,
            "running": False,
            "turns": [
                {"turn": 0, "files": ["data.bin"], "agents": [None], "commands_changed": []},
                {"turn": 1, "files": [f"made/{HOSTILE_NAME}"], "agents": ["helper-1"], "commands_changed": ["built.o"]},
            ],
        }
        dry = _rewind(client, session, turn=0)  # a dry run unless asked otherwise
        assert dry.status_code == 200, dry.text
        plan = dry.json()
        assert (plan["dry_run"], plan["done"], plan["would_refuse"]) == (True, False, False)
        assert plan["restored"] == ["data.bin"] and plan["removed"] == [f"made/{HOSTILE_NAME}"]
        assert plan["changed_by_commands"] == ["built.o"]
        assert (workspace / "data.bin").read_bytes() == b"the agent's version\n"  # nothing changed
        done = _rewind(client, session, turn=0, dry_run=False)
        assert done.status_code == 200, done.text
        assert done.json()["done"] is True and done.json()["restored"] == ["data.bin"]
        assert (workspace / "data.bin").read_bytes() == BEFORE
        assert stat.S_IMODE(os.stat(workspace / "data.bin").st_mode) == 0o640
        assert not (workspace / "made").exists()  # the created file and the folder made for it
        assert client.get(f"/api/sessions/{session}/turns").json()["turns"] == []
        assert _rewind(client, session, turn=0, dry_run=False).status_code == 404  # nothing left to rewind
        rows = [r for r in client.get("/api/audit?tool=rewind").json()["rows"] if r["session"] == session]
        assert len(rows) == 1 and rows[0]["decision"] == "allow" and rows[0]["origin"] == "web"
        assert rows[0]["args"]["turn"] == 0 and rows[0]["args"]["removed"] == [f"made/{HOSTILE_NAME}"]
        assert set(rows[0]["subjects"]) == {"data.bin", f"made/{HOSTILE_NAME}"}
        assert "by the operator" in rows[0]["approval"]


def test_a_persons_edit_refuses_the_rewind_by_name_until_forced(serve: Any, workspace: Path) -> None:
    gw = serve()
    with gw.client() as client:
        session = _session(gw, client)
        (workspace / "kept.txt").write_text("kept before\n")
        (workspace / "notes.txt").write_text("notes before\n")
        _write(workspace, session, 0, "kept.txt", "agent\n")
        _write(workspace, session, 0, "notes.txt", "agent\n")
        (workspace / "notes.txt").write_bytes(b"a person's own words\n")
        dry = _rewind(client, session, turn=0).json()
        assert dry["would_refuse"] is True and [c["path"] for c in dry["conflicts"]] == ["notes.txt"]
        refused = _rewind(client, session, turn=0, dry_run=False)
        assert refused.status_code == 409, refused.text
        body = refused.json()
        assert "notes.txt: it was edited since" in body["error"] and "kept.txt" not in body["error"]
        assert body["done"] is False and [c["path"] for c in body["conflicts"]] == ["notes.txt"]
        assert (workspace / "notes.txt").read_bytes() == b"a person's own words\n"  # all or nothing
        assert (workspace / "kept.txt").read_text() == "agent\n"
        forced = _rewind(client, session, turn=0, dry_run=False, force=True)
        assert forced.status_code == 200, forced.text
        assert forced.json()["forced"] is True and forced.json()["done"] is True
        assert (workspace / "notes.txt").read_text() == "notes before\n"
        assert (workspace / "kept.txt").read_text() == "kept before\n"
        rows = [r for r in client.get("/api/audit?tool=rewind").json()["rows"] if r["session"] == session]
        assert [r["decision"] for r in rows] == ["deny", "allow"]
        assert rows[0]["subjects"] == ["notes.txt"] and rows[1]["args"]["force"] is True


HOSTILE_IDS = ["nope", "..", "%2e%2e%2fetc", "a" * 5000, "x%00y", "ü😀", "' OR 1=1 --", "%E2%80%AE", "h-" + "0" * 40]
BAD_BODIES = [
    {},
    {"turn": -1},
    {"turn": "0"},
    {"turn": True},
    {"turn": 0.5},
    {"turn": 10**12},
    {"turn": 0, "dry_run": "false"},
    {"turn": 0, "force": 1},
    {"turn": 0, "extra": 1},
]


def test_hostile_ids_bodies_and_origins_are_refused_with_a_reason(serve: Any, workspace: Path) -> None:
    gw = serve()
    with gw.client() as client:
        session = _session(gw, client)
        _write(workspace, session, 0, "a.txt", "agent\n")
        for session_id in HOSTILE_IDS:
            assert client.get(f"/api/sessions/{session_id}/turns").status_code == 404, session_id
            response = _rewind(client, session_id, turn=0, dry_run=False)
            assert response.status_code == 404, session_id
            if response.headers["content-type"] == "application/json":  # else the path matched no route at all
                assert response.json() == {"error": "no session has this id"}, session_id
        for body in BAD_BODIES:
            response = client.post(f"/api/sessions/{session}/rewind", json=body)
            assert response.status_code == 422 and response.json()["error"], body
        assert client.post(f"/api/sessions/{session}/rewind", content=b"{not json").status_code == 422
        assert _rewind(client, session, turn=7, dry_run=False).status_code == 404  # no change from turn 7 on
        foreign = client.post(
            f"/api/sessions/{session}/rewind",
            json={"turn": 0, "dry_run": False},
            headers={"Origin": "http://x.example"},
        )
        assert foreign.status_code == 403
    with gw.client(auth=False) as browser:
        browser.get(f"/login?token={gw.token}")
        no_origin = browser.post(f"/api/sessions/{session}/rewind", json={"turn": 0, "dry_run": False})
        assert no_origin.status_code == 401  # CSRF: a state change by cookie must say it comes from the page
    assert (workspace / "a.txt").read_text() == "agent\n"  # none of it changed a file


def test_another_users_session_is_as_unknown_as_a_made_up_id(serve: Any, workspace: Path) -> None:
    gw = serve(users=USERS)
    with _as(gw, ALICE) as alice, _as(gw, BOB) as bob:
        session = _session(gw, alice)
        _write(workspace, session, 0, "alice.txt", "alice's agent\n")
        made_up = _rewind(bob, "s-made-up", turn=0)
        for response in (
            bob.get(f"/api/sessions/{session}/turns"),
            _rewind(bob, session, turn=0),
            _rewind(bob, session, turn=0, dry_run=False, force=True),
        ):
            assert (response.status_code, response.json()) == (made_up.status_code, made_up.json()) == (404, {
                "error": "no session has this id"
            })  # fmt: skip
        assert (workspace / "alice.txt").exists()
        assert bob.get("/api/audit?tool=rewind").json()["rows"] == []
        assert _rewind(alice, session, turn=0, dry_run=False).status_code == 200
        assert not (workspace / "alice.txt").exists()
        rows = alice.get("/api/audit?tool=rewind").json()["rows"]
        assert len(rows) == 1 and rows[0]["args"]["user"] == "alice" and "by alice" in rows[0]["approval"]
        assert rows[0]["user"] == "alice"


def test_a_rewind_is_refused_while_a_run_of_the_session_goes(serve: Any, workspace: Path) -> None:
    gw = serve(**SMART)
    with gw.client() as client:
        session = _session(gw, client)
        _write(workspace, session, 0, "a.txt", "agent\n")
        gw.llm.script(reply(Call("c1", "wipe", '{"target": "x"}')), reply(Text("never")))
        run = client.post("/api/runs", json={"prompt": "wipe x", "session_id": session}).json()
        _until(gw.events(client, run["id"]), "pending")  # the run waits for a person: it is going
        assert client.get(f"/api/sessions/{session}/turns").json()["running"] is True
        busy = _rewind(client, session, turn=0, dry_run=False)
        assert busy.status_code == 409 and "a run is going on this session" in busy.json()["error"]
        assert (workspace / "a.txt").exists()
        assert _rewind(client, session, turn=0).status_code == 200  # a dry run only reads: allowed
        client.post(f"/api/runs/{run['id']}/cancel")
        assert list(gw.events(client, run["id"]))[-1]["type"] == "run_end"
        assert _rewind(client, session, turn=0, dry_run=False).status_code == 200
        assert not (workspace / "a.txt").exists()


_OTHER_RUN = """
import sys, anyio
from toolrig.stores.checkpoints.lease import run_lease
async def main():
    async with run_lease(sys.argv[1], sys.argv[2]):
        print("held", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
anyio.run(main)
"""


def test_a_run_of_the_session_in_another_process_refuses_the_rewind_until_killed(serve: Any, workspace: Path) -> None:
    import signal
    import subprocess
    import sys

    gw = serve()
    with gw.client() as client:
        session = _session(gw, client)
        _write(workspace, session, 0, "a.txt", "agent\n")
        command = [sys.executable, "-c", _OTHER_RUN, str(workspace / ".toolrig"), session]
        with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as other:
            assert other.stdout is not None and other.stdout.readline() == "held\n"  # its lease, as a run holds it
            assert client.get(f"/api/sessions/{session}/turns").json()["running"] is True
            busy = _rewind(client, session, turn=0, dry_run=False)
            assert busy.status_code == 409 and "a run is going on this session" in busy.json()["error"]
            assert (workspace / "a.txt").exists()
            other.send_signal(signal.SIGKILL)  # the kernel drops the lease with the process
            other.wait(timeout=60)
        assert client.get(f"/api/sessions/{session}/turns").json()["running"] is False
        assert _rewind(client, session, turn=0, dry_run=False).status_code == 200
        assert not (workspace / "a.txt").exists()


def test_the_openapi_document_describes_the_rewind_routes(serve: Any) -> None:
    gw = serve()
    with gw.client() as client:
        doc = client.get("/api/openapi.json").json()
    rewind = doc["paths"]["/api/sessions/{session_id}/rewind"]["post"]
    assert rewind["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Rewind"}
    assert "409" in rewind["responses"]
    schemas = doc["components"]["schemas"]
    assert schemas["Rewind"]["properties"]["dry_run"]["default"] is True
    assert {"Turns", "TurnChanges", "RewindResult", "FileNote"} <= set(schemas)


def test_any_session_id_or_body_is_a_404_or_a_422_never_a_crash(workspace: Path) -> None:
    """Ids and bodies are open input: straight through the handlers' own code, without a server per example."""
    import pydantic
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from toolrig.gateway import models as m
    from toolrig.gateway import reads, rewinds
    from toolrig.gateway.owners import OPERATOR, Viewer

    with Rig(workspace) as rig:

        @settings(max_examples=60, deadline=None)
        @given(session_id=st.text(max_size=300), turn=st.integers(min_value=0, max_value=10**9))
        def unknown(session_id: str, turn: int) -> None:
            for viewer in (OPERATOR, Viewer("bob", sees_all=False)):
                try:
                    rewinds.list_turns(rig, session_id, viewer)
                    raise AssertionError(f"{session_id!r} is no session")
                except reads.NotFound:
                    pass
                try:
                    rewinds.rewind(rig, session_id, turn, viewer, dry_run=False, force=True)
                    raise AssertionError(f"{session_id!r} is no session")
                except reads.NotFound:
                    pass

        @settings(max_examples=100, deadline=None)
        @given(body=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20), _containers))
        def bodies(body: Any) -> None:
            import json

            sent = body if isinstance(body, dict) else {"turn": body}
            try:
                parsed = m.Rewind.model_validate_json(json.dumps(sent))
            except pydantic.ValidationError:
                return
            assert 0 <= parsed.turn <= 10**9 and isinstance(parsed.dry_run, bool) and isinstance(parsed.force, bool)

        unknown()
        bodies()
        assert not list(rig.workspace.state_dir.glob("checkpoints/sessions/*.jsonl"))  # no log was made for one


def _containers(children: Any) -> Any:
    from hypothesis import strategies as st

    keys = st.sampled_from(["turn", "dry_run", "force", "extra"]) | st.text(max_size=5)
    return st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=4)
