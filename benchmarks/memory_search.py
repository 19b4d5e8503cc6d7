"""Memory search on 10,000 generated markdown files (~2 KB each): ours (FTS5 index, kept fresh) vs peers.

- First build: ours (read, hash, split and index every file) vs a bare SQLite FTS5 bulk insert of the
  same paragraphs (already split, same tokenizer, one transaction), alternated. Target: <= 2x the bare insert.
- Warm search: what ``memory_search`` does per call (freshness check, re-index the changed files, a BM25
  query), over queries of rare and of common words. Targets: p50 <= 1 ms, p99 <= 10 ms. The naive
  peer reads every file and counts keyword hits.

    python benchmarks/memory_search.py [--files N] [--rounds N]
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from _harness import Series, fmt_seconds, print_table, result_line
from toolrig.stores.memory import MemoryIndex, memory_files
from toolrig.stores.memory.chunking import split_paragraphs

WORDS = [f"w{n}" for n in range(5000)] + ["postgres", "release", "deadline", "alice", "budget", "kubernetes"]
QUERIES = ["postgres release", '"release deadline"', "alice budget", "kubernetes", "w17 w42 w4242", "w0", "w1 w2"]
TOKENIZE = "porter unicode61 remove_diacritics 2"  # the memory index's tokenizer


def generate(root: Path, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]  # Zipf-like, as prose is
    for n in range(files):
        directory = root / "memory" / f"topic{n % 100:02d}"
        directory.mkdir(parents=True, exist_ok=True)
        paragraphs = []
        while sum(len(p) for p in paragraphs) < 2000:
            words = rng.choices(WORDS, weights, k=rng.randint(20, 60))
            paragraphs.append(("# " if rng.random() < 0.2 else "") + " ".join(words))
        (directory / f"note{n:05d}.md").write_text("\n\n".join(paragraphs) + "\n")


def naive_scan(root: Path, query: str, limit: int = 6) -> list[tuple[int, str]]:
    terms = [t.lower() for t in re.findall(r"\w+", query)]
    scored = []
    for path in (root / "memory").rglob("*.md"):
        text = path.read_text(encoding="utf-8").lower()
        score = sum(text.count(term) for term in terms)
        if score:
            scored.append((score, str(path)))
    scored.sort(reverse=True)
    return scored[:limit]


def bare_insert(paragraphs: list[str], path: Path) -> float:
    """The floor: paragraphs already in memory, one FTS5 table, one transaction, one executemany."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"CREATE VIRTUAL TABLE chunks USING fts5 (text, tokenize = '{TOKENIZE}')")
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO chunks (text) VALUES (?)", [(text,) for text in paragraphs])
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def builds(root: Path, tmp: Path, repeats: int) -> tuple[Series, Series, Series, Series, int]:
    """Wall clock and CPU time (all threads of this process) of each contender's builds, alternated."""
    paragraphs = [
        chunk.text for relative, _ in memory_files(root) for chunk in split_paragraphs((root / relative).read_text())
    ]
    ours, bare = Series("ours"), Series("bare FTS5")
    ours_cpu, bare_cpu = Series("ours, CPU"), Series("bare FTS5, CPU")
    for n in range(repeats):  # alternated, each on a fresh database
        state = tmp / f"build{n}"
        index = MemoryIndex(root, state / "memory.sqlite")
        start, start_cpu = time.perf_counter(), time.process_time()
        index.refresh()
        ours.samples.append(time.perf_counter() - start)
        ours_cpu.samples.append(time.process_time() - start_cpu)
        index.close()
        shutil.rmtree(state)
        start_cpu = time.process_time()
        bare.samples.append(bare_insert(paragraphs, tmp / f"bare{n}.sqlite"))
        bare_cpu.samples.append(time.process_time() - start_cpu)
    return ours, bare, ours_cpu, bare_cpu, len(paragraphs)


class Sample(NamedTuple):
    """One warm search, taken apart: where a slow one spent its time."""

    wall: float
    refresh: float
    query: float
    cpu: float  # this thread's CPU time; the rest of the wall clock is time spent waiting to run
    gc: float  # time inside the garbage collector during the search
    audit: bool  # the periodic audit walk was running in its thread meanwhile
    query_text: str


def main(files: int, rounds: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        generate(root, files)
        naive_scan(root, "warm")  # page cache warm for both contenders (idle pages are evicted here)
        built, bare, built_cpu, bare_cpu, paragraph_count = builds(root, Path(tmp), repeats)
        index = MemoryIndex(root, Path(tmp) / "state" / "memory.sqlite")
        start = time.perf_counter()
        index.refresh()
        build = time.perf_counter() - start

        ours, scan, pure = Series("ours"), Series("scan"), Series("query only")
        cpu = Series("ours, thread CPU")  # what the search itself costs, without time lost to other processes
        samples: list[Sample] = []
        collecting: list[float] = [0.0, 0.0]  # GC time so far, start of the running collection

        def on_gc(phase: str, _info: dict[str, int]) -> None:
            if phase == "start":
                collecting[1] = time.perf_counter()
            else:
                collecting[0] += time.perf_counter() - collecting[1]

        gc.callbacks.append(on_gc)
        for round_number in range(rounds):
            query = QUERIES[round_number % len(QUERIES)]
            auditing = index._auditing
            gc_before = collecting[0]
            start, start_cpu = time.perf_counter(), time.thread_time()
            index.refresh()
            refreshed = time.perf_counter()
            index.search(query)
            ours.samples.append(time.perf_counter() - start)
            cpu.samples.append(time.thread_time() - start_cpu)
            samples.append(
                Sample(
                    ours.samples[-1],
                    refreshed - start,
                    ours.samples[-1] - (refreshed - start),
                    cpu.samples[-1],
                    collecting[0] - gc_before,
                    auditing or index._auditing,
                    query,
                )
            )
            start = time.perf_counter()
            index.search(query)
            pure.samples.append(time.perf_counter() - start)
            if round_number % 10 == 0:  # the scan is slow: sample it every tenth round, still interleaved
                start = time.perf_counter()
                naive_scan(root, query)
                scan.samples.append(time.perf_counter() - start)

        changed = root / "memory" / "topic07" / "note00007.md"
        reindex = []
        for n in range(10):
            changed.write_text(changed.read_text() + f"\nchanged {n}\n")
            start = time.perf_counter()
            report = index.refresh()
            reindex.append(time.perf_counter() - start)
            assert report.indexed == 1
        gc.callbacks.remove(on_gc)
        index.close()

    rows = [
        ("first index build, ours", f"{files:,} files, median of {repeats}", fmt_seconds(built.median)),
        ("bare FTS5 bulk insert", f"{paragraph_count:,} paragraphs", fmt_seconds(bare.median)),
        ("ours / bare", "", f"{built.median / bare.median:.2f}x"),
        ("CPU time, ours / bare", "all threads", f"{built_cpu.median:.2f} s / {bare_cpu.median:.2f} s"),
        ("CPU ours / bare", "", f"{built_cpu.median / bare_cpu.median:.2f}x"),
        ("first index build (the index searched below)", "", fmt_seconds(build)),
        ("warm search (refresh + query) p50", "", fmt_seconds(ours.median)),
        ("warm search (refresh + query) p99", "", fmt_seconds(ours.p99)),
        ("warm search thread CPU p50 / p99", "", f"{fmt_seconds(cpu.median)} / {fmt_seconds(cpu.p99)}"),
        ("query alone p50 / p99", "", f"{fmt_seconds(pure.median)} / {fmt_seconds(pure.p99)}"),
        ("re-index after one file changed", "median of 10", fmt_seconds(statistics.median(reindex))),
        ("naive scan p50", f"{len(scan.samples)} samples", fmt_seconds(scan.median)),
        ("scan / ours", "", f"{scan.median / ours.median:.1f}x"),
    ]
    print_table("memory search", rows, ("measure", "", "time"))
    worst = sorted(samples, reverse=True)[:5]
    print(f"\nslowest warm searches ({sum(s.audit for s in samples)} of {len(samples)} ran beside the audit walk):")
    for s in worst:
        print(
            f"  {fmt_seconds(s.wall):>10}: refresh {fmt_seconds(s.refresh)}, query {fmt_seconds(s.query)}, "
            f"thread CPU {fmt_seconds(s.cpu)}, GC {fmt_seconds(s.gc)}, audit walk {'running' if s.audit else 'idle'}, "
            f"{s.query_text!r}"
        )
    print(
        result_line(
            "memory_build",
            built.median,
            bare.median,
            target="<=2",
            cpu_ratio=f"{built_cpu.median / bare_cpu.median:.3f}",
        )
    )
    tail = {"p50": f"{ours.median:.6g}s", "p99": f"{ours.p99:.6g}s", "cpu_p99": f"{cpu.p99:.6g}s"}
    print(result_line("memory_search", ours.median, scan.median, **tail))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=210)
    parser.add_argument("--builds", type=int, default=2, help="first builds of each contender, alternated")
    arguments = parser.parse_args()
    main(arguments.files, arguments.rounds, arguments.builds)
