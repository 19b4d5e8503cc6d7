"""code_search (in-process call through the executor) against a bare ``rg`` process with the same limits.

Corpus: this venv's site-packages (20,000+ files), made on the spot. Both sides stop at 15 matches per
file and 250 in total (the peer reads 250 lines and kills rg, as we do). Target: median ratio <= 1.15.

    python benchmarks/code_search.py [--rounds N]
"""

from __future__ import annotations

import argparse
import subprocess

import anyio

from _corpus import make_corpus, warm_up
from _harness import Series, alternate_async, fmt_seconds, print_table
from toolrig import Rig
from toolrig.sandbox.ripgrep import rg_binary

CASES = {
    "literal": ("import os", ["-F"]),
    "regex": (r"def \w+_(?:test|check)\w*\(", []),
    "rare": ("zzz_no_such_identifier_qq", ["-F"]),
}


def peer(root: str, pattern: str, flags: list[str]) -> int:
    argv = [rg_binary(), "--no-config", "-n", "--max-count=15", *flags, "--", pattern, "."]
    process = subprocess.Popen(argv, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert process.stdout is not None
    lines = 0
    for _ in process.stdout:
        lines += 1
        if lines >= 250:
            process.kill()
            break
    process.stdout.close()
    process.wait()
    return lines


async def main(rounds: int) -> None:
    root, count = make_corpus()
    warm_up(root, rg_binary())
    rig = Rig(root, config={"output": {"max_chars": 10_000_000}})
    rows = []
    ratios = {}
    for name, (pattern, flags) in CASES.items():
        args = {"pattern": pattern, "flags": flags}

        async def ours(args: dict[str, object] = args) -> object:
            result = await rig.call("code_search", args)
            assert not result.is_error, result.message
            return result

        async def bare(pattern: str = pattern, flags: list[str] = flags) -> object:
            return peer(str(root), pattern, flags)

        for _ in range(2):  # warm-up
            await ours()
            await bare()
        series: dict[str, Series] = await alternate_async({"toolrig": ours, "rg": bare}, rounds=rounds, per_round=1)
        found = (await ours()).output
        ratios[name] = series["toolrig"].median / series["rg"].median
        rows.append((name, fmt_seconds(series["toolrig"].median), fmt_seconds(series["rg"].median),
                     f"{ratios[name]:.3f}", str(found["match_count"])))  # type: ignore[index]  # fmt: skip
    print_table(f"code_search vs rg, {count:,} files, medians of {rounds}", rows,
                ("case", "toolrig", "rg", "ratio", "matches"))  # fmt: skip
    worst = max(ratios, key=lambda k: ratios[k])
    literal, regex = ratios["literal"], ratios["regex"]
    print(f"RESULT code_search ratio={ratios[worst]:.3f} worst={worst} literal={literal:.3f} regex={regex:.3f} "
          f"rare={ratios['rare']:.3f} files={count}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    anyio.run(main, parser.parse_args().rounds)
