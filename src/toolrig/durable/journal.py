"""The step journal: each model turn and tool call of a durable run, recorded before and after it happens.

A replay of the same run (a worker died; the engine runs the attempt again elsewhere) returns recorded
outcomes instead of calling again. A tool call recorded as started but never finished has an unknown
outcome: the model is told so, and the call is not repeated behind its back. A model turn in the same state
is simply asked again (asking twice has no effect on the world).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
    """``RunOptions.steps`` for one attempt (``run_id`` is the engine's workflow id)."""

    def __init__(self, records: Records, run_id: str) -> None:
        self.records = records
        self.run_id = run_id
        self.replayed = 0
        self.unknown = 0

    async def model_turn(self, key: str, run: Callable[[], Awaitable[TurnComplete]]) -> TurnComplete:
        recorded = await self._recorded(key)
        if recorded is not None and recorded[0] == "done":
            self.replayed += 1
            return _turn_from(recorded[1])
        if recorded is None:
            await self._call(self.records.step_started, self.run_id, key)
        complete = await run()
        await self._call(self.records.step_done, self.run_id, key, _turn_to(complete))
        return complete

    async def tool_call(self, key: str, run: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
        recorded = await self._recorded(key)
        if recorded is not None:
            state, payload = recorded
            if state == "done":
                self.replayed += 1
                return ToolResult.model_validate(payload)
            self.unknown += 1
            result = ToolResult.error(ErrorType.CONFLICT, UNKNOWN_OUTCOME, UNKNOWN_HINT)
            await self._call(self.records.step_done, self.run_id, key, result.model_dump(mode="json"))
            return result
        if not await self._call(self.records.step_started, self.run_id, key):
            # Another replay of this run got here first: its outcome is not ours to guess.
            return ToolResult.error(ErrorType.CONFLICT, UNKNOWN_OUTCOME, UNKNOWN_HINT)
        result = await run()
        await self._call(self.records.step_done, self.run_id, key, result.model_dump(mode="json"))
        return result

    async def _recorded(self, key: str) -> tuple[str, Any] | None:
        recorded: tuple[str, Any] | None = await self._call(self.records.step, self.run_id, key)
        return recorded

    @staticmethod
    async def _call(fn: Callable[..., Any], *args: Any) -> Any:
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
