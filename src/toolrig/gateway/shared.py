"""This process's part on the runs board (see ``board``).

It posts its runs, applies the requests other processes forward to it, and forwards people's requests for runs
another process is running.
"""

from __future__ import annotations

import logging
import math
import secrets
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.gateway.board import Board, Posted, Request
from toolrig.gateway.channel import AnswerRefused
from toolrig.gateway.owners import OPERATOR, Viewer
from toolrig.gateway.runs import RunRefused

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from toolrig.gateway.runs import LiveRun, RunManager
    from toolrig.rig import Rig

log = logging.getLogger("toolrig.gateway")

POLL = 0.2  # seconds between looks for forwarded requests (and the wait between looks for their results)
BEAT = 2.0  # seconds between this process's beats
WAIT = 30.0  # seconds a forwarded request waits for the process running the run


async def open_board(rig: Rig) -> Board:
    from toolrig.durable.access import database_url

    url = database_url(rig.config.workers, rig.workspace.state_dir)
    board = await anyio.to_thread.run_sync(Board, url, f"serve-{secrets.token_hex(8)}")
    await anyio.to_thread.run_sync(board.beat)
    return board


class Shared:
    def __init__(self, board: Board, runs: RunManager, tasks: TaskGroup, *, shared_users: bool) -> None:
        self.board = board
        self.runs = runs
        self.tasks = tasks
        self.shared_users = shared_users

    def post(self, run: LiveRun) -> None:
        """Post the run's summary as it is now, off the event loop (an older post never wins: see ``Board.put``)."""
        summary = run.summary()
        self.tasks.start_soon(self._put, summary)

    async def post_now(self, run: LiveRun, status: str | None = None) -> None:
        """Post and wait for it; ``status``: the one the run is about to end with."""
        summary = run.summary()
        await self._put(summary if status is None else {**summary, "status": status, "pending": []})

    async def _put(self, summary: dict[str, Any]) -> None:
        try:
            await anyio.to_thread.run_sync(self.board.put, summary)
        except Exception:  # the board is a view for the other processes; this run goes on without it
            log.exception("gateway: could not post run %s to the runs board", summary.get("id"))

    async def serve(self) -> None:
        """Beat, and apply the requests other processes forward for this process's runs, until cancelled."""
        beats = math.ceil(BEAT / POLL)
        turn = 0
        while True:
            try:
                if turn % beats == 0:
                    await anyio.to_thread.run_sync(self.board.beat)
                for request in await anyio.to_thread.run_sync(self.board.todo):
                    status, result = self._apply(request)
                    await anyio.to_thread.run_sync(self.board.done, request.id, status, result)
            except Exception:
                log.exception("gateway: the runs board failed; trying again")
            turn += 1
            await anyio.sleep(POLL)

    def _apply(self, request: Request) -> tuple[int, dict[str, Any]]:
        viewer = OPERATOR if request.user is None else Viewer(request.user, sees_all=self.shared_users)
        try:
            if request.kind == "cancel":
                return 200, self.runs.cancel(request.run_id, viewer).summary()
            if request.kind == "answer":
                body = dict(request.body)
                card_id = str(body.pop("card_id", ""))
                return 200, self.runs.answer(request.run_id, card_id, viewer, **body)
            return 400, {"error": f"unknown request {request.kind!r}"}
        except (RunRefused, AnswerRefused) as exc:
            return exc.status, {"error": exc.message}
        except TypeError:  # a body of the wrong shape (the board is shared: be strict)
            return 422, {"error": "the forwarded request is malformed"}

    async def remote(self, run_id: str, viewer: Viewer) -> Posted | None:
        """Another process's run, if ``viewer`` may see it."""
        posted = await anyio.to_thread.run_sync(self.board.run, run_id)
        if posted is None or posted.process == self.board.process or not viewer.may_see(posted.summary.get("user")):
            return None
        return posted

    async def others(self, viewer: Viewer) -> list[dict[str, Any]]:
        """The runs of the workspace's other live servers (a stopped server's are read by id only)."""
        posted = await anyio.to_thread.run_sync(self.board.others)
        return [{**p.summary, "elsewhere": True} for p in posted if p.alive and viewer.may_see(p.summary.get("user"))]

    async def busy(self, session_id: str) -> bool:
        return session_id in await anyio.to_thread.run_sync(self.board.busy_sessions)

    async def forward(
        self, posted: Posted, run_id: str, kind: str, viewer: Viewer, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """Ask the process running the run; its answer comes back through the board."""
        if not posted.alive:
            return 409, {"error": "the process that ran this run is gone; its paused state waits for the next server"}
        request_id = await anyio.to_thread.run_sync(self.board.ask, posted.process, run_id, kind, viewer.user, body)
        with anyio.move_on_after(WAIT):
            while True:
                done = await anyio.to_thread.run_sync(self.board.result, request_id)
                if done is not None:
                    return done
                await anyio.sleep(POLL)
        return 504, {"error": "the process running this run did not answer in time; try again"}
