"""Checkpoints: the file tools' changes of a session recorded before they happen, and turned back per turn."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.fake_llm import Call, FakeLLM, Text, reply
from toolrig.agent import run_agent
from toolrig.errors import ToolError
from toolrig.rig import Rig
from toolrig.scope import CallScope
from toolrig.stores.checkpoints import Checkpoints, Limits, Mark, rewind, turns

LATIN = "café façade naïve\n".encode("latin-1")
BINARY = bytes(range(256)) * 4


def _patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


def _snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every file under ``root`` (toolrig's state aside) with its bytes and mode; directories with None."""
    found: dict[str, tuple[bytes | None, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] == ".toolrig":
            continue
        mode = path.lstat().st_mode & 0o7777
        found[rel] = (None if path.is_dir() else path.read_bytes(), mode)
    return found


def _seed(root: Path) -> None:
    (root / "keep.txt").write_text("first\nsecond\n")
    (root / "latin.txt").write_bytes(LATIN)
    (root / "blob.bin").write_bytes(BINARY)
    script = root / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o750)


def _turn_calls() -> list[list[tuple[str, dict[str, Any]]]]:
    """Three turns of changes: write and edit, patch (add, delete binary, update), then more edits."""
    return [
        [
            ("write_file", {"path": "new/deep/made.txt", "content": "made in turn one\n"}),
            ("edit", {"file_path": "keep.txt", "old_string": "second", "new_string": "SECOND"}),
        ],
        [
            (
                "apply_patch",
                {
                    "patch": _patch(
                        "*** Delete File: blob.bin",
                        "*** Update File: run.sh",
                        "@@",
                        "-echo hi",
                        "+echo bye",
                        "*** Add File: added.txt",
                        "+added",
                    )
                },
            ),
            ("edit", {"file_path": "latin.txt", "old_string": "façade", "new_string": "front"}),
        ],
        [
            ("write_file", {"path": "keep.txt", "content": "rewritten\r\n"}),
            ("write_file", {"path": "new/deep/made.txt", "content": "again\n"}),
        ],
    ]


def _call(rig: Rig, session: str, turn: int, name: str, args: dict[str, Any]) -> None:
    result = rig.call_sync(name, args, scope=CallScope(session_id=session, checkpoint=Mark(session, turn)))
    assert not result.is_error, result.to_json()


@pytest.fixture
def rig(workspace: Path) -> Any:
    _seed(workspace)
    with Rig(workspace) as opened:
        yield opened


def test_rewind_to_each_turn_restores_the_exact_bytes_and_modes(rig: Rig, workspace: Path) -> None:
    states = []
    for turn, calls in enumerate(_turn_calls()):
        states.append(_snapshot(workspace))
        for name, args in calls:
            _call(rig, "s1", turn, name, args)
    assert [row["turn"] for row in turns(Checkpoints(rig.workspace), "s1")] == [0, 1, 2]
    done = rewind(rig.workspace, "s1", 1)
    assert _snapshot(workspace) == states[1]
    assert done.removed == ["added.txt"] and "blob.bin" in done.restored
    rewind(rig.workspace, "s1", 0)
    assert _snapshot(workspace) == states[0]  # the made directories are gone too
    with pytest.raises(ToolError, match="no file changes"):
        rewind(rig.workspace, "s1", 0)


def test_a_file_a_person_edited_is_refused_by_name_and_nothing_changes(rig: Rig, workspace: Path) -> None:
    for turn, calls in enumerate(_turn_calls()):
        for name, args in calls:
            _call(rig, "s2", turn, name, args)
    (workspace / "latin.txt").write_bytes(b"a person's own words\n")
    before = _snapshot(workspace)
    with pytest.raises(ToolError) as refused:
        rewind(rig.workspace, "s2", 0)
    assert "latin.txt: it was edited since" in refused.value.message
    assert "keep.txt" not in refused.value.message
    assert _snapshot(workspace) == before
    forced = rewind(rig.workspace, "s2", 0, force=True)
    assert (workspace / "latin.txt").read_bytes() == LATIN and forced.conflicts


def test_checkpoints_survive_a_new_rig_and_only_live_turns_are_listed(workspace: Path) -> None:
    _seed(workspace)
    with Rig(workspace) as first:
        _call(first, "s3", 0, "write_file", {"path": "a.txt", "content": "one\n"})
        _call(first, "s3", 1, "write_file", {"path": "a.txt", "content": "two\n"})
    with Rig(workspace) as second:
        rewind(second.workspace, "s3")  # the last turn only
        assert (workspace / "a.txt").read_text() == "one\n"
        assert [row["turn"] for row in turns(Checkpoints(second.workspace), "s3")] == [0]


def test_a_command_s_changes_are_reported_not_restored(rig: Rig, workspace: Path) -> None:
    _call(rig, "s4", 0, "write_file", {"path": "a.txt", "content": "tool\n"})
    _call(rig, "s4", 1, "run_command", {"command": "echo cmd > by_command.txt"})
    planned = rewind(rig.workspace, "s4", 0, dry_run=True)
    assert planned.by_commands == ["by_command.txt"] and planned.removed == ["a.txt"]
    rewind(rig.workspace, "s4", 0)
    assert (workspace / "by_command.txt").exists() and not (workspace / "a.txt").exists()


def test_a_file_larger_than_the_cap_is_not_restorable_and_named(workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 100)
    with Rig(workspace) as rig:
        store = Checkpoints(rig.workspace, Limits(max_file_bytes=10))
        store.record(Mark("s5", 0), "write_file", "c1", [_change(workspace / "big.txt", b"small")])
        (workspace / "big.txt").write_bytes(b"small")
        with pytest.raises(ToolError, match=r"big\.txt: it was larger"):
            rewind(rig.workspace, "s5", 0)


def test_old_sessions_expire_and_their_blobs_go(workspace: Path) -> None:
    (workspace / "f.txt").write_text("old content\n")
    with Rig(workspace) as rig:
        store = Checkpoints(rig.workspace, Limits(max_age_seconds=60))
        store.record(Mark("old", 0), "write_file", "c1", [_change(workspace / "f.txt", b"new")])
        log = rig.workspace.state_dir / "checkpoints" / "sessions" / "old.jsonl"
        os.utime(log, (1, 1))
        store.record(Mark("fresh", 0), "write_file", "c2", [_change(workspace / "g.txt", b"g")])
        assert not log.exists()
        kept = [p.name for p in (rig.workspace.state_dir / "checkpoints" / "blobs").rglob("*") if p.is_file()]
        assert hashlib.sha256(b"old content\n").hexdigest() not in kept


def test_a_planted_log_line_outside_the_workspace_is_ignored(rig: Rig, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    _call(rig, "s6", 0, "write_file", {"path": "a.txt", "content": "x\n"})
    log = rig.workspace.state_dir / "checkpoints" / "sessions" / "s6.jsonl"
    planted = {"k": "file", "turn": 0, "path": str(outside), "before": {"absent": True}, "after": None}
    with log.open("a") as handle:
        handle.write(json.dumps(planted) + "\n")
    with pytest.raises(ToolError, match="outside the workspace"):
        rewind(rig.workspace, "s6", 0)
    assert outside.read_text() == "keep me\n"


def _change(path: Path, data: bytes | None) -> Any:
    from toolrig.sandbox.journal import Change

    return Change(path, data)


@pytest.mark.anyio
async def test_an_agent_run_over_three_turns_is_rewound_by_turn(workspace: Path, llm: FakeLLM) -> None:
    _seed(workspace)
    script = []
    for number, calls in enumerate(_turn_calls()):
        blocks = [Call(f"c{number}_{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls)]
        script.append(reply(Text(f"turn {number}"), *blocks))
    llm.script(*script, reply(Text("done")))
    config = {
        "llm": {
            "provider": "anthropic",
            "model": "claude-test",
            "base_url": llm.anthropic_url,
            "api_key": "k",
            "max_retries": 0,
        }
    }
    start = _snapshot(workspace)
    with Rig(workspace, config=config) as rig:
        result = await run_agent("change things", rig=rig)
        rows = turns(Checkpoints(rig.workspace), result.session_id)
        assert len(rows) == 3 and rows[1]["files"]
        rewind(rig.workspace, result.session_id, rows[0]["turn"])
    assert _snapshot(workspace) == start


_KILLER = """
import os, signal, sys
from toolrig.sandbox.paths import Workspace
from toolrig.stores.checkpoints import rewind
left = int(sys.argv[2])
real_rename, real_unlink = os.rename, os.unlink
def counted(real):
    def step(*args, **kwargs):
        global left
        left -= 1
        if left < 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return step
os.rename, os.unlink = counted(real_rename), counted(real_unlink)
rewind(Workspace(sys.argv[1]), "s9", 0)
"""


@pytest.mark.parametrize("kill_at", range(9))  # a rewind of these changes takes 8 renames and unlinks
def test_a_rewind_killed_at_any_step_leaves_before_or_after_never_between(workspace: Path, kill_at: int) -> None:
    import signal
    import subprocess
    import sys

    from toolrig.sandbox.journal import Journal

    _seed(workspace)
    start = _snapshot(workspace)
    with Rig(workspace) as rig:
        for turn, calls in enumerate(_turn_calls()):
            for name, args in calls:
                _call(rig, "s9", turn, name, args)
    changed = _snapshot(workspace)
    done = subprocess.run([sys.executable, "-c", _KILLER, str(workspace), str(kill_at)], check=False, timeout=120)
    assert done.returncode in (0, -signal.SIGKILL)
    Journal(workspace / ".toolrig", [workspace]).recover()  # what the next rewind, write or patch does first
    after = _snapshot(workspace)
    assert after in (start, changed) or _without_empty_dirs(after) == _without_empty_dirs(start)
    if done.returncode != 0:  # killed: rewinding again finishes the job (its directories too)
        from toolrig.sandbox.paths import Workspace

        rewind(Workspace(workspace), "s9", 0)
    assert _snapshot(workspace) == start


def _without_empty_dirs(state: dict[str, tuple[bytes | None, int]]) -> dict[str, tuple[bytes | None, int]]:
    """The files alone: the directories a rewind removes after its commit point are not part of the change."""
    return {k: v for k, v in state.items() if v[0] is not None}


@given(st.text(min_size=1, max_size=300))
def test_any_session_id_names_one_plain_file_in_the_sessions_directory(session_id: str) -> None:
    from toolrig.stores.checkpoints.log import log_name

    name = log_name(session_id)
    assert "/" not in name and "\0" not in name and not name.startswith(".")
    assert name.endswith(".jsonl") and len(name.encode()) <= 255
