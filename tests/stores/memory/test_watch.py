from __future__ import annotations

import gc
from pathlib import Path

from tests.support.inotify import instances_held, no_instance_left
from toolrig.rig import Rig
from toolrig.stores.memory import MemoryIndex
from toolrig.stores.memory.watch import DirectoryWatch


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_watch_made_with_no_instance_left_asks_for_walks_and_watches_once_one_is_free(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    with no_instance_left():
        watch = DirectoryWatch(tmp_path)
        assert watch.take() is None and watch.take() is None  # walk everything, every time
    try:
        assert watch.take() is None and watch.active  # got one: this walk also watches
        watch.watch(["", "memory"])
        write(tmp_path, "memory/a.md", "x\n")
        assert watch.take() == {"memory/a.md"}
    finally:
        watch.close()
    gc.collect()  # instances of earlier tests' unreachable stores would otherwise close mid-count
    held = instances_held()
    assert watch.take() is None and not watch.active and instances_held() == held  # closed: never reopens


def test_memory_search_with_no_inotify_instance_left_sees_every_change_and_watches_again_later(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    write(root, "memory/a.md", "alpha okapi\n")
    index = MemoryIndex(root, tmp_path / "state" / "memory.sqlite")
    try:
        with no_instance_left():
            fallback = MemoryIndex(root, tmp_path / "state" / "fallback.sqlite")
            for current in (index, fallback):
                current.refresh()
            write(root, "memory/new/b.md", "bravo okapi\n")
            (root / "memory" / "a.md").write_text("alpha changed\n")
            for current in (index, fallback):
                current.refresh()
                assert [hit.file for hit in current.search("okapi")] == ["memory/new/b.md"]
        write(root, "memory/c.md", "charlie okapi\n")
        fallback.refresh()  # an instance is free again: this walk takes one and watches
        assert fallback._watch.active
        (root / "memory" / "new" / "b.md").unlink()
        fallback.refresh()
        assert [hit.file for hit in fallback.search("okapi")] == ["memory/c.md"]
    finally:
        index.close()
        fallback.close()


def test_the_memory_tools_answer_without_error_when_no_inotify_instance_is_left(workspace: Path) -> None:
    with Rig(workspace) as rig, no_instance_left():
        written = rig.call_sync("memory_write", {"file_path": "memory/animals.md", "content": "A quokka smiles."})
        found = rig.call_sync("memory_search", {"query": "quokka"})
        assert not written.is_error and not found.is_error, found.message
        assert "quokka smiles" in str(found.output)
        rig.call_sync(
            "memory_write", {"file_path": "memory/animals.md", "content": "A numbat digs.", "mode": "overwrite"}
        )
        found = rig.call_sync("memory_search", {"query": "numbat"})
        assert not found.is_error and "numbat digs" in str(found.output)
