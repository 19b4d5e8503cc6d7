"""Durable tasks: toolrig's workers against bare DBOS workflows of the same shape, in one run.

``python benchmarks/tasks.py [--tasks N] [--rounds R] [--databases sqlite,postgresql] [--workers 1,3]``.

A burst of N tasks, each two model turns and one tool call (``read_files`` on the workspace's README) against a
scripted model server on loopback (its own process), run by real ``toolrig worker`` processes: the default tool
catalog, policy, audit, journal and the official Anthropic SDK with its default retries. The peer is a bare DBOS
worker process whose workflow makes the same two model requests as two steps, on a queue with the same
concurrency (8) and polling.
Both on SQLite (files under a temporary workspace) and on a real PostgreSQL on loopback (Debian's binaries,
fsync off). Contenders alternate within each round; medians over rounds. CPU per task is the worker processes'
own CPU time (user + system, from /proc) over the burst, divided by the tasks. Idle latency: a one-turn task
added to idle workers, from its creation to its end as the task record says, median of 5.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._harness import machine, print_table  # noqa: E402

CONCURRENCY = 8
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def _wait(predicate: Callable[[], bool], timeout: float = 900, what: str = "the tasks") -> None:
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not finish")
        pause.wait(0.01)


def _process(stack: ExitStack, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env=env)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    stack.callback(stop)
    return proc


def _ready(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("READY"):
            return line.split(" ", 1)[1].strip() if " " in line else ""
    raise RuntimeError(f"{proc.args!r} ended before it was ready")


@contextmanager
def _workspace(home: Path, llm_url: str, database_url: str | None) -> Iterator[Path]:
    """A trusted workspace whose user config (TOOLRIG_HOME) names the model server and the database."""
    from toolrig.config import set_trust

    root = Path(tempfile.mkdtemp(prefix="toolrig-bench-"))
    (root / "README.md").write_text("# bench\n\nA workspace for the durable benchmark.\n" * 5)
    workers = f"workers:\n  concurrency: {CONCURRENCY}\n"
    workers += f"  database_url: {database_url}\n" if database_url else ""
    (home / "config.yaml").write_text(
        f"llm:\n  provider: anthropic\n  model: claude-bench\n  base_url: {llm_url}\n  api_key: bench\n" + workers
    )
    set_trust(root)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _records(root: Path) -> Any:
    from toolrig.config import load_config
    from toolrig.durable.access import DurableAccess
    from toolrig.sandbox.paths import Workspace

    workspace = Workspace(root)
    return DurableAccess(workspace.root, load_config(root).config, workspace.state_dir)


def _count(access: Any, table: str, where: str = "") -> int:
    import sqlalchemy as sa

    with access.records.tx() as c:
        return int(c.execute(sa.text(f"SELECT count(*) FROM {table} {where}")).scalar_one())  # noqa: S608


def toolrig_burst(home: Path, llm_url: str, database_url: str | None, workers: int, tasks: int) -> dict[str, float]:
    with ExitStack() as stack:
        root = stack.enter_context(_workspace(home, llm_url, database_url))
        access = _records(root)
        stack.callback(access.close)
        procs = [
            _process(stack, [sys.executable, "-m", "toolrig", "worker", "--root", str(root)]) for _ in range(workers)
        ]
        _wait(lambda: _count(access, "toolrig_workers") >= workers, 300, "the workers")
        cpu = sum(_cpu_seconds(p.pid) for p in procs)
        start = time.perf_counter()
        for i in range(tasks):
            access.task_book.add(prompt=f"task {i}: read README.md and say done", by="person")
        ended = "WHERE status IN ('done', 'failed', 'cancelled')"
        _wait(lambda: _count(access, "toolrig_tasks", ended) >= tasks)
        elapsed = time.perf_counter() - start
        cpu = sum(_cpu_seconds(p.pid) for p in procs) - cpu
        bad = _count(access, "toolrig_tasks", "WHERE status <> 'done'")
        if bad:  # said, not waited for: a model request that failed (the SDK's retries spent) ends its task
            print(f"warning: {bad} of {tasks} tasks did not end done", file=sys.stderr)
        latencies = []
        for i in range(5):
            task = access.task_book.add(prompt=f"answer: idle {i}", by="person")
            _wait(lambda t=task: (access.records.task(t["id"]) or {}).get("status") == "done", 60, "the idle task")
            row = access.records.task(task["id"])
            latencies.append(row["ended_at"] - row["created_at"])
    return {"rate": tasks / elapsed, "cpu_ms": cpu / tasks * 1000, "idle_ms": statistics.median(latencies) * 1000}


def dbos_burst(system_url: str, llm_url: str, workers: int, tasks: int) -> dict[str, float]:
    from benchmarks._durable_peers import QUEUE
    from dbos import DBOSClient

    argv = [sys.executable, "-m", "benchmarks._durable_peers", "dbos", system_url, llm_url, str(CONCURRENCY)]
    with ExitStack() as stack:
        procs = [_process(stack, argv) for _ in range(workers)]
        for proc in procs:
            _ready(proc)
        client = DBOSClient(system_database_url=system_url)
        stack.callback(client.destroy)
        cpu = sum(_cpu_seconds(p.pid) for p in procs)
        start = time.perf_counter()
        handles = [client.enqueue({"queue_name": QUEUE, "workflow_name": "bare_task"}, i) for i in range(tasks)]
        for handle in handles:
            handle.get_result()
        elapsed = time.perf_counter() - start
        cpu = sum(_cpu_seconds(p.pid) for p in procs) - cpu
    return {"rate": tasks / elapsed, "cpu_ms": cpu / tasks * 1000}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--workers", default="1,3")
    args = parser.parse_args()
    databases = args.databases.split(",")
    counts = [int(n) for n in args.workers.split(",")]
    home = Path(tempfile.mkdtemp(prefix="toolrig-bench-home-"))
    os.environ["TOOLRIG_HOME"] = str(home)  # the workers inherit it: their user config and trust list
    results: dict[tuple[str, int, str], list[dict[str, float]]] = {}
    load = os.getloadavg()[0]
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, home, ignore_errors=True)
        llm_url = _ready(_process(stack, [sys.executable, "-m", "benchmarks._durable_peers", "llm"]))
        server = None
        if "postgresql" in databases:
            from tests.support.postgres import postgres_server

            base = Path(tempfile.mkdtemp(prefix="toolrig-pg-"))
            base.chmod(0o755)
            stack.callback(shutil.rmtree, base, ignore_errors=True)
            server = stack.enter_context(postgres_server(base))
        for _ in range(args.rounds):  # contenders alternate within each round
            for database in databases:
                for workers in counts:
                    url = server.new_database() if database == "postgresql" and server else None
                    ours = toolrig_burst(home, llm_url, url, workers, args.tasks)
                    results.setdefault((database, workers, "toolrig"), []).append(ours)
                    peer_url = server.new_database() if url else f"sqlite:///{home / f'bare-{time.time_ns()}.sqlite'}"
                    peer = dbos_burst(peer_url, llm_url, workers, args.tasks)
                    results.setdefault((database, workers, "dbos"), []).append(peer)
    load = max(load, os.getloadavg()[0])
    _report(results, databases, counts, args, load)


def _report(
    results: dict[Any, list[dict[str, float]]], databases: list[str], counts: list[int], args: Any, load: float
) -> None:
    def med(key: tuple[str, int, str], field: str) -> float:
        return statistics.median(r[field] for r in results[key])

    rows = []
    last = 0.0
    for database in databases:
        for workers in counts:
            ours, peer = (database, workers, "toolrig"), (database, workers, "dbos")
            last = med(ours, "rate") / med(peer, "rate")
            rows.append(
                (
                    database,
                    str(workers),
                    f"{med(ours, 'rate'):.1f}",
                    f"{med(peer, 'rate'):.1f}",
                    f"{last:.2f}",
                    f"{med(ours, 'cpu_ms'):.0f} / {med(peer, 'cpu_ms'):.0f} ms",
                    f"{med(ours, 'idle_ms'):.0f} ms",
                )
            )
    print(f"machine: {machine()}, {os.cpu_count()} cores, load average up to {load:.1f}")
    print_table(
        f"{args.tasks} tasks a burst (2 model turns + 1 tool call), concurrency {CONCURRENCY}, "
        f"median of {args.rounds} rounds",
        rows,
        ("database", "workers", "toolrig tasks/s", "bare DBOS/s", "ratio", "CPU/task toolrig / DBOS", "idle 1-turn"),
    )
    key = (databases[-1], counts[-1])
    ours, peer = (*key, "toolrig"), (*key, "dbos")
    print(
        f"RESULT tasks ratio={last:.3f} ours={med(ours, 'rate'):.2f}/s peer={med(peer, 'rate'):.2f}/s "
        f"database={key[0]} workers={key[1]} cpu_ms={med(ours, 'cpu_ms'):.0f} idle_ms={med(ours, 'idle_ms'):.0f}"
    )


if __name__ == "__main__":
    main()
