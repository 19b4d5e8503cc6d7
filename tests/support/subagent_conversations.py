"""Scripted conversations for runs that happen at once: each run's replies picked by its first user message.

Parallel children cannot share one ordered script, so the fake provider's ``responder`` looks at the
request itself: the first user message names the conversation (a marker word in the prompt), and the
number of assistant turns already in the request picks the reply. Works for both wire protocols.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.fake_llm import Reply, Text, reply


def first_user_text(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        parts = [p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"]
        return "".join(parts)
    return ""


def assistant_turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results' text in the request, both protocols."""
    out: list[str] = []
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            out.append(str(message.get("content")))
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "tool_result":
                    inner = part.get("content")
                    out.append(inner if isinstance(inner, str) else str(inner))
    return out


class Conversations:
    """``marker -> [reply for turn 0, turn 1, ...]``; the last reply repeats once the list runs out."""

    def __init__(self, scripts: dict[str, list[Reply]]) -> None:
        self.scripts = scripts
        self.seen: list[tuple[str, int]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = first_user_text(body)
        turn = assistant_turns(body)
        for marker, replies in self.scripts.items():
            if marker in text:
                self.seen.append((marker, turn))
                return replies[min(turn, len(replies) - 1)]
        return reply(Text(f"no script for {text[:60]!r}"))


def install(llm: Any, scripts: dict[str, list[Reply]]) -> Conversations:
    conversations = Conversations(scripts)
    llm.responder = conversations
    return conversations


Responder = Callable[[dict[str, Any]], Reply]
