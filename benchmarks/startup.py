"""Wall time of ``toolrig --help`` against ``python -c pass``, measured alternately in one run.

Target: the CLI adds less than 150 ms to bare Python start-up.

    python benchmarks/startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _harness import fmt_seconds, print_table


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main(rounds: int) -> None:
    exe = shutil.which("toolrig", path=str(Path(sys.executable).parent)) or shutil.which("toolrig")
    if exe is None:
        sys.exit("the toolrig console script is not installed (pip install -e .)")
    contenders = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "toolrig --help": [exe, "--help"],
        "toolrig calculator --help": [exe, "calculator", "--help"],
        "toolrig call calculate": [exe, "call", "calculate", "--json", '{"expression": "1+1"}', "--root", os.getcwd()],
    }
    for argv in contenders.values():  # warm the page cache
        timed(argv)
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, argv in contenders.items():
            samples[name].append(timed(argv))
    base = statistics.median(samples["python -c pass"])
    rows = [
        (name, fmt_seconds(statistics.median(s)), fmt_seconds(statistics.median(s) - base))
        for name, s in samples.items()
    ]
    print_table("Start-up wall time (median)", rows, ("command", "wall time", "over bare Python"))
    ours = statistics.median(samples["toolrig --help"])
    added_ms = (ours - base) * 1000
    print(f"\ntoolrig --help adds {added_ms:.1f} ms to bare Python (target < 150 ms)")
    print(f"RESULT startup ratio={ours / base:.3f} ours={ours:.4f}s peer={base:.4f}s added_ms={added_ms:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    main(parser.parse_args().rounds)
