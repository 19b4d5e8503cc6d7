"""A subagent's file changes belong to its root's session and turn, under its own agent id: one rewind undoes both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_llm import Call, Text, reply
from toolrig.agent import RunOptions, run_agent
from toolrig.stores.checkpoints import Checkpoints, rewind, turns

pytestmark = pytest.mark.anyio


def _write(call_id: str, path: str, content: str) -> Call:
    return Call(call_id, "write_file", json.dumps({"path": path, "content": content}))


async def test_a_child_s_writes_are_rewound_with_the_parent_s_turn(
    agent_tools_rig: Any, converse: Any, workspace: Path
) -> None:
    from toolrig.tools.edit import TOOLS as EDIT

    (workspace / "shared.txt").write_text("before\n")
    spawn = Call("p2", "spawn_agents", json.dumps({"agents": [{"agent_type": "general", "prompt": "CHILD"}]}))
    converse(
        {
            "PARENT": [
                reply(_write("p1", "parent.txt", "parent\n")),
                reply(spawn),
                reply(Text("done")),
            ],
            "CHILD": [
                reply(_write("c1", "shared.txt", "child\n"), _write("c2", "child.txt", "x\n")),
                reply(Text("ok")),
            ],
        }
    )
    rig = agent_tools_rig(tools=EDIT)
    try:
        result = await run_agent("PARENT", RunOptions(), rig=rig)
        assert result.response == "done"
        rows = turns(Checkpoints(rig.workspace), result.session_id)
        assert [len(r["files"]) for r in rows] == [1, 2]  # the parent's turn, then the child's under the spawn
        log = Checkpoints(rig.workspace).read(result.session_id)
        agents = {Path(e["path"]).name: e.get("agent") for e in log if e.get("k") == "file"}
        assert agents["child.txt"] == agents["shared.txt"] != agents["parent.txt"]  # the child's own agent id
        rewind(rig.workspace, result.session_id, rows[1]["turn"])
        assert (workspace / "shared.txt").read_text() == "before\n" and not (workspace / "child.txt").exists()
        assert (workspace / "parent.txt").exists()
        rewind(rig.workspace, result.session_id, 0)
        assert not (workspace / "parent.txt").exists()
    finally:
        rig.close()
