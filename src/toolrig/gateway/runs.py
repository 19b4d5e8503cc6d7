"""Runs the gateway started: each one the same ``run_agent`` the CLI uses; approvals pause it (see ``channel``).

Every event a run emits (the JSON ``toolrig run --json`` prints, subagents' forwarded ones included) is kept in
the run's own numbered list, so any number of SSE clients can follow it from the start or from the last id they
saw. A run belongs to the gateway that started it; nothing of it is set on the Rig.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from toolrig.events import Event, event_to_json
from toolrig.gateway import kept
from toolrig.gateway.channel import AnswerRefused, Waiting
from toolrig.gateway.owners import OPERATOR, Owners, Viewer

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from toolrig.agent.state import PendingCall, RunState
    from toolrig.rig import Rig

log = logging.getLogger("toolrig.gateway")

KEEP_FINISHED = 200  # finished runs kept for late readers; the session store keeps everything else
MAX_EVENTS = 50_000  # one run's kept events; a reader that comes later misses the oldest (the session has them)


def warm_provider(provider: str) -> None:
    """Import the provider's SDK in a worker thread, once.

    A cold ``import anthropic`` takes seconds on a loaded machine; on the event loop it would stall every request
    and every other run meanwhile.
    """
    import importlib

    sdk = ("anthropic", "anthropic.lib.streaming") if provider == "anthropic" else ("openai",)
    with contextlib.suppress(ImportError):
        for name in (f"toolrig.agent.providers.{'anthropic' if provider == 'anthropic' else 'openai'}", *sdk):
            importlib.import_module(name)


class RunRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(eq=False)
class LiveRun:
    """One run: its events so far, how to stop it, and its parked approvals and questions."""

    id: str
    prompt: str
    agent: str | None
    session_id: str | None
    user: str | None = None  # who started it (several users configured); None: the one token's holder
    started: float = field(default_factory=time.time)
    status: str = "running"
    error: dict[str, str] | None = None
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (sequence number, event JSON)
    last_seq: int = 0
    abort: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    _changed: anyio.Event = field(default_factory=anyio.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _loop_thread: int = field(default_factory=threading.get_ident)  # made on the event loop, in a handler
    _loop: Any = field(default_factory=anyio.lowlevel.current_token)
    waiting: Waiting | None = None  # the open cards while the run is paused for a person
    cancelled: bool = False  # by a person (a shutdown stops runs too, and keeps their paused state)
    on_refused: Any = None  # (why, call, card id) -> None: the audit row for a refused answer
    on_session: Any = None  # (session id) -> None: the run's new session is its user's

    @property
    def finished(self) -> bool:
        return self.status not in ("running", "waiting")

    def answer(self, card_id: str, **answer: Any) -> dict[str, str]:
        if self.waiting is None:
            log.warning("gateway: refused an answer for card %r: run %s waits for none", card_id[:40], self.id)
            if self.on_refused is not None:
                self.on_refused("the run waits for no answer (stale or replayed)", None, card_id)
            raise AnswerRefused(404, "this run waits for no answer now")
        call = self.waiting.answer(card_id, **answer)
        return {"id": card_id, "call_id": call.call_id, "verdict": answer["verdict"]}

    def on_event(self, event: Event) -> None:
        data = event_to_json(event)
        if data.get("type") == "init" and self.session_id is None:
            self.session_id = str(data.get("session_id"))
            if self.on_session is not None:
                self.on_session(self.session_id)
        self.publish(data)

    def publish(self, data: dict[str, Any]) -> None:
        """Keep the event and wake the followers; safe from a tool's worker thread too."""
        with self._lock:
            self.last_seq += 1
            self.events.append((self.last_seq, data))
            if len(self.events) > MAX_EVENTS:
                self.events[: len(self.events) - MAX_EVENTS] = []
        if threading.get_ident() == self._loop_thread:
            self._wake()
        else:  # a sync tool's worker thread (write_todos, suggest_followups emit from there)
            with contextlib.suppress(anyio.RunFinishedError):
                anyio.from_thread.run_sync(self._wake, token=self._loop)

    def _wake(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def follow(
        self, after: int = 0, *, heartbeat: float | None = None
    ) -> AsyncIterator[tuple[int, dict[str, Any]] | None]:
        """The events after sequence number ``after``, as they come, until the run has finished.

        With ``heartbeat``, ``None`` comes whenever that many seconds pass without an event (a run waiting for a
        person can be quiet for hours; proxies cut streams that say nothing).
        """
        while True:
            waiter = self._changed
            with self._lock:
                fresh = [e for e in self.events if e[0] > after]
            for event in fresh:
                after = event[0]
                yield event
            if self.finished and not fresh:
                return
            if not fresh:
                with anyio.move_on_after(heartbeat if heartbeat is not None else float("inf")) as waited:
                    await waiter.wait()
                if waited.cancelled_caught:
                    yield None

    async def settled(self) -> None:
        """Until the run waits for a person or has ended (a restored run gets back to its pause at once)."""
        while self.status == "running":
            waiter = self._changed
            if self.status != "running":
                return
            await waiter.wait()

    def finish(self, status: str) -> None:
        self.status = status
        self.publish({"type": "run_end", "status": status})

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "agent": self.agent,
            "user": self.user,
            "prompt": self.prompt,
            "status": self.status,
            "started": self.started,
            "events": self.last_seq,
            "error": self.error,
            "pending": self.waiting.open_cards() if self.waiting is not None else [],
        }


class RunManager:
    """Starts runs in the server's task group; a slow or stuck run holds only its own task."""

    def __init__(self, rig: Rig, tasks: TaskGroup, *, max_running: int = 64) -> None:
        self.rig = rig
        self.tasks = tasks
        self.max_running = max_running
        self.runs: dict[str, LiveRun] = {}
        self.owners = Owners(rig.workspace.state_dir)
        self.on_change: Callable[[LiveRun], None] | None = None  # the runs board's post (see ``shared``)
        self.post_now: Callable[[LiveRun, str | None], Awaitable[None]] | None = None  # the same, awaited

    def changed(self, run: LiveRun) -> None:
        if self.on_change is not None:
            self.on_change(run)

    def get(self, run_id: str, viewer: Viewer = OPERATOR) -> LiveRun:
        """The run, if ``viewer`` may see it; another user's run is as unknown as a made-up id."""
        run = self.runs.get(run_id)
        if run is None or not viewer.may_see(run.user):
            raise RunRefused(404, "no run has this id here (finished runs are read from their session)")
        return run

    def visible(self, viewer: Viewer = OPERATOR) -> list[LiveRun]:
        return [r for r in self.runs.values() if viewer.may_see(r.user)]

    def for_session(self, session_id: str) -> LiveRun | None:
        """The run going on this session here, if any (a channel continues it rather than start another)."""
        return next((r for r in self.running() if r.session_id == session_id), None)

    def running(self) -> list[LiveRun]:
        return [r for r in self.runs.values() if not r.finished]

    def start(self, prompt: str, *, session_id: str | None, agent: str | None, viewer: Viewer = OPERATOR) -> LiveRun:
        """Start a run as ``viewer`` (a channel names its own user); it owns the new session it makes."""
        live = self.running()
        if len(live) >= self.max_running:
            raise RunRefused(429, f"{len(live)} runs are going already: wait for one to end or cancel one")
        if session_id is not None and not (self._session_exists(session_id) and self.may_see(viewer, session_id)):
            raise RunRefused(404, "no session has this id (see GET /api/sessions)")
        if session_id is not None and any(r.session_id == session_id for r in live):
            raise RunRefused(409, "a run is going on this session already: wait for it, or cancel it")
        if agent is not None and agent != self.rig.agent and agent not in self.rig.config.agents:
            raise RunRefused(422, "no agent of this name is configured (agents: in the config)")
        run = self._new(LiveRun(secrets.token_urlsafe(12), prompt, agent, session_id, user=viewer.user))
        self.tasks.start_soon(self._drive, run, name=f"gateway run {run.id}")
        return run

    def may_see(self, viewer: Viewer, session_id: str) -> bool:
        """Whether ``viewer`` may read or continue this session (a database read: call it off the loop at scale)."""
        return viewer.sees_all or self.owners.owner(session_id) == viewer.user

    def answer(self, run_id: str, card_id: str, viewer: Viewer = OPERATOR, **answer: Any) -> dict[str, str]:
        """Answer a card of a run ``viewer`` may see; trying another user's run is refused as unknown, and audited."""
        run = self.runs.get(run_id)
        if run is not None and not viewer.may_see(run.user):
            self._audit_refusal(run, f"user {viewer.user!r} answered another user's run", None, card_id)
        run = self.get(run_id, viewer)
        answered = run.answer(card_id, by=viewer.user, **answer)
        self.changed(run)  # the board lists the cards still open
        return answered

    def cancel(self, run_id: str, viewer: Viewer = OPERATOR) -> LiveRun:
        run = self.get(run_id, viewer)
        run.cancelled = True
        run.abort.set()  # the loop stops where it is, subagents included, and records what it did
        run.scope.cancel()  # and whatever still waits (a slow model, a person's answer) stops at once
        return run

    def _new(self, run: LiveRun) -> LiveRun:
        self._forget_old()
        run.on_refused = lambda why, call, card_id: self._audit_refusal(run, why, call, card_id)
        if run.user is not None:
            run.on_session = lambda session_id: self.owners.claim(session_id, str(run.user))
        self.runs[run.id] = run
        self.changed(run)
        return run

    def _session_exists(self, session_id: str) -> bool:
        from toolrig.agent.session import SessionStore

        return SessionStore.shared(self.rig.workspace.state_dir).exists(session_id)

    def _forget_old(self) -> None:
        done = [r for r in self.runs.values() if r.finished]
        for run in done[: max(0, len(done) - KEEP_FINISHED)]:
            del self.runs[run.id]

    async def _drive(self, run: LiveRun, state: RunState | None = None) -> None:
        from toolrig.agent import RunError
        from toolrig.commands._paused_runs import ResumeRefused

        status = "aborted"
        try:
            with run.scope:
                await anyio.to_thread.run_sync(warm_provider, self.rig.config.llm.provider)
                status = await self._go(run, state)
        except RunError as exc:  # the stream carries the error event already
            run.error = {"kind": exc.kind, "message": exc.message}
            status = "failed"
        except ResumeRefused as exc:  # another process resumed (or removed) the paused state first
            run.error = {"kind": "state", "message": str(exc)}
            run.publish({"type": "error", "kind": "state", "message": str(exc)})
            status = "failed"
        except Exception as exc:  # one run's bug must not take the server (and every other run) down
            log.exception("gateway: run %s failed", run.id)
            run.error = {"kind": "internal", "message": type(exc).__name__}
            run.publish({"type": "error", "kind": "internal", "message": "the run failed inside toolrig (see the log)"})
            status = "failed"
        finally:
            if run.waiting is not None:
                run.waiting.withdraw()
                if run.cancelled:  # a person cancelled it: its kept state goes too (a shutdown keeps it)
                    self._drop_saved(run.waiting.state.session_id)
                run.waiting = None
            if self.post_now is not None:  # the board has the end before anyone sees run_end
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self.post_now(run, status)
            run.finish(status)

    async def _go(self, run: LiveRun, state: RunState | None) -> str:
        """Run, and each time it pauses for a person: keep its state, show the cards, resume with the answers."""
        from toolrig.agent import resume_run, run_agent
        from toolrig.commands import _paused_runs as paused_runs

        state_dir = self.rig.workspace.state_dir
        if state is None:
            options = self._options(run, run.session_id)
            result = await run_agent(run.prompt, options, rig=self.rig, on_event=run.on_event)
            if result.stop_reason != "paused" or result.state is None:
                return result.stop_reason
            state = result.state
        while True:
            kept.save(state_dir, state.session_id, kept.Kept(run.agent or self.rig.agent, run.user, run.prompt))
            paused_runs.save(state_dir, state)  # a restart keeps it: the next server shows its cards again
            run.waiting = Waiting(state, run.publish, run.on_refused, self._suggest)
            run.status = "waiting"
            if self.post_now is not None:
                await self.post_now(run, None)  # on the runs board before anyone sees a card
            else:
                self.changed(run)
            run.waiting.announce()
            await run.waiting.ready.wait()
            waiting, run.waiting = run.waiting, None
            paused_runs.take(state_dir, state.session_id)  # single use, across processes too
            kept.drop(state_dir, state.session_id)
            replies = paused_runs.replies_for(state, waiting.answers, waiting.decisions)
            run.status = "running"
            self.changed(run)
            result = await resume_run(
                state,
                {**replies.decisions, **waiting.always},  # "always": saved by governance, scoped to the agent
                self._options(run, None),
                rig=self.rig,
                on_event=run.on_event,
                answers=replies.answers,
            )
            if result.stop_reason != "paused" or result.state is None:
                return result.stop_reason
            state = result.state

    def restore(self, skip: set[str] | frozenset[str] = frozenset()) -> list[LiveRun]:
        """Runs paused in this workspace (before a restart, or by `toolrig run`) wait here for their answers again.

        Each shows its conversation so far (a ``history`` event) and resumes as the agent that paused it (kept by
        ``kept``); one whose agent is no longer configured stays paused rather than resume with other permissions.
        A run ``toolrig run`` paused has no record: it resumes as the server's agent, as ``toolrig run --resume``.
        ``skip``: sessions whose paused run another live server shows (the runs board says which).
        """
        from toolrig.commands import _paused_runs as paused_runs

        state_dir = self.rig.workspace.state_dir
        folder = state_dir / "paused"
        restored = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            if path.stem in skip:
                continue
            try:
                state = paused_runs.claim(state_dir, path.stem)
            except paused_runs.ResumeRefused as exc:
                log.warning("gateway: a paused run is not restored: %s", exc)
                continue
            record = kept.load(state_dir, state.session_id)
            agent = record.agent if record is not None else None
            if agent is not None and agent != self.rig.agent and agent not in self.rig.config.agents:
                log.warning("gateway: paused run %s is not restored: its agent %r is gone", state.session_id, agent)
                continue
            prompt = record.prompt if record is not None else _last_prompt(state)
            user = record.user if record is not None else None
            run = LiveRun(secrets.token_urlsafe(12), prompt, agent, state.session_id, user=user)
            run.publish({"type": "init", "session_id": state.session_id})
            run.publish({"type": "history", "messages": [message.to_json() for message in state.messages]})
            self._new(run)
            self.tasks.start_soon(self._drive, run, state, name=f"gateway run {run.id}")
            restored.append(run)
        return restored

    def _suggest(self, call: PendingCall) -> tuple[str, ...]:
        """The patterns "allow always" saves unless the person types one: as ``Governance.suggest`` offers."""
        from toolrig.policy.subjects import escape, kind_of, view

        tool = self.rig.catalog.find(call.tool)
        if tool is None or not call.subjects:
            return (call.tool,)
        seen = view(kind_of(tool), list(call.subjects), self.rig.workspace)
        return tuple(dict.fromkeys(f"{call.tool}:{escape(unit)}" for unit in seen.units)) or (call.tool,)

    @staticmethod
    def _options(run: LiveRun, session_id: str | None) -> Any:
        from toolrig.agent import RunOptions

        return RunOptions(
            session_id=session_id, abort=run.abort, approvals="pause", questions="pause", agent_id=run.agent
        )

    def _audit_refusal(self, run: LiveRun, why: str, call: PendingCall | None, card_id: str) -> None:
        """A forged, replayed or mismatched answer: one audit row, as for the remote approval channels."""
        from toolrig.approvals.model import ApprovalRequest, RefusedAnswer

        request = None
        if call is not None:
            request = ApprovalRequest(
                call.call_id,
                call.tool,
                {},
                session_id=run.session_id or "",
                agent_id=call.task_id,
                fingerprint=call.fingerprint,
            )
        sender = f"card {card_id[:40]!r} of {run.user or 'the operator'}'s run"
        self.rig.governance.refused_answer(RefusedAnswer("web", why, request, sender))

    def _drop_saved(self, session_id: str) -> None:
        from toolrig.commands import _paused_runs as paused_runs

        with contextlib.suppress(paused_runs.ResumeRefused, OSError):
            paused_runs.take(self.rig.workspace.state_dir, session_id)
        kept.drop(self.rig.workspace.state_dir, session_id)


def _last_prompt(state: RunState) -> str:
    for message in reversed(state.messages):
        if message.role == "user" and message.text.strip():
            return message.text[:2000]
    return "(paused before this server started)"
