"""read_files of 200 files (in-process call through the executor) against ``cat`` of the same 200 files.

Corpus: this venv's site-packages, made on the spot; the 200 largest .py files under 50 KB. Ours also
numbers every line, hashes every file and checks .gitignore; the peer only copies bytes. Reported, no target.

    python benchmarks/read_files.py [--rounds N]
"""

from __future__ import annotations

import argparse
import subprocess

import anyio

from _corpus import make_corpus, warm_up
from _harness import alternate_async, fmt_seconds, print_table
from toolrig import Rig
from toolrig.sandbox.ripgrep import rg_binary


async def main(rounds: int) -> None:
    root, count = make_corpus()
    warm_up(root, rg_binary())
    candidates = sorted(
        (p for p in root.rglob("*.py") if p.is_file() and p.stat().st_size < 50_000),
        key=lambda p: (-p.stat().st_size, str(p)),
    )
    paths = [str(p.relative_to(root)) for p in candidates[:200]]
    total = sum((root / p).stat().st_size for p in paths)
    rig = Rig(root, config={"output": {"max_chars": 100_000_000}})

    async def ours() -> object:
        result = await rig.call("read_files", {"paths": paths, "limit": 20_000})
        assert not result.is_error, result.message
        return result

    async def peer() -> object:
        return subprocess.run(["cat", *paths], cwd=root, stdin=subprocess.DEVNULL, capture_output=True, check=True)

    for _ in range(3):
        await ours()
        await peer()
    series = await alternate_async({"toolrig": ours, "cat": peer}, rounds=rounds, per_round=1)
    ratio = series["toolrig"].median / series["cat"].median
    rows = [(name, fmt_seconds(s.median), fmt_seconds(s.p99)) for name, s in series.items()]
    print_table(f"read_files vs cat: 200 files, {total / 1e6:.1f} MB (corpus {count:,} files), {rounds} rounds", rows,
                ("contender", "median", "p99"))  # fmt: skip
    print(f"RESULT read_files ratio={ratio:.3f} ours={series['toolrig'].median:.6g}s peer={series['cat'].median:.6g}s "
          f"files=200 bytes={total}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    anyio.run(main, parser.parse_args().rounds)
