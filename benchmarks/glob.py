"""glob('**/*.py') (in-process call through the executor) against ``rg --files -g '*.py'``.

Corpus: this venv's site-packages (20,000+ files), made on the spot. Ours also stats every match to sort
newest first and returns the 1,000 newest; the peer only prints names. Target: median ratio <= 1.3.

    python benchmarks/glob.py [--rounds N]
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
    rg = rg_binary()
    warm_up(root, rg)
    rig = Rig(root, config={"output": {"max_chars": 10_000_000}})

    async def ours() -> object:
        result = await rig.call("glob", {"pattern": "**/*.py"})
        assert not result.is_error, result.message
        return result

    async def peer() -> object:
        argv = [rg, "--no-config", "--files", "-g", "*.py", "."]
        return subprocess.run(argv, cwd=root, stdin=subprocess.DEVNULL, capture_output=True, check=True)

    for _ in range(3):
        await ours()
        await peer()
    series = await alternate_async({"toolrig": ours, "rg": peer}, rounds=rounds, per_round=1)
    matched = (await ours()).output["count"]  # type: ignore[index]
    listed = len((await peer()).stdout.splitlines())  # type: ignore[attr-defined]
    ratio = series["toolrig"].median / series["rg"].median
    rows = [(name, fmt_seconds(s.median), fmt_seconds(s.p99)) for name, s in series.items()]
    print_table(f"glob('**/*.py') vs rg --files -g '*.py', {count:,} files, {rounds} rounds", rows,
                ("contender", "median", "p99"))  # fmt: skip
    print(f"matches: toolrig {matched:,}, rg {listed:,}")
    print(f"RESULT glob ratio={ratio:.3f} ours={series['toolrig'].median:.6g}s peer={series['rg'].median:.6g}s "
          f"files={count} matches={matched}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    anyio.run(main, parser.parse_args().rounds)
