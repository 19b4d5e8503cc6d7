"""The step journal: each tool call of a durable run recorded before and after it happens, each model turn after.

A replay of the same run (a worker died; the engine runs the attempt again elsewhere) returns recorded
outcomes instead of calling again. A tool call recorded as started but never finished has an unknown
outcome: the model is told so, and the call is not repeated behind its back. A model turn in the same state
is simply asked again (asking twice has no effect on the world).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from toolrig.agent.messages import Message
from toolrig.agent.providers.base import TurnComplete
from toolrig.agent.usage import Usage
from toolrig.durable.store import Records
from toolrig.errors import ErrorType
from toolrig.result import ToolResult

UNKNOWN_OUTCOME = (
    "This call was running when the worker executing this task stopped; whether it took effect is unknown."
)
UNKNOWN_HINT = "Check its effect (read the file, list the state) before calling it again."


class Journal:
    """``RunOptions.steps`` for one attempt (``run_id`` is the engine's workflow id).

    Read once (``recorded``, from the attempt's opening transaction, or on first use), then written one transaction
    per step: a tool call's start and end, a model turn's end only (a turn with no end is asked again, as one
    that started would be). With ``task_id`` the writes also look at the task in the same transaction and raise
    ``Cancelled`` when it was cancelled: a tool call's start (nothing runs then), a model turn's end, and before
    a model turn that follows tool calls (which may have run long). So a cancel stops the attempt at its next step.
    """

    def __init__(
        self,
        records: Records,
        run_id: str,
        *,
        task_id: str | None = None,
        recorded: dict[str, tuple[str, Any]] | None = None,
    ) -> None:
        self.records = records
        self.run_id = run_id
        self.task_id = task_id
        self._recorded = recorded
        self._seen_live = True  # the attempt's claim found the task running
        self.replayed = 0
        self.unknown = 0

    async def model_turn(self, key: str, run: Callable[[], Awaitable[TurnComplete]]) -> TurnComplete:
        recorded = (await self._steps()).get(key)
        if recorded is not None and recorded[0] == "done":
            self.replayed += 1
            return _turn_from(recorded[1])
        if self.task_id is not None and not self._seen_live:
            await self._call(partial(self.records.task_live, self.task_id))
        complete = await run()
        write = partial(self.records.step_done, task_id=self.task_id, new=recorded is None)
        await self._call(partial(write, self.run_id, key, _turn_to(complete)))
        self._seen_live = True
        return complete

    async def tool_call(self, key: str, run: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
        recorded = (await self._steps()).get(key)
        self._seen_live = False
        if recorded is not None:
            state, payload = recorded
            if state == "done":
                self.replayed += 1
                return ToolResult.model_validate(payload)
            self.unknown += 1
            result = ToolResult.error(ErrorType.CONFLICT, UNKNOWN_OUTCOME, UNKNOWN_HINT)
            await self._call(self.records.step_done, self.run_id, key, result.model_dump(mode="json"))
            return result
        if not await self._call(partial(self.records.step_started, self.run_id, key, task_id=self.task_id)):
            # Another replay of this run got here first: its outcome is not ours to guess.
            return ToolResult.error(ErrorType.CONFLICT, UNKNOWN_OUTCOME, UNKNOWN_HINT)
        result = await run()
        await self._call(self.records.step_done, self.run_id, key, result.model_dump(mode="json"))
        return result

    async def _steps(self) -> dict[str, tuple[str, Any]]:
        if self._recorded is None:
            self._recorded = await self._call(self.records.steps_of, self.run_id)
        return self._recorded

    @staticmethod
    async def _call(fn: Callable[..., Any], *args: Any) -> Any:
        """One transaction in a worker thread: a database wait never holds the runs sharing the event loop."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(fn, *args)


def _turn_to(complete: TurnComplete) -> dict[str, Any]:
    return {
        "message": complete.message.to_json(),
        "usage": complete.usage.to_json(),
        "stop_reason": complete.stop_reason,
        "raw_stop_reason": complete.raw_stop_reason,
    }


def _turn_from(data: dict[str, Any]) -> TurnComplete:
    return TurnComplete(
        Message.from_json(data["message"]),
        Usage.from_json(data["usage"]),
        data.get("stop_reason", ""),
        data.get("raw_stop_reason", ""),
    )
