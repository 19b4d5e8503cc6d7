"""A run's own hooks (``RunOptions.hooks``) beside the Rig's, for the tool points too.

The Rig's executor runs the Rig's hooks around every call. A run's hooks reach the same points through
one gate installed on the Rig, which looks up the hooks of the run making the call in a context variable.
"""

from __future__ import annotations

import contextvars

from toolrig.executor import ToolCall
from toolrig.hooks import HookChain, HookEvent
from toolrig.result import ToolResult
from toolrig.rig import Rig

current_hooks: contextvars.ContextVar[HookChain | None] = contextvars.ContextVar("toolrig_run_hooks", default=None)


class RunToolHooks:
    """``before_tool`` gate and ``after_tool`` step that run the calling run's hooks, if it has any."""

    async def before(self, call: ToolCall) -> None:
        chain = current_hooks.get()
        if chain is not None and len(chain):
            await chain.run(
                HookEvent("before_tool", call.session_id, call.agent_id, tool=call.name, tool_args=call.raw_args)
            )

    async def after(self, call: ToolCall, result: ToolResult) -> ToolResult:
        chain = current_hooks.get()
        if chain is not None and len(chain):
            event = HookEvent(
                "after_tool",
                call.session_id,
                call.agent_id,
                tool=call.name,
                tool_args=call.raw_args,
                tool_result=result,
            )
            await chain.run(event)
        return result


def install_run_hooks(rig: Rig) -> None:
    if any(getattr(gate, "__self__", None).__class__ is RunToolHooks for gate in rig.extensions.before_tool):
        return
    hooks = RunToolHooks()
    rig.extensions.before_tool.append(hooks.before)
    rig.extensions.after_tool.append(hooks.after)
