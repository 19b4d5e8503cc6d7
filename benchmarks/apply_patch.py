"""apply_patch: a 500-hunk patch on a 50,000-line file, and how time grows from 5,000 to 50,000 lines.

Each size gets one hunk per 100 lines (3 lines of context, one line changed), applied through the executor
on a fresh copy of the file every round. Targets: 50,000 lines under 100 ms; growth no faster than linear
(time at 50k / time at 5k <= 10 for 10x the lines and hunks).

    python benchmarks/apply_patch.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from _harness import fmt_seconds, print_table
from toolrig import Rig

SIZES = (5_000, 10_000, 25_000, 50_000)
TARGET_SECONDS = 0.100


def source(lines: int) -> str:
    out = []
    for index in range(lines // 4):
        out += [f"def function_{index}(value):", f"    total = value * {index}", "    return total", ""]
    return "\n".join(out) + "\n"


def patch_for(text: str, every: int = 100) -> tuple[str, int]:
    lines = text.split("\n")
    body = ["*** Begin Patch", "*** Update File: big.py"]
    hunks = 0
    for start in range(1, len(lines) - 8, every):
        target = start + 3
        if not lines[target].startswith("    total"):
            target += 1 if lines[target + 1].startswith("    total") else 0
        if not lines[target].startswith("    total"):
            continue
        body.append("@@")
        body += [f" {line}" for line in lines[target - 3 : target]]
        body += [f"-{lines[target]}", f"+{lines[target]} + 1"]
        body += [f" {line}" for line in lines[target + 1 : target + 4]]
        hunks += 1
    body.append("*** End Patch")
    return "\n".join(body), hunks


async def main(rounds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="toolrig-patch-bench-"))
    rig = Rig(root, config={})
    rows = []
    medians = {}
    for size in SIZES:
        text = source(size)
        patch, hunks = patch_for(text)
        samples = []
        for _ in range(rounds + 2):
            (root / "big.py").write_text(text)
            start = time.perf_counter()
            result = await rig.call("apply_patch", {"patch": patch})
            samples.append(time.perf_counter() - start)
            assert not result.is_error, result.message
        samples = samples[2:]  # warm-up rounds
        medians[size] = statistics.median(samples)
        rows.append((f"{size:,}", str(hunks), fmt_seconds(medians[size]), fmt_seconds(max(samples)),
                     f"{medians[size] / medians[SIZES[0]]:.2f}x"))  # fmt: skip
    print_table(f"apply_patch, one hunk per 100 lines, {rounds} rounds", rows,
                ("lines", "hunks", "median", "max", "vs 5k"))  # fmt: skip
    largest, smallest = medians[SIZES[-1]], medians[SIZES[0]]
    growth = largest / smallest
    print(f"50k lines: {fmt_seconds(largest)} (target < {fmt_seconds(TARGET_SECONDS)}); growth 5k->50k {growth:.2f}x "
          f"for 10x the lines (linear = 10x)")  # fmt: skip
    print(f"RESULT apply_patch ratio={largest / TARGET_SECONDS:.3f} ours={largest:.6g}s peer={TARGET_SECONDS}s "
          f"growth_5k_to_50k={growth:.2f}")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    anyio.run(main, parser.parse_args().rounds)
