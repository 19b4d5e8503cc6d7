from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from toolrig.stores.memory import MemoryIndex, TerminalProgress


@pytest.fixture(autouse=True, params=["inotify", "walk"])
def freshness(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every index test runs with inotify (Linux) and with the plain stat walk used elsewhere."""
    if request.param == "walk":
        monkeypatch.setattr("toolrig.sandbox.inotify.libc", lambda: None)
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


def paragraphs_in(index: MemoryIndex) -> list[tuple[str, int, int, str]]:
    return index.db.read(
        lambda conn: conn.execute("SELECT path, start, end, text FROM chunks ORDER BY 1, 2").fetchall()
    )


def test_a_bulk_build_in_many_batches_and_transactions_indexes_exactly_what_one_batch_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, single = make_index(tmp_path)
    for n in range(23):
        body = "\n\n".join(f"# part {p}\nnote {n} says kiwi {p}" for p in range(n % 4)) + "\n"
        write(root, f"memory/t{n % 3}/n{n}.md", body)
    single.refresh()
    monkeypatch.setattr("toolrig.stores.memory.index.BATCH", 2)  # 12 batches, read ahead in a thread
    monkeypatch.setattr("toolrig.stores.memory.index.TRANSACTION_BYTES", 100)  # several batches per transaction
    done: list[tuple[int, int]] = []
    bulk = MemoryIndex(root, tmp_path / "bulk" / "memory.sqlite")
    assert bulk.refresh(lambda d, t: done.append((d, t))).indexed == 23
    assert paragraphs_in(bulk) == paragraphs_in(single)
    assert len(done) > 1 and done[-1] == (23, 23)
    assert [(h.file, h.lines) for h in bulk.search("kiwi", 50)] == [
        (h.file, h.lines) for h in single.search("kiwi", 50)
    ]
    # A file's paragraphs are one id range: replacing and deleting files leaves no stray paragraph behind.
    write(root, "memory/t0/n3.md", "rewritten mango\n")
    (root / "memory" / "t1" / "n4.md").unlink()
    bulk.refresh()
    assert [h.file for h in bulk.search("mango")] == ["memory/t0/n3.md"]
    assert {row[0] for row in paragraphs_in(bulk)} == {f"memory/t{n % 3}/n{n}.md" for n in range(23) if n % 4} - {
        "memory/t1/n4.md"
    } | {"memory/t0/n3.md"}


def test_an_index_of_the_previous_schema_is_rebuilt_and_never_reuses_a_paragraph_id(tmp_path: Path) -> None:
    from toolrig.stores.memory.index import MIGRATIONS
    from toolrig.stores.sqlite import Database

    root = tmp_path / "ws"
    write(root, "MEMORY.md", "old fact\n")
    path = tmp_path / "state" / "memory.sqlite"
    old = Database(path, MIGRATIONS[:2])  # the schema before paragraphs moved into the FTS5 table
    old.write(lambda conn: conn.execute("INSERT INTO files VALUES ('MEMORY.md', 1, 1, 'x')"))
    old.write(
        lambda conn: conn.executemany(
            "INSERT INTO chunks (path, start, end, text) VALUES ('MEMORY.md', 1, 1, ?)", [("a",), ("b",)]
        )
    )
    old.close()
    index = MemoryIndex(root, path)
    assert index.refresh().indexed == 1
    assert [h.file for h in index.search("fact")] == ["MEMORY.md"]
    ids = index.db.read(lambda conn: [row[0] for row in conn.execute("SELECT rowid FROM chunks")])
    assert ids and min(ids) > 2  # semantic vectors are keyed by these ids: an old id must never come back


def test_a_file_swapped_for_a_symlink_or_fifo_after_the_walk_is_not_read(tmp_path: Path) -> None:
    from toolrig.stores.memory.index import _read_regular

    regular = write(tmp_path, "a.md", "hello\n")
    assert _read_regular(str(regular), 6) == b"hello\n"
    assert _read_regular(str(regular), 2) == b"hello\n"  # grew since the walk: read to the end
    outside = write(tmp_path, "secret.txt", "secret\n")
    (tmp_path / "link.md").symlink_to(outside)
    assert _read_regular(str(tmp_path / "link.md"), 7) is None
    os.mkfifo(tmp_path / "pipe.md")
    assert _read_regular(str(tmp_path / "pipe.md"), 0) is None  # neither blocks nor reads
    assert _read_regular(str(tmp_path / "gone.md"), 1) is None


_KILLED_BUILD = """
import sys, time
from pathlib import Path
import toolrig.stores.memory.index as module
from toolrig.stores.memory import MemoryIndex

module.BATCH, module.TRANSACTION_BYTES = 5, 200  # many small transactions
original = module.MemoryIndex._index_batch
calls = []

def index_batch(self, conn, batch):
    count = original(self, conn, batch)
    calls.append(batch)
    if len(calls) == 7:  # inside an open transaction, after earlier ones committed
        print("inside", flush=True)
        time.sleep(600)
    return count

module.MemoryIndex._index_batch = index_batch
MemoryIndex(Path(sys.argv[1]), Path(sys.argv[2])).refresh()
"""


@pytest.mark.slow
def test_a_first_build_killed_mid_transaction_leaves_whole_batches_and_the_next_refresh_completes_it(
    tmp_path: Path,
) -> None:
    import signal
    import subprocess
    import sys

    root = tmp_path / "ws"
    for n in range(60):
        write(root, f"memory/n{n:02d}.md", f"# note {n}\nquokka {n} facts\n\nmore about {n}\n")
    db_path = tmp_path / "state" / "memory.sqlite"
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED_BUILD, str(root), str(db_path)], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == "inside\n"
        child.send_signal(signal.SIGKILL)
        child.wait()

    index = MemoryIndex(root, db_path)
    committed = index.db.read(lambda conn: conn.execute("SELECT count(*) FROM files").fetchone()[0])
    assert 0 < committed < 60  # whole transactions survived, the open one did not
    assert sorted({row[0] for row in paragraphs_in(index)}) == sorted(index._known)  # no file half there
    index.db.write(lambda conn: conn.execute("INSERT INTO chunks (chunks) VALUES ('integrity-check')"))
    assert index.refresh().indexed == 60 - committed
    clean = MemoryIndex(root, tmp_path / "clean" / "memory.sqlite")
    clean.refresh()
    assert paragraphs_in(index) == paragraphs_in(clean)
    assert len(index.search("quokka", 100)) == 60


def test_the_audit_walk_also_catches_deletions_and_edits_inotify_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, freshness: str
) -> None:
    import time

    monkeypatch.setattr("toolrig.stores.memory.index.FULL_WALK_SECONDS", 0.0)
    root, index = make_index(tmp_path)
    write(root, "memory/a.md", "alpha\n")
    write(root, "memory/b.md", "bravo\n")
    write(root, "memory/c.md", "charlie\n")
    index.refresh()
    (root / "memory" / "a.md").unlink()
    write(root, "memory/b.md", "bravo rewritten with delta\n")
    index._watch.take()  # the kernel's events are lost
    index.refresh()  # starts the audit
    while index._auditing:
        time.sleep(0.01)
    (root / "memory" / "c.md").unlink()  # after the audit listed it: inotify reports it
    report = index.refresh()  # without inotify, the refresh that started the audit walked already
    assert (report.indexed, report.removed) == ((1, 2) if freshness == "inotify" else (0, 1))
    assert index.search("alpha") == [] and index.search("charlie") == []
    assert [hit.file for hit in index.search("delta")] == ["memory/b.md"]


def test_index_rebuilds_after_its_state_dir_is_deleted_while_it_is_open(tmp_path: Path) -> None:
    root, index = make_index(tmp_path)
    write(root, "MEMORY.md", "Alice prefers tea.\n")
    index.refresh()
    assert [hit.file for hit in index.search("tea")] == ["MEMORY.md"]
    shutil.rmtree(tmp_path / "state")  # the index file is made anew on next use: empty
    index.refresh()  # nothing changed in the notes, yet the new file must be filled
    assert [hit.file for hit in index.search("tea")] == ["MEMORY.md"]
    index.close()
