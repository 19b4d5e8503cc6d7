"""The agent's public entry points: run, resume, stream. Each builds one run (``loop._Run``) and starts it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio

from toolrig.agent.errors import RunError
from toolrig.agent.loop import _Run
from toolrig.agent.state import RunOptions, RunResult, RunState
from toolrig.approvals import ApprovalDecision, Verdict
from toolrig.events import Event
from toolrig.rig import Rig


async def run_agent(
    prompt: str,
    options: RunOptions | None = None,
    *,
    rig: Rig | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> RunResult:
    """Run the agent on ``prompt`` until it answers; events go to ``on_event`` as they happen.

    Raises ``RunError`` when the run cannot go on (no key, provider errors after retries, timeout,
    budget); a tool's failure never raises, the model reads it and carries on.
    """
    run = _Run(rig or Rig("."), options or RunOptions(), on_event)
    return await run.start(prompt)


async def resume_run(
    state: RunState,
    decisions: Mapping[str, ApprovalDecision | Verdict] | None = None,
    options: RunOptions | None = None,
    *,
    rig: Rig | None = None,
    on_event: Callable[[Event], None] | None = None,
    answers: Mapping[str, Any] | None = None,
) -> RunResult:
    """Continue a paused run with a person's decisions, keyed by tool call id (see ``RunState.pending``).

    ``answers`` answer the questions of paused ``ask_user`` calls: ``{call_id: [answer, ...]}`` with one
    answer per question (``{"selected": [label, ...], "other_text": "..."}``), or ``None`` to skip them.
    """
    options = options or RunOptions()
    if options.model is None and options.provider is None:
        options.model = state.model
    run = _Run(rig or Rig("."), options, on_event)
    return await run.resume(state, decisions or {}, answers)


class AgentRun:
    """A run in progress, iterated for its events; ``result`` is set once the iteration ends."""

    def __init__(self, receive: anyio.abc.ObjectReceiveStream[Event]) -> None:
        self._receive = receive
        self.result: RunResult | None = None
        self.error: BaseException | None = None

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._receive.__aiter__()


@contextlib.asynccontextmanager
async def stream_agent(
    prompt: str, options: RunOptions | None = None, *, rig: Rig | None = None
) -> AsyncIterator[AgentRun]:
    """Run the agent and iterate its events: ``async for event in run``, then read ``run.result``.

    Leaving the block before the events end stops the run. A run failure is raised on leaving the block,
    as ``run_agent`` raises it.
    """
    send, receive = anyio.create_memory_object_stream[Event](max_buffer_size=float("inf"))
    run = AgentRun(receive)

    def forward(event: Event) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            send.send_nowait(event)

    async def drive() -> None:
        async with send:
            try:
                run.result = await run_agent(prompt, options, rig=rig, on_event=forward)
            except RunError as exc:
                run.error = exc

    async with anyio.create_task_group() as tasks, receive:
        tasks.start_soon(drive)
        yield run
        if run.result is None and run.error is None:
            tasks.cancel_scope.cancel()  # the block was left before the run ended: stop it
    if run.error is not None:
        raise run.error
