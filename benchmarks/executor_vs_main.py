"""The executor's per-call cost on this branch against ``main`` (issue 11: "no slower than before").

Both trees are measured alternately in one run: ``main``'s ``src/`` is exported with ``git archive`` to a
temporary folder (the main work tree is never touched), and each round starts one worker process per
tree that warms up, then times ``rig.call`` on a trivial tool (audit on and off, approvals off) and prints
seconds per call. Medians over rounds; ratio = this branch / main.

    python benchmarks/executor_vs_main.py [--rounds N] [--calls N] [--ref main]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _harness import Series, fmt_seconds, print_table, result_line

REPO = Path(__file__).resolve().parents[1]

WORKER = """
import json, sys, tempfile, time, logging
import anyio
logging.disable(logging.WARNING)
from toolrig import Rig, tool

@tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

async def main(calls, audit):
    with tempfile.TemporaryDirectory() as root:
        rig = Rig(root, config={"audit": {"enabled": audit}}, tools=[add])
        with rig:
            for _ in range(200):
                await rig.call("add", {"a": 1, "b": 2})
            start = time.perf_counter()
            for _ in range(calls):
                await rig.call("add", {"a": 1, "b": 2})
            return (time.perf_counter() - start) / calls

calls, audit = int(sys.argv[1]), sys.argv[2] == "1"
print(json.dumps(anyio.run(main, calls, audit)))
"""


def export(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def measure(src: Path, calls: int, audit: bool) -> float:
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(calls), "1" if audit else "0"],
        capture_output=True, text=True, env=env, check=True, cwd=tempfile.gettempdir(),
    )  # fmt: skip
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--ref", default="main")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this branch": REPO / "src", options.ref: export(options.ref, Path(tmp))}
        series = {
            (name, audit): Series(f"{name} audit={'on' if audit else 'off'}") for name in trees for audit in (1, 0)
        }
        for _ in range(options.rounds):
            for audit in (1, 0):
                for name, src in trees.items():
                    series[(name, audit)].samples.append(measure(src, options.calls, bool(audit)))
        rows = [(s.name, fmt_seconds(s.median), fmt_seconds(min(s.samples))) for s in series.values()]
        print_table("rig.call on a trivial tool (per call)", rows, ("tree", "median", "best"))
        ours, peer = series[("this branch", 1)].median, series[(options.ref, 1)].median
        off = series[("this branch", 0)].median / series[(options.ref, 0)].median
        print(result_line("executor_vs_main", ours, peer, audit_off_ratio=f"{off:.3f}"))


if __name__ == "__main__":
    main()
