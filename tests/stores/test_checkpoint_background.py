"""Checkpoints see what a background command changes: a look when it starts and when it ends or is stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolrig.rig import Rig
from toolrig.sandbox.background import BackgroundJobs
from toolrig.scope import CallScope
from toolrig.stores.checkpoints import Checkpoints, Mark, rewind, turns

pytestmark = pytest.mark.anyio


async def _ok(rig: Rig, scope: CallScope, name: str, **args: Any) -> dict[str, Any]:
    result = json.loads((await rig.call(name, args, scope=scope)).to_json())
    assert not result["is_error"], result
    return dict(result["output"])


async def _until_done(rig: Rig, scope: CallScope, job: str) -> None:
    with anyio.fail_after(60):
        while (await _ok(rig, scope, "command_output", id=job, wait_seconds=30))["status"] == "running":
            pass


@pytest.mark.parametrize("ending", ["exits", "stopped"])
async def test_a_background_command_s_changes_land_in_the_turn_that_started_it(workspace: Path, ending: str) -> None:
    command = "echo made > by_bg.txt; while [ ! -e go ]; do sleep 0.02; done; echo later > late.txt"
    if ending == "stopped":
        command = "echo made > by_bg.txt; echo ready; while :; do sleep 0.02; done"
    with Rig(workspace) as rig:
        async with BackgroundJobs.open() as jobs:
            turn0 = CallScope(session_id="s", checkpoint=Mark("s", 0), background=jobs)
            turn1 = CallScope(session_id="s", checkpoint=Mark("s", 1), background=jobs)
            await _ok(rig, turn0, "write_file", path="tool.txt", content="by a tool\n")
            job = (await _ok(rig, turn0, "run_command", command=command, background=True))["background_id"]
            await _ok(rig, turn1, "write_file", path="turn1.txt", content="later turn\n")
            if ending == "exits":
                (workspace / "go").write_text("")
                await _until_done(rig, turn1, job)
            else:
                with anyio.fail_after(60):
                    while "ready" not in (await _ok(rig, turn1, "command_output", id=job, wait_seconds=30))["stdout"]:
                        pass
                await _ok(rig, turn1, "stop_command", id=job)
        rows = {row["turn"]: row for row in turns(Checkpoints(rig.workspace), "s")}
        assert "by_bg.txt" in rows[0]["commands_changed"]
        assert ("late.txt" in rows[0]["commands_changed"]) == (ending == "exits")
        assert rows[1]["commands_changed"] == []  # the look belongs to the call that started the command
        rewind(rig.workspace, "s", 1)  # its line came after turn 1's: turning turn 1 back leaves turn 0's report
        [row] = turns(Checkpoints(rig.workspace), "s")
        assert row["turn"] == 0 and "by_bg.txt" in row["commands_changed"]
        done = rewind(rig.workspace, "s", 0)
    assert "by_bg.txt" in done.by_commands  # reported, not restored
    assert (workspace / "by_bg.txt").read_text() == "made\n"
    assert not (workspace / "tool.txt").exists() and not (workspace / "turn1.txt").exists()


async def test_a_background_command_outside_a_checkpointed_run_is_not_looked_at(workspace: Path) -> None:
    with Rig(workspace) as rig:
        async with BackgroundJobs.open() as jobs:
            scope = CallScope(session_id="s", background=jobs)
            job = (await _ok(rig, scope, "run_command", command="echo x > f.txt", background=True))["background_id"]
            await _until_done(rig, scope, job)
        assert turns(Checkpoints(rig.workspace), "s") == []
