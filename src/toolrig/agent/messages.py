"""Conversation history in a provider-neutral form, so a session started on one provider continues on another.

Blocks follow the shape both providers can be rebuilt from: text, thinking (replayed only to the provider
that signed it), a tool call with its raw argument text, and a tool result with the JSON the model saw.
Everything is plain JSON (``to_json`` / ``from_json``), never pickle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from toolrig.content import parts_from_json, parts_to_json

Role = Literal["user", "assistant"]


@dataclass(slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True)
class ThinkingBlock:
    """Reasoning the model showed; ``signature``/``redacted`` let Anthropic verify it when it is sent back."""

    text: str
    signature: str = ""
    redacted: str = ""  # the opaque data of a redacted_thinking block
    provider: str = ""
    type: Literal["thinking"] = "thinking"


@dataclass(slots=True)
class ToolCallBlock:
    """A call as the model wrote it: ``arguments`` is the raw JSON text, kept even when it does not parse."""

    id: str
    name: str
    arguments: str
    type: Literal["tool_call"] = "tool_call"

    def parsed(self) -> dict[str, Any] | None:
        """The arguments as an object, or None when the text is not a JSON object."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except (UnicodeEncodeError, ValueError, RecursionError):
            # A lone surrogate (legal JSON text, not UTF-8): replayed to a provider it would fail the request,
            # so the history keeps the arguments as their escaped JSON text instead (the gate refused the call).
            return {"_invalid_arguments": self.arguments.encode("utf-8", "backslashreplace").decode()[:2_000]}
        return value


@dataclass(slots=True)
class ToolResultBlock:
    call_id: str
    name: str
    content: str  # the ToolResult JSON the model reads
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"
    media: list[dict[str, Any]] = field(default_factory=list)  # content parts beside the JSON (toolrig.content)


Block: TypeAlias = TextBlock | ThinkingBlock | ToolCallBlock | ToolResultBlock
_BLOCKS: dict[str, type[Block]] = {
    "text": TextBlock,
    "thinking": ThinkingBlock,
    "tool_call": ToolCallBlock,
    "tool_result": ToolResultBlock,
}

_OPTIONAL = frozenset({"signature", "redacted", "provider", "media"})  # left out of the JSON when empty


@dataclass(slots=True)
class Message:
    role: Role
    content: list[Block] = field(default_factory=list)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", [TextBlock(text)])

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        return [b for b in self.content if isinstance(b, ToolCallBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def to_json(self) -> dict[str, Any]:
        blocks = []
        for block in self.content:
            data = {name: getattr(block, name) for name in block.__slots__}
            blocks.append({k: v for k, v in data.items() if k not in _OPTIONAL or v not in ("", [])})
        return {"role": self.role, "content": blocks}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        role = data.get("role")
        if role not in ("user", "assistant"):
            raise ValueError(f"a message's role must be 'user' or 'assistant', not {role!r}")
        blocks: list[Block] = []
        for raw in data.get("content", []):
            kind = _BLOCKS.get(raw.get("type", ""))
            if kind is None:
                raise ValueError(f"unknown message block type {raw.get('type')!r}")
            fields = {k: v for k, v in raw.items() if k != "type"}
            if "media" in fields:  # sessions and paused states are files: parts that no longer validate drop
                fields["media"] = parts_to_json(parts_from_json(fields["media"]))
            blocks.append(kind(**fields))
        return cls(role, blocks)


def messages_to_json(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_json() for m in messages]


def messages_from_json(data: list[dict[str, Any]]) -> list[Message]:
    return [Message.from_json(m) for m in data]


def merged(messages: list[Message]) -> list[Message]:
    """Adjacent messages of one role joined (an aborted turn can leave two user messages in a row)."""
    out: list[Message] = []
    for message in messages:
        if out and out[-1].role == message.role:
            out[-1] = Message(message.role, [*out[-1].content, *message.content])
        else:
            out.append(Message(message.role, list(message.content)))
    return out


def close_open_calls(messages: list[Message], reason: str) -> Message | None:
    """A user message answering tool calls of the last assistant turn that have no result yet.

    History sent to a provider must pair every tool call with a result; an aborted or failed run may
    leave calls unanswered.
    """
    if not messages or messages[-1].role != "assistant":
        return None
    calls = messages[-1].tool_calls
    if not calls:
        return None
    content = json.dumps(
        {"is_error": True, "error_type": "cancelled", "message": reason, "next_action_hint": "Ask the user."}
    )
    return Message("user", [ToolResultBlock(c.id, c.name, content, is_error=True) for c in calls])
