"""What one worker process keeps across its tasks: one event loop, a Rig per agent, a provider per model.

Building these per task was most of a task's CPU (a Rig reloads the config and scans installed packages for
tool plugins; a provider's SDK client loads TLS certificates and opens new connections). The Rig and its
executor never change after they are built and every run brings its own scope (``toolrig.scope``), so the
runs of one worker share them. The engine's workflow threads hand their attempt to the host's loop and wait.

The Rigs are kept while the config files they were read from are unchanged (the user's, the workspace's, the
trust list: size, time, inode); a change builds the next set for the attempts that start after it, and the
previous set is closed when its last attempt ends.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

    from toolrig.agent.providers import Provider
    from toolrig.agent.providers.pool import ProviderPool
    from toolrig.durable.access import DurableAccess
    from toolrig.rig import Rig

log = logging.getLogger("toolrig.durable")

_installed: WorkerHost | None = None
_installed_lock = threading.Lock()


def install(host: WorkerHost | None) -> None:
    """The host this process's engine hands attempts to (one per worker process; None when it stops)."""
    global _installed
    with _installed_lock:
        _installed = host


def installed() -> WorkerHost | None:
    with _installed_lock:
        return _installed


def _fingerprint(root: Path) -> tuple[Any, ...]:
    from toolrig.config.loading import CONFIG_FILE
    from toolrig.config.trust import TRUST_FILE
    from toolrig.sandbox.paths import STATE_DIR_NAME, toolrig_home
    from toolrig.workers import runner

    home = toolrig_home()
    marks: list[Any] = [id(runner._rig_factory)]  # a program (or test) that installs another factory: anew
    for path in (home / CONFIG_FILE, root / STATE_DIR_NAME / CONFIG_FILE, home / TRUST_FILE):
        try:
            stat = os.stat(path)
        except OSError:
            marks.append(None)
        else:
            marks.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(marks)


@dataclass(eq=False)
class _Generation:
    """The Rigs built from one reading of the config, and the attempts using them."""

    root: Path
    mark: tuple[Any, ...]
    pool: ProviderPool
    access: DurableAccess
    rigs: dict[str | None, Rig] = field(default_factory=dict)
    users: int = 0
    retired: bool = False

    def rig(self, agent: str | None) -> Rig:
        rig = self.rigs.get(agent)
        if rig is None:
            from toolrig.workers.runner import _make_rig

            rig = self.rigs[agent] = _make_rig(self.root, agent)
        return rig

    def provider(self, rig: Rig) -> Provider:
        from toolrig.workers.runner import provider_settings

        return self.pool.get(provider_settings(rig))

    async def aclose(self) -> None:
        from toolrig.workers.runner import _close

        rigs, self.rigs = list(self.rigs.values()), {}
        for rig in rigs:
            await _close(rig)
        self.access.close()


class WorkerHost:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._current: _Generation | None = None
        self._pool: ProviderPool | None = None
        self._running = 0  # attempts on the loop now (read across threads: an int, for the stop's decision)

    def start(self) -> None:
        """Start the loop in a daemon thread: a process told to stop is not held by a run still going."""
        import queue

        import anyio
        from anyio.from_thread import BlockingPortal

        from toolrig.agent.providers.pool import ProviderPool

        self._pool = ProviderPool()
        ready: queue.Queue[BlockingPortal] = queue.Queue()

        async def serve() -> None:
            async with BlockingPortal() as portal:
                ready.put(portal)
                await portal.sleep_until_stopped()

        self._thread = threading.Thread(target=anyio.run, args=(serve,), name="toolrig-runs", daemon=True)
        self._thread.start()
        self._portal = ready.get(timeout=60)
        self._portal.call(self._warm)

    async def _warm(self) -> None:
        """Pay the start-up costs now, not in the first task: the Rig, its catalog, the provider SDK's import.

        A config that cannot run is not an error here: the attempts report it, as they would without this.
        """
        try:
            generation = await self._generation()
            rig = generation.rig(None)
            rig.registry.list()
            client = getattr(generation.provider(rig), "client", None)
            if callable(client):
                client()
        except Exception as exc:
            log.info("the worker could not prepare its runs ahead (%s): its first task will", exc)

    def stop(self) -> None:
        """Close what the host keeps, unless attempts still run (the engine gave up waiting for them).

        Those are left as a dead worker's would be: interrupted where they are, recovered by the engine from
        their journals. Cancelling them here would end their workflows as failed instead.
        """
        portal, self._portal = self._portal, None
        if portal is None or self._running:
            return
        try:
            portal.call(self._aclose)
        finally:
            portal.call(portal.stop)
            if self._thread is not None:
                self._thread.join(10)

    def run(self, task_id: str, workflow_id: str, worker: str) -> str:
        """Run one attempt on the host's loop (called from the engine's workflow thread, which waits)."""
        portal = self._portal
        if portal is None:
            raise RuntimeError("the worker host is not running")
        return portal.call(self._attempt, task_id, workflow_id, worker)

    async def _attempt(self, task_id: str, workflow_id: str, worker: str) -> str:
        from toolrig.workers.runner import run_attempt

        self._running += 1
        try:
            generation = await self._generation()
            generation.users += 1
            try:
                task = await run_attempt(generation.access, task_id, workflow_id, worker, rigs=generation)
            finally:
                generation.users -= 1
                if generation.retired and generation.users == 0:
                    await generation.aclose()
        finally:
            self._running -= 1
        return task["status"] if task else "not-run"

    async def _generation(self) -> _Generation:
        mark = _fingerprint(self.root)
        current = self._current
        if current is not None and current.mark == mark:
            return current
        from toolrig.durable.access import DurableAccess
        from toolrig.workers.runner import _make_rig, run_inline

        if self._pool is None:
            raise RuntimeError("the worker host is not running")
        rig = _make_rig(self.root, None)
        access = DurableAccess(self.root, rig.config, rig.workspace.state_dir, runner=run_inline)
        self._current = _Generation(self.root, mark, self._pool, access, {None: rig})
        if current is not None:
            log.info("the configuration changed: runs from now on use it")
            current.retired = True
            if current.users == 0:
                await current.aclose()
        return self._current

    async def _aclose(self) -> None:
        current, self._current = self._current, None
        if current is not None:
            await current.aclose()
        if self._pool is not None:
            await self._pool.aclose()


def run_attempt_blocking(root: str, task_id: str, workflow_id: str, worker: str) -> str:
    """The engine's entry (a worker thread): the attempt on this worker's host, or on a Rig of its own."""
    host = installed()
    if host is not None:
        return host.run(task_id, workflow_id, worker)
    import anyio

    from toolrig.durable.access import DurableAccess
    from toolrig.workers.runner import _close, _make_rig, run_attempt, run_inline

    rig = _make_rig(Path(root), None)
    access = DurableAccess(Path(root), rig.config, rig.workspace.state_dir, runner=run_inline)
    try:
        task = anyio.run(run_attempt, access, task_id, workflow_id, worker)
    finally:
        anyio.run(_close, rig)
    return task["status"] if task else "not-run"
