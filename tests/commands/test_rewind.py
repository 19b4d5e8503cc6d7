"""``toolrig rewind`` / ``toolrig sessions rewind``: the CLI over a session's checkpoints, as a person runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.cli import app
from toolrig.rig import Rig
from toolrig.scope import CallScope
from toolrig.stores.checkpoints import Mark

TOOLRIG = str(Path(sys.executable).parent / "toolrig")
LATIN = "café façade naïve\n".encode("latin-1")
BINARY = bytes(range(256)) * 4


def _patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


PATCH = [
    "*** Delete File: blob.bin",
    "*** Update File: run.sh",
    "@@",
    "-echo hi",
    "+echo bye",
    "*** Add File: added.txt",
    "+added",
]
TURNS: list[list[tuple[str, dict[str, Any]]]] = [  # the file tools, each kind of change, a latin-1 file kept so
    [
        ("write_file", {"path": "new/deep/made.txt", "content": "made in turn one\n"}),
        ("edit", {"file_path": "keep.txt", "old_string": "second", "new_string": "SECOND"}),
    ],
    [
        ("apply_patch", {"patch": _patch(*PATCH)}),
        ("edit", {"file_path": "latin.txt", "old_string": "façade", "new_string": "front"}),
    ],
    [
        ("write_file", {"path": "keep.txt", "content": "rewritten\r\n"}),
        ("write_file", {"path": "new/deep/made.txt", "content": "again\n"}),
    ],
]


def _snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every file under ``root`` (toolrig's state aside) with its bytes and mode; directories with None."""
    found: dict[str, tuple[bytes | None, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] != ".toolrig":
            found[rel] = (None if path.is_dir() else path.read_bytes(), path.lstat().st_mode & 0o7777)
    return found


@pytest.fixture
def states(workspace: Path) -> list[dict[str, tuple[bytes | None, int]]]:
    """Session s1 over three turns (through the real tools, checkpointed); the workspace before each, and after."""
    (workspace / "keep.txt").write_text("first\nsecond\n")
    (workspace / "latin.txt").write_bytes(LATIN)
    (workspace / "blob.bin").write_bytes(BINARY)
    (workspace / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (workspace / "run.sh").chmod(0o750)
    seen = []
    with Rig(workspace) as rig:
        for turn, calls in enumerate(TURNS):
            seen.append(_snapshot(workspace))
            for name, args in calls:
                scope = CallScope(session_id="s1", checkpoint=Mark("s1", turn))
                result = rig.call_sync(name, args, scope=scope)
                assert not result.is_error, result.to_json()
    seen.append(_snapshot(workspace))
    return seen


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_list_names_each_turn_s_files(workspace: Path, states: list[Any]) -> None:
    code, out, err = invoke("rewind", "s1", "--list", "--root", str(workspace))
    assert code == 0, err
    assert out.splitlines() == [
        "turn 0: files new/deep/made.txt, keep.txt",
        "turn 1: files blob.bin, run.sh, added.txt, latin.txt",
        "turn 2: files keep.txt, new/deep/made.txt",
    ]
    code, out, _ = invoke("sessions", "rewind", "s1", "--list", "--json", "--root", str(workspace))
    rows = json.loads(out)
    assert code == 0 and [row["turn"] for row in rows] == [0, 1, 2]
    assert set(rows[0]) == {"turn", "files", "commands_changed", "agents"} and rows[0]["agents"] == [None]


def test_a_dry_run_says_what_it_would_do_and_changes_nothing(workspace: Path, states: list[Any]) -> None:
    code, out, err = invoke("rewind", "s1", "--to", "1", "--dry-run", "--root", str(workspace))
    assert code == 0, err
    assert out.splitlines() == [
        "Would rewind session s1 to before turn 1.",
        "  restored: blob.bin, run.sh, latin.txt, keep.txt, new/deep/made.txt",
        "  removed: added.txt",
    ]
    assert _snapshot(workspace) == states[-1]


def test_rewind_to_a_turn_then_to_the_start_restores_the_exact_bytes(workspace: Path, states: list[Any]) -> None:
    code, out, err = invoke("rewind", "s1", "--to", "2", "--root", str(workspace))
    assert code == 0, err
    assert out.splitlines()[0] == "Rewound session s1 to before turn 2."
    assert _snapshot(workspace) == states[2]
    code, out, err = invoke("sessions", "rewind", "s1", "--to", "start", "--root", str(workspace))
    assert code == 0, err
    assert _snapshot(workspace) == states[0]  # bytes, encodings, modes; made directories gone, deleted file back
    code, _, err = invoke("rewind", "s1", "--list", "--root", str(workspace))
    assert "s1 has no file changes to rewind" in _  # all turned back: nothing left to list


def test_the_default_is_the_last_turn_that_changed_files(workspace: Path, states: list[Any]) -> None:
    code, out, err = invoke("rewind", "s1", "--root", str(workspace))
    assert code == 0, err
    assert out.startswith("Rewound session s1 to before turn 2.") and _snapshot(workspace) == states[2]


def test_a_person_s_edit_is_refused_by_name_then_forced(workspace: Path, states: list[Any]) -> None:
    (workspace / "keep.txt").write_text("my own words\n")
    before = _snapshot(workspace)
    code, out, err = invoke("rewind", "s1", "--to", "start", "--root", str(workspace))
    assert code == 1 and out == ""
    assert "refused; nothing was changed" in err and "keep.txt: it was edited since" in err
    assert "latin.txt" not in err and "Traceback" not in err
    assert _snapshot(workspace) == before
    code, out, _ = invoke("rewind", "s1", "--to", "start", "--json", "--root", str(workspace))
    assert code == 1 and json.loads(out)["kind"] == "conflict" and "keep.txt" in json.loads(out)["message"]
    code, out, err = invoke("rewind", "s1", "--to", "start", "--force", "--root", str(workspace))
    assert code == 0, err
    assert "  overwritten (forced): keep.txt" in out.splitlines()
    assert _snapshot(workspace) == states[0]


def test_json_gives_the_plan_s_shape(workspace: Path, states: list[Any]) -> None:
    code, out, err = invoke("rewind", "s1", "--to", "1", "--json", "--dry-run", "--root", str(workspace))
    assert code == 0, err
    shown = json.loads(out)
    assert shown == {
        "session_id": "s1",
        "to_turn": 1,
        "restored": ["blob.bin", "run.sh", "latin.txt", "keep.txt", "new/deep/made.txt"],
        "removed": ["added.txt"],
        "unchanged": [],
        "conflicts": [],
        "not_kept": [],
        "changed_by_commands": [],
        "commands_fully_checked": True,
        "dry_run": True,
    }
    code, out, _ = invoke("rewind", "s1", "--to", "1", "--json", "--root", str(workspace))
    assert code == 0 and json.loads(out)["dry_run"] is False and _snapshot(workspace) == states[1]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["no-such-session"], "'no-such-session' has no file changes"),
        (["../../etc/passwd"], "'../../etc/passwd' has no file changes"),
        (["s1", "--to", "7"], "changed no file from turn 7 on"),
        (["s1", "--to", "abc"], "Invalid value for --to: a turn number, or 'start'"),
        (["s1", "--to", "-1"], "Invalid value for --to: a turn number, or 'start'"),
        (["s1", "--to", "²"], "Invalid value for --to: a turn number, or 'start'"),
        (["s1", "--to", "9" * 40], "Invalid value for --to: a turn number, or 'start'"),
        ([], "Missing argument 'SESSION_ID'"),
    ],
)
def test_a_bad_session_or_turn_is_a_usage_error_never_a_traceback(
    workspace: Path, states: list[Any], args: list[str], said: str
) -> None:
    code, out, err = invoke("rewind", *args, "--root", str(workspace))
    assert code == 2 and said in err and "Traceback" not in err + out
    assert _snapshot(workspace) == states[-1]


def test_the_installed_command_runs_in_its_own_process(workspace: Path, states: list[Any]) -> None:
    done = subprocess.run(
        [TOOLRIG, "rewind", "s1", "--to", "start", "--root", str(workspace)],
        capture_output=True, text=True, env=dict(os.environ), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _snapshot(workspace) == states[0]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(session=st.text(min_size=1, max_size=40), to=st.one_of(st.none(), st.text(max_size=12)))
def test_any_session_id_or_turn_is_answered_never_a_traceback(workspace: Path, session: str, to: str | None) -> None:
    asked = ["--json"] if to is None else ["--to", to]
    result = CliRunner().invoke(app, ["rewind", "--root", str(workspace), *asked, "--", session])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1, 2) and "Traceback" not in result.output
    assert not any(p.name != ".toolrig" for p in workspace.iterdir())  # nothing was written in the workspace
