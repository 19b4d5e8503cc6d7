"""Durable tasks on PostgreSQL: trivial tasks per second with 1 and 3 worker processes, and schedule delay.

``python benchmarks/tasks.py [--tasks N] [--rounds R] [--firings F]``. A real PostgreSQL (Debian binaries,
temporary data directory, fsync off) and the scripted provider server (answers at once). A task is one
model turn that answers with text: what is measured is toolrig's durable path (records, journal, DBOS queue
and workflow, a Rig and a run per task), not a model.

Peer: the same run done in-process with ``run_agent`` one after another, no durability (runs/s). The ratio
is ours (1 worker) / peer, in throughput: below 1 is the price of durability on this machine.
Scheduling delay: a job firing every second with 3 workers; delay = the run's start minus its firing time.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._harness import machine, print_table  # noqa: E402
from tests.support.durable import access_for, config, install_rig  # noqa: E402
from tests.support.fake_llm import FakeLLM, Text, reply  # noqa: E402
from tests.support.postgres import postgres_server  # noqa: E402


def _answer(body: dict[str, object]) -> object:
    return reply(Text("ok"))


def _worker(stack: ExitStack, root: Path, url: str, llm: FakeLLM, concurrency: int = 8) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.worker_main", str(root), url, llm.anthropic_url, str(concurrency)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("READY"):
            break

    def stop() -> None:
        proc.terminate()
        proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()

    stack.callback(stop)


def _wait(predicate: object, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("the tasks did not finish")
        pause.wait(0.02)


def durable_rate(server: object, llm: FakeLLM, workers: int, tasks: int) -> float:
    root = Path(tempfile.mkdtemp(prefix="toolrig-bench-"))
    url = server.new_database()  # type: ignore[attr-defined]
    access = access_for(root, config(llm, database_url=url))
    with ExitStack() as stack:
        for _ in range(workers):
            _worker(stack, root, url, llm)
        start = time.perf_counter()
        ids = [access.task_book.add(prompt=f"answer:{i}", by="person")["id"] for i in range(tasks)]
        _wait(lambda: len(access.records.tasks(status="done", limit=tasks + 1)) >= len(ids))
        elapsed = time.perf_counter() - start
    shutil.rmtree(root, ignore_errors=True)
    return tasks / elapsed


def inline_rate(llm: FakeLLM, tasks: int) -> float:
    import anyio

    from toolrig.agent.entry import run_agent
    from toolrig.agent.state import RunOptions
    from toolrig.registry import Registry
    from toolrig.rig import Rig

    root = Path(tempfile.mkdtemp(prefix="toolrig-bench-"))
    cfg = config(llm)

    async def runs() -> None:
        for i in range(tasks):
            rig = Rig(root, config=cfg, registry=Registry([]))
            await run_agent(f"answer:{i}", RunOptions(), rig=rig)

    start = time.perf_counter()
    anyio.run(runs)
    elapsed = time.perf_counter() - start
    shutil.rmtree(root, ignore_errors=True)
    return tasks / elapsed


def schedule_delays(server: object, llm: FakeLLM, firings: int) -> list[float]:
    root = Path(tempfile.mkdtemp(prefix="toolrig-bench-"))
    url = server.new_database()  # type: ignore[attr-defined]
    access = access_for(root, config(llm, database_url=url))
    with ExitStack() as stack:
        for _ in range(3):
            _worker(stack, root, url, llm)
        job = access.job_book.add(name="tick", schedule="1s", prompt="answer:tick", by="person")
        _wait(lambda: len(access.records.tasks(job_id=job["id"], status="done", limit=firings + 10)) >= firings)
        access.job_book.remove(job["id"], by="person")
    rows = access.records.tasks(job_id=job["id"], status="done", limit=10_000)
    shutil.rmtree(root, ignore_errors=True)
    return sorted(t["started_at"] - t["fire_time"] for t in rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--firings", type=int, default=20)
    args = parser.parse_args()
    llm = FakeLLM(responder=_answer).start()  # type: ignore[arg-type]
    install_rig(config(llm))
    results: dict[str, list[float]] = {"inline": [], "1 worker": [], "3 workers": []}
    base = Path(tempfile.mkdtemp(prefix="toolrig-pg-"))
    base.chmod(0o755)
    try:
        with postgres_server(base) as server:
            for _ in range(args.rounds):  # contenders alternate round by round
                results["inline"].append(inline_rate(llm, args.tasks))
                results["1 worker"].append(durable_rate(server, llm, 1, args.tasks))
                results["3 workers"].append(durable_rate(server, llm, 3, args.tasks))
            delays = schedule_delays(server, llm, args.firings)
    finally:
        llm.stop()
        shutil.rmtree(base, ignore_errors=True)
    rates = {k: statistics.median(v) for k, v in results.items()}
    print(f"machine: {machine()}")
    print_table(
        f"trivial tasks/s ({args.tasks} tasks, median of {args.rounds} rounds)",
        [(k, f"{v:.1f}") for k, v in rates.items()],
        ("path", "tasks/s"),
    )
    p50 = statistics.median(delays)
    p99 = delays[min(len(delays) - 1, int(len(delays) * 0.99))]
    print_table(
        f"scheduling delay, 1s job, 3 workers ({len(delays)} firings)",
        [("p50", f"{p50 * 1000:.0f} ms"), ("p99", f"{p99 * 1000:.0f} ms")],
        ("", "firing -> run start"),
    )
    ratio = rates["1 worker"] / rates["inline"]
    print(
        f"RESULT tasks ratio={ratio:.3f} ours={rates['1 worker']:.2f}/s peer={rates['inline']:.2f}/s "
        f"three_workers={rates['3 workers']:.2f}/s delay_p50_ms={p50 * 1000:.0f} delay_p99_ms={p99 * 1000:.0f}"
    )


if __name__ == "__main__":
    main()
