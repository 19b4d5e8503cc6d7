"""glob('**/*.py') (in-process call through the executor) against ``rg --files -g '*.py'``.

Corpus: a generated tree of 22,000 files (45% ``.py``, the rest text, JSON and Markdown, spread over nested
packages with a ``.gitignore``, mtimes spread over a year), made on the spot in a temp directory; or, with
``--site-packages``, this interpreter's site-packages. Ours also orders every match newest first and returns
the 1,000 newest; the peer only prints names. Three contenders alternate round by round: a workspace's
repeated glob (one Rig, called again and again: the mtime cache's case), a first glob (a fresh Rig per call,
made before the clock starts: a one-shot call), and ripgrep. Target: median ratio <= 1.3 for the repeated
glob (``RESULT glob``); the first glob must be no slower than before (``RESULT glob_first``). CPU per call
(this process and its ripgrep) is printed too.

    python benchmarks/glob_files.py [--rounds N] [--files N] [--site-packages] [--cpu-calls N]
"""

from __future__ import annotations

import argparse
import atexit
import os
import random
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from _corpus import make_corpus, warm_up
from _harness import alternate_async, fmt_seconds, print_table
from toolrig import Rig
from toolrig.sandbox.ripgrep import rg_binary


def generated_tree(files: int) -> tuple[Path, int]:
    """``files`` files in a tree shaped like a large Python monorepo; removed when the process exits."""
    base = Path(tempfile.mkdtemp(prefix="toolrig-glob-"))
    atexit.register(shutil.rmtree, base, True)
    root = base / "repo"
    rng = random.Random(7)
    suffixes = [".py"] * 9 + [".txt", ".json", ".md", ".cfg", ".pyi", ".html", ".js"]
    now = 1_790_000_000
    made = 0
    package = 0
    while made < files:
        depth = rng.randint(1, 4)
        directory = root.joinpath(*(f"pkg{rng.randint(0, 40)}" for _ in range(depth - 1)), f"mod{package}")
        directory.mkdir(parents=True, exist_ok=True)
        for index in range(min(rng.randint(5, 40), files - made)):
            path = directory / f"file_{index}{rng.choice(suffixes)}"
            path.write_text(f"# {index}\n")
            stamp = now - rng.randint(0, 365 * 86400)
            os.utime(path, (stamp, stamp))
            made += 1
        package += 1
    (root / ".gitignore").write_text("build/\n*.log\n")
    return root, sum(len(names) for _, _, names in os.walk(root))


async def main(rounds: int, files: int, site_packages: bool, cpu_calls: int) -> None:
    root, count = make_corpus() if site_packages else generated_tree(files)
    rg = rg_binary()
    warm_up(root, rg)
    config = {"output": {"max_chars": 10_000_000}}
    rig = Rig(root, config=config)
    fresh: list[Rig] = []  # made ahead, outside the timed calls: one per first glob

    async def ours() -> object:
        result = await rig.call("glob", {"pattern": "**/*.py"})
        assert not result.is_error, result.message
        return result

    async def first() -> object:
        result = await fresh.pop().call("glob", {"pattern": "**/*.py"})
        assert not result.is_error, result.message
        return result

    async def peer() -> object:
        argv = [rg, "--no-config", "--files", "-g", "*.py", "."]
        return subprocess.run(argv, cwd=root, stdin=subprocess.DEVNULL, capture_output=True, check=True)

    fresh.extend(Rig(root, config=config) for _ in range(3 + rounds + 1 + cpu_calls))
    for _ in range(3):
        await ours()
        await first()
        await peer()
    contenders = {"toolrig repeated": ours, "toolrig first": first, "rg": peer}
    series = await alternate_async(contenders, rounds=rounds, per_round=1)
    matched = (await ours()).output["count"]  # type: ignore[index]
    listed = len((await peer()).stdout.splitlines())  # type: ignore[attr-defined]
    repeated, once, rg_median = (series[name].median for name in contenders)
    rows = [(name, fmt_seconds(s.median), fmt_seconds(s.p99)) for name, s in series.items()]
    print_table(f"glob('**/*.py') vs rg --files -g '*.py', {count:,} files, {rounds} rounds", rows,
                ("contender", "median", "p99"))  # fmt: skip
    print(f"matches: toolrig {matched:,}, rg {listed:,}")
    print(f"RESULT glob ratio={repeated / rg_median:.3f} ours={repeated:.6g}s peer={rg_median:.6g}s "
          f"files={count} matches={matched}")  # fmt: skip
    print(f"RESULT glob_first ratio={once / rg_median:.3f} ours={once:.6g}s peer={rg_median:.6g}s")
    if cpu_calls:
        cpu = await cpu_per_call(contenders, cpu_calls)
        ours_cpu, first_cpu, peer_cpu = cpu.values()
        print(f"CPU per call (process and children): toolrig repeated {ours_cpu * 1e3:.1f} ms, "
              f"first {first_cpu * 1e3:.1f} ms, rg {peer_cpu * 1e3:.1f} ms")  # fmt: skip
        print(f"RESULT glob_cpu ratio={ours_cpu / peer_cpu:.3f} ours={ours_cpu:.6g}s peer={peer_cpu:.6g}s")
        print(f"RESULT glob_first_cpu ratio={first_cpu / peer_cpu:.3f} ours={first_cpu:.6g}s peer={peer_cpu:.6g}s")


async def cpu_per_call(contenders: dict[str, Callable[[], Awaitable[object]]], calls: int) -> dict[str, float]:
    """CPU seconds per call of this process and its children (ripgrep): on a busy machine it moves less than wall.

    Only the calls are counted (a first glob's Rig is made before), each measured on its own, the contenders
    alternating call by call so that a change in the machine's load weighs on all of them alike.
    """
    totals = dict.fromkeys(contenders, 0.0)
    for _ in range(calls):
        for name, fn in contenders.items():
            before = cpu_seconds()
            await fn()
            totals[name] += cpu_seconds() - before
    return {name: total / calls for name, total in totals.items()}


def cpu_seconds() -> float:
    """User and system time of this process and its waited-for children, to the microsecond.

    (``os.times`` counts 10 ms ticks: 10 calls of ~80 ms each moved the ratio by ±0.1 between runs.)
    """
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--files", type=int, default=22_000)
    parser.add_argument("--site-packages", action="store_true", help="use site-packages instead of a generated tree")
    parser.add_argument("--cpu-calls", type=int, default=10, help="calls for the CPU-per-call line (0: none)")
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.files, args.site_packages, args.cpu_calls)
