"""A cloned repository's `.toolrig/` holding symlinks: no store follows them (review D2, state dir like code)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.file_helpers import Caller
from toolrig.errors import ErrorType, ToolError
from toolrig.sandbox.statedir import StatePath
from toolrig.stores.outputs import OutputStore
from toolrig.stores.sqlite import Database

SECRET = "OUTSIDE-SECRET-7f3a"
HANDLE = "out_0000000000000000"


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "dir" / f"{HANDLE}.txt").write_text(f"{SECRET}\n")
    (outside / "dir" / "d.xml").write_text(f"<a>{SECRET}</a>")
    (outside / "dir" / "index.sqlite").write_text(SECRET)
    (outside / "db").write_text(SECRET)
    return outside


def _snapshot(root: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(os.path.join(directory, name), root)] = None
        for name in files:
            path = os.path.join(directory, name)
            found[os.path.relpath(path, root)] = Path(path).read_bytes()
    return found


# Where a repository can plant a link: (link inside the workspace, target inside the outside tree).
SEEDS: dict[str, list[tuple[str, str]]] = {
    "state dir is a link": [(".toolrig", "dir")],
    "outputs dir is a link": [(".toolrig/outputs", "dir")],
    "output file is a link": [(f".toolrig/outputs/{HANDLE}.txt", "secret.txt")],
    "librarian dir is a link": [(".toolrig/librarian", "dir")],
    "collection is a link": [(".toolrig/librarian/c", "dir")],
    "document is a link": [(".toolrig/librarian/c/d.xml", "dir/d.xml")],
    "librarian index is a link": [(".toolrig/librarian/index.sqlite", "db")],
    "kv file is a link": [(".toolrig/kv.sqlite", "db")],
    "kv journal is a link": [(".toolrig/kv.sqlite-wal", "db")],
    "audit db is a link": [(".toolrig/audit.db", "db")],
    "memory dir is a link": [(".toolrig/memory", "dir")],
}

OPERATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "read_output": ("read_output", {"handle": HANDLE}),
    "librarian_get": ("librarian_get", {"path": "c/d.xml"}),
    "librarian_store": ("librarian_store", {"collection": "c", "document_name": "n.xml", "content": "<a>x</a>"}),
    "librarian_query": ("librarian_query", {"query": "collection('c')//a/string()"}),
    "librarian_search": ("librarian_search", {"query": "secret"}),
    "key_value_set": ("key_value_set", {"key": "k", "value": "v"}),
    "key_value_get": ("key_value_get", {"key": "k"}),
    "memory_search": ("memory_search", {"query": "secret"}),
}


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("seed", SEEDS)
def test_no_tool_reads_or_writes_through_a_symlink_planted_in_the_state_dir(
    tmp_path: Path, workspace: Path, seed: str, operation: str
) -> None:
    outside = _outside(tmp_path)
    for link, target in SEEDS[seed]:
        (workspace / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(outside / target, workspace / link)
    before = _snapshot(outside)
    name, args = OPERATIONS[operation]
    caller = Caller(workspace, {"audit": {"enabled": True}} if "audit" in seed else None)
    result = caller(name, **args).model_dump(mode="json")
    caller.rig.close()
    assert SECRET not in json.dumps(result)
    assert result.get("error_type") != "internal", result
    assert _snapshot(outside) == before


def test_review_r02_librarian_and_read_output_follow_no_committed_symlink(
    tmp_path: Path, workspace: Path, toolrig_home: Path
) -> None:
    hooks = toolrig_home / "hooks"
    hooks.mkdir()
    (workspace / ".toolrig" / "librarian").mkdir(parents=True)
    (workspace / ".toolrig" / "outputs").mkdir()
    outside = _outside(tmp_path)
    os.symlink(outside / "secret.txt", workspace / ".toolrig" / "outputs" / f"{HANDLE}.txt")
    os.symlink(outside, workspace / ".toolrig" / "librarian" / "etc")
    os.symlink(hooks, workspace / ".toolrig" / "librarian" / "hk")
    call = Caller(workspace)
    for name, args in [("read_output", {"handle": HANDLE}), ("librarian_get", {"path": "etc/secret.txt"})]:
        result = call(name, **args)
        assert result.is_error and result.error_type == "denied", result
        assert SECRET not in json.dumps(result.model_dump(mode="json"))
    stored = call(
        "librarian_store", collection="hk", document_name="before_tool.pwn.sh", content="<a>x\nexit 0\n</a>\n"
    )
    assert stored.is_error and stored.error_type == "denied"
    assert "rm -r" in (stored.next_action_hint or "")
    assert list(hooks.iterdir()) == []
    call.rig.close()


def test_a_state_file_reached_through_a_symlinked_state_dir_is_refused(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    os.symlink(outside / "dir", tmp_path / ".toolrig")
    with pytest.raises(ToolError) as caught:
        OutputStore(tmp_path / ".toolrig" / "outputs").save("x")
    assert caught.value.error_type is ErrorType.DENIED
    with pytest.raises(ToolError):
        Database(tmp_path / ".toolrig" / "audit.db")
    with pytest.raises(ToolError):
        Database.shared(tmp_path / ".toolrig" / "kv.sqlite")
    assert not (outside / "dir" / "outputs").exists()
    assert not (outside / "dir" / "audit.db").exists()


def test_no_state_write_lands_in_a_hooks_directory_whatever_the_path(toolrig_home: Path) -> None:
    (toolrig_home / "hooks").mkdir()
    with pytest.raises(ToolError) as caught:
        StatePath.of(toolrig_home).child("hooks").write_bytes("before_tool.x.sh", data=b"touch /tmp/x\n")
    assert caught.value.error_type is ErrorType.DENIED
    assert list((toolrig_home / "hooks").iterdir()) == []


def test_a_state_dir_without_symlinks_still_works(workspace: Path) -> None:
    call = Caller(workspace)
    assert not call("librarian_store", collection="c", document_name="d.xml", content="<a>hello</a>").is_error
    assert call.ok("librarian_get", path="c/d.xml")["content"] == "<a>hello</a>"
    assert call.ok("librarian_query", query="collection('c')//a/string()")["results"] == ["hello"]
    call.rig.close()
    store = OutputStore(workspace / ".toolrig" / "outputs")
    handle = store.save("page \ud800 text")
    assert store.read(handle) == ("page \ud800 text", 11)


@pytest.mark.parametrize("link", [".toolrig", ".toolrig/logs", ".toolrig/logs/mcp-peer.log"])
def test_mcp_server_logs_are_not_appended_through_a_planted_symlink(tmp_path: Path, workspace: Path, link: str) -> None:
    outside = _outside(tmp_path)
    (workspace / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside / ("secret.txt" if link.endswith(".log") else "dir"), workspace / link)
    before = _snapshot(outside)
    with pytest.raises(ToolError) as caught:
        StatePath.of(workspace / ".toolrig" / "logs").open_append("mcp-peer.log")
    assert caught.value.error_type is ErrorType.DENIED
    assert _snapshot(outside) == before
