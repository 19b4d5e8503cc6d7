"""``toolrig worker``: run queued tasks and fire schedules until stopped (Ctrl-C or SIGTERM)."""

from __future__ import annotations

from pathlib import Path

import click

from toolrig.commands._durable_common import ROOT, errors


@click.command("worker")
@click.option(
    "--concurrency", type=click.IntRange(1, 256), help="Tasks this worker runs at once (workers.concurrency)."
)
@ROOT
def command(concurrency: int | None, rig_root: Path) -> None:
    """Run tasks and schedules (in a trusted workspace); start several (one database) to share the work."""
    import signal
    import threading

    from toolrig.workers.worker import open_worker

    stop = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    with errors():  # a refused state file (a committed symlink) is a message, not a traceback
        worker = open_worker(rig_root, concurrency=concurrency)
        click.echo(f"worker {worker.worker_id} started (concurrency {worker.concurrency})", err=True)
        worker.run(stop)
    click.echo(f"worker {worker.worker_id} stopped", err=True)
