"""The buttons the channel has sent: each a fresh single-use nonce bound to one user and one call (or prompt).

Trust model: a press is data from Telegram that anyone who knows the bot can forge. A nonce is 64 random bits,
counts only for the user it was sent to, in that user's own chat, once; a closed nonce is remembered so a replay is
told apart from a made-up one in the audit log.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from toolrig.channels.telegram.view import RunView

KEEP_CLOSED = 10_000


@dataclass(eq=False)
class QuestionCard:
    """One ``ask_user`` card asked as one message per question; it is answered when every question is."""

    card_id: str
    call_id: str
    questions: list[Any]  # approvals.model.Question
    replies: list[dict[str, Any] | None] = field(default_factory=list)  # None: not answered yet
    picked: list[list[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.replies = [None] * len(self.questions)
        self.picked = [[] for _ in self.questions]

    @property
    def complete(self) -> bool:
        return all(reply is not None for reply in self.replies)


@dataclass(eq=False)
class Button:
    user: int
    kind: Literal["approval", "question", "followup"]
    view: RunView | None = None
    card_id: str = ""
    call_id: str = ""
    message_id: int = 0
    question: int = -1
    card: QuestionCard | None = None
    prompts: tuple[str, ...] = ()
    text: str = ""  # the message's own text, to show the outcome under it


class Buttons:
    def __init__(self) -> None:
        self.open: dict[str, Button] = {}
        self.closed: dict[str, tuple[str, Button]] = {}  # nonce -> (why: answered | withdrawn, its button)

    def add(self, button: Button) -> str:
        nonce = secrets.token_hex(8)
        self.open[nonce] = button
        return nonce

    def close(self, nonce: str, why: str) -> None:
        button = self.open.pop(nonce, None)
        if button is not None:
            self.closed[nonce] = (why, button)
            if len(self.closed) > KEEP_CLOSED:
                del self.closed[next(iter(self.closed))]

    def of_card(self, card_id: str) -> list[tuple[str, Button]]:
        return [(n, b) for n, b in self.open.items() if b.card_id == card_id and b.kind != "followup"]

    def replied_to(self, user: int, message_id: Any) -> tuple[str, Button] | None:
        """The open question a user's reply (to that message) answers, if any."""
        for nonce, button in self.open.items():
            if button.kind == "question" and button.user == user and button.message_id == message_id:
                return nonce, button
        return None
