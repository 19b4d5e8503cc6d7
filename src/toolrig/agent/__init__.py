"""The agent runtime: providers, the tool loop, sessions. Imported lazily; provider SDKs load on first use."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "run_agent": "toolrig.agent.entry",
    "resume_run": "toolrig.agent.entry",
    "stream_agent": "toolrig.agent.entry",
    "AgentRun": "toolrig.agent.entry",
    "RunOptions": "toolrig.agent.state",
    "RunResult": "toolrig.agent.state",
    "RunState": "toolrig.agent.state",
    "PendingCall": "toolrig.agent.state",
    "RunError": "toolrig.agent.errors",
    "Message": "toolrig.agent.messages",
    "Usage": "toolrig.agent.usage",
    "SessionStore": "toolrig.agent.session",
}

__all__ = [
    "AgentRun",
    "Message",
    "PendingCall",
    "RunError",
    "RunOptions",
    "RunResult",
    "RunState",
    "SessionStore",
    "Usage",
    "resume_run",
    "run_agent",
    "stream_agent",
]

if TYPE_CHECKING:
    from toolrig.agent.entry import AgentRun, resume_run, run_agent, stream_agent
    from toolrig.agent.errors import RunError
    from toolrig.agent.messages import Message
    from toolrig.agent.session import SessionStore
    from toolrig.agent.state import PendingCall, RunOptions, RunResult, RunState
    from toolrig.agent.usage import Usage


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolrig.agent' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
