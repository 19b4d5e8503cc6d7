from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolrig.stores.memory import MemoryIndex, TerminalProgress


@pytest.fixture(autouse=True, params=["inotify", "walk"])
def freshness(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every index test runs with inotify (Linux) and with the plain stat walk used elsewhere."""
    if request.param == "walk":
        monkeypatch.setattr("toolrig.stores.memory.watch._libc", lambda: None)
    return str(request.param)


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_index(tmp_path: Path) -> tuple[Path, MemoryIndex]:
    root = tmp_path / "ws"
    root.mkdir()
    return root, MemoryIndex(root, tmp_path / "state" / "memory.sqlite")


def test_index_ranks_the_paragraph_that_matches_best_first(tmp_path: Path) -> None:
    root, index = make_index(tmp_path)
    write(root, "MEMORY.md", "# People\nAlice prefers tea.\n\n# Stack\nWe deploy with Postgres and Redis.\n")
    write(root, "memory/db.md", "Postgres 16 is the database.\nPostgres backups run nightly.\n")
    index.refresh()
    hits = index.search("postgres backups")
    assert (hits[0].file, hits[0].lines) == ("memory/db.md", "1-2")
    assert hits[1].file == "MEMORY.md" and hits[1].lines == "4-5"
    assert hits[0].score > hits[1].score > 0


def test_index_only_rereads_files_whose_size_or_mtime_changed(tmp_path: Path) -> None:
    root, index = make_index(tmp_path)
    for n in range(5):
        write(root, f"memory/n{n}.md", f"note number {n}\n")
    assert index.refresh().indexed == 5
    assert index.refresh().indexed == 0
    write(root, "memory/n3.md", "note number three, rewritten\n")
    report = index.refresh()
    assert (report.indexed, report.unchanged) == (1, 4)
    assert [h.file for h in index.search("rewritten")] == ["memory/n3.md"]
    assert index.search("number 3") == [] or all(h.file != "memory/n3.md" for h in index.search('"number 3"'))


def test_index_skips_a_file_whose_mtime_changed_but_content_did_not(tmp_path: Path) -> None:
    root, index = make_index(tmp_path)
    path = write(root, "memory/a.md", "same words\n")
    index.refresh()
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000_000))
    assert index.refresh().indexed == 0
    assert index.refresh().unchanged == 1


def test_index_drops_deleted_files_from_results(tmp_path: Path) -> None:
    root, index = make_index(tmp_path)
    write(root, "memory/keep.md", "giraffe facts\n")
    gone = write(root, "memory/gone.md", "giraffe rumours\n")
    index.refresh()
    gone.unlink()
    assert index.refresh().removed == 1
    assert [h.file for h in index.search("giraffe")] == ["memory/keep.md"]


def test_index_reads_only_memory_files_and_never_follows_symlinks(tmp_path: Path) -> None:
    root, index = make_index(tmp_path)
    write(root, "notes.md", "zebra outside memory\n")
    write(root, "memory/readme.txt", "zebra in a text file\n")
    outside = write(tmp_path, "secret/secret.md", "zebra secret\n")
    (root / "memory").mkdir(exist_ok=True)
    (root / "memory" / "link.md").symlink_to(outside)
    (root / "memory" / "linkdir").symlink_to(outside.parent)
    write(root, "memory.md", "zebra in memory.md\n")
    index.refresh()
    assert [h.file for h in index.search("zebra")] == ["memory.md"]


def test_index_survives_reopening_without_reindexing(tmp_path: Path) -> None:
    root, index = make_index(tmp_path)
    write(root, "MEMORY.md", "persistent fact\n")
    index.refresh()
    index.close()
    again = MemoryIndex(root, tmp_path / "state" / "memory.sqlite")
    assert again.refresh().indexed == 0
    assert again.search("persistent")[0].file == "MEMORY.md"


def test_index_finds_files_in_a_directory_made_after_the_first_search(tmp_path: Path, freshness: str) -> None:
    root, index = make_index(tmp_path)
    write(root, "memory/a.md", "first\n")
    index.refresh()
    assert index._watch.active is (freshness == "inotify")
    write(root, "memory/new/deeper/b.md", "okapi in a new folder\n")
    with (root / "memory" / "a.md").open("a") as handle:
        handle.write("appended okapi\n")
    index.refresh()
    assert sorted(h.file for h in index.search("okapi")) == ["memory/a.md", "memory/new/deeper/b.md"]
    (root / "memory" / "new" / "deeper" / "b.md").unlink()
    (root / "memory" / "a.md").rename(root / "memory" / "c.md")
    index.refresh()
    assert [h.file for h in index.search("okapi")] == ["memory/c.md"]


def test_progress_bar_draws_on_a_terminal_and_stays_silent_on_a_pipe(tmp_path: Path) -> None:
    main, secondary = os.openpty()
    with open(secondary, "w", encoding="utf-8") as terminal:
        bar = TerminalProgress("indexing", stream=terminal)
        bar(500, 1000)
        bar(1000, 1000)
    drawn = ""
    while True:  # the terminal side is closed: read to its end (Linux reports EIO there)
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk.decode()
    os.close(main)
    assert "[###############...............] 500/1000 files" in drawn
    assert "1000/1000 files" in drawn
    piped = (tmp_path / "log.txt").open("w", encoding="utf-8")
    TerminalProgress("indexing", stream=piped)(1, 2)
    piped.close()
    assert (tmp_path / "log.txt").read_text() == ""


def test_a_word_in_most_paragraphs_does_not_drive_the_ranking_and_its_matches_fill_in_newest_first(
    tmp_path: Path,
) -> None:
    from toolrig.stores.memory.index import COMMON_ROWS

    root, index = make_index(tmp_path)
    paragraphs = [f"the team met on day {n}" for n in range(COMMON_ROWS + 50)]
    write(root, "memory/log.md", "\n\n".join(paragraphs) + "\n")
    index.refresh()
    write(root, "memory/zz.md", "the team picked Postgres\n\nPostgres and the team again\n")
    index.refresh()  # indexed after log.md: its paragraphs are the newest
    hits = index.search("team postgres", max_results=4)
    assert [hit.file for hit in hits[:2]] == ["memory/zz.md", "memory/zz.md"]
    assert all(hit.score > 0 for hit in hits[:2])
    assert [hit.score for hit in hits[2:]] == [0.0, 0.0]  # common-word fill-ins, newest first
    only_common = index.search("team", max_results=3)
    assert [hit.file for hit in only_common] == ["memory/zz.md", "memory/zz.md", "memory/log.md"]
    assert only_common[2].snippet == paragraphs[-1]  # the newest paragraph of the older file


def test_the_periodic_audit_walk_runs_beside_searches_and_catches_what_inotify_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    monkeypatch.setattr("toolrig.stores.memory.index.FULL_WALK_SECONDS", 0.0)
    root, index = make_index(tmp_path)
    write(root, "memory/a.md", "alpha\n")
    index.refresh()
    write(root, "memory/b.md", "bravo\n")
    index._watch.take()  # the kernel's events are lost, as on a network filesystem
    index.refresh()  # starts the audit in a thread; this refresh does not wait for it
    while index._auditing:
        time.sleep(0.01)
    write(root, "memory/c.md", "charlie\n")  # after the audit: inotify reports it
    index.refresh()  # applies the audit and the events since (without inotify: walks everything)
    assert [hit.file for hit in index.search("bravo")] == ["memory/b.md"]
    assert [hit.file for hit in index.search("charlie")] == ["memory/c.md"]
