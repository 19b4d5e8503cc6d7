"""What the MCP server needs of a rig: the protocol ``toolrig.rig.Rig`` meets.

The server is an adapter, below the Rig in the layers: it is handed a rig without importing the class above it.
"""

from __future__ import annotations

from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Protocol

from toolrig.approvals.channel import ApprovalChannel
from toolrig.config import Config
from toolrig.event_bus import EventBus, EventSink
from toolrig.gate import ToolCall
from toolrig.policy.governance import Governance
from toolrig.profiles import Profile
from toolrig.registry import AnyTool
from toolrig.result import ToolResult
from toolrig.sandbox.paths import Workspace


class ServedRig(Protocol):
    """A rig served over MCP: its tools, its gated calls and ``policy explain``'s decision, its settings."""

    async def __aenter__(self) -> object:
        """Keep what the rig starts (remote MCP servers) running while it is served."""
        ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    @property
    def config(self) -> Config: ...

    @property
    def workspace(self) -> Workspace: ...

    @property
    def events(self) -> EventBus: ...

    @property
    def approval_channel(self) -> ApprovalChannel | None: ...

    @property
    def governance(self) -> Governance:
        """Its rules and audit log (the audit rows of background commands the served client owns)."""
        ...

    def tools(
        self, group: str | None = None, *, agent: str | None = None, profile: str | Profile | None = None
    ) -> list[AnyTool]: ...

    def call(
        self,
        name: str,
        args: dict[str, Any] | str | None = None,
        /,
        *,
        events: EventSink | None = None,
        profile: str | Profile | None = None,
        **options: Any,
    ) -> Coroutine[Any, Any, ToolResult]: ...

    async def decide(
        self, name: str, args: dict[str, Any] | str | None = None, /, *, profile: str | Profile | None = None
    ) -> tuple[ToolCall, ToolResult | None]: ...
