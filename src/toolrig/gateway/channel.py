"""A paused run's open questions and approvals, as cards a person answers over HTTP; the run resumes once all are.

Why pause rather than hold the call: the Rig's approval broker asks one batch at a time, so a run parked on a
person would hold every other run's approvals on the same Rig. A run started here pauses at its first request
(``RunOptions(approvals="pause")``), frees the broker, and ``resume_run`` goes on with the answers.

Trust model: an answer is data from whoever holds the token. Each card gets a fresh unguessable id that answers
that one call once (popped on use); ``resume_run`` binds each decision to the call's fingerprint (tool and exact
arguments). Forged, replayed and stale ids find nothing and are refused (and logged).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.approvals.model import ApprovalDecision
from toolrig.approvals.questions import question_from, refused, replies_from

if TYPE_CHECKING:
    from toolrig.agent.state import PendingCall, RunState

log = logging.getLogger("toolrig.gateway")

Publish = Callable[[dict[str, Any]], None]
OnRefused = Callable[[str, "PendingCall | None", str], None]  # why, the card's call (if the id named one), card id
Suggest = Callable[["PendingCall"], tuple[str, ...]]  # the allowlist patterns "allow always" saves by default
VERDICTS = ("allow_once", "allow_always", "deny")


class AnswerRefused(Exception):
    """An answer that fits no open card (unknown, already used, wrong call) or not its questions."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def card(card_id: str, call: PendingCall, suggested: tuple[str, ...] = ()) -> dict[str, Any]:
    """What a person sees to decide: the exact call, its subjects and the questions (the page shows them as text).

    ``suggested``: what "allow always" would add to the allowlist (the call's exact subjects, as the terminal offers).
    """
    return {
        "type": "pending",
        "id": card_id,
        "kind": "question" if call.questions else "approval",
        "call_id": call.call_id,
        "tool": call.tool,
        "arguments": call.arguments,
        "subjects": list(call.subjects),
        "reason": call.reason,
        "task_id": call.task_id,
        "questions": list(call.questions),
        "suggested": [] if call.questions else list(suggested),
    }


def always_patterns(call: PendingCall, pattern: str | None, suggested: tuple[str, ...]) -> tuple[str, ...]:
    """The terminal's "always" rule: a typed bare glob is about this tool's subjects; nothing typed takes the offer."""
    typed = (pattern or "").strip()
    if typed and ":" not in typed and typed != call.tool:
        typed = f"{call.tool}:{typed}"
    return (typed,) if typed else suggested or (call.tool,)


class Waiting:
    """The cards of one pause; ``ready`` is set when every one has its answer."""

    def __init__(
        self,
        state: RunState,
        publish: Publish,
        on_refused: OnRefused | None = None,
        suggest: Suggest | None = None,
    ) -> None:
        self.state = state
        self._publish = publish
        self._on_refused = on_refused
        self.cards: dict[str, PendingCall] = {
            secrets.token_urlsafe(18): call for call in state.pending if call.needs_approval or call.questions
        }
        self.suggested = {
            call.call_id: (suggest(call) if suggest is not None else (call.tool,)) for call in self.cards.values()
        }
        self.decisions: dict[str, str] = {}
        self.always: dict[str, ApprovalDecision] = {}  # "allow always" answers, with the patterns they save
        self.answers: dict[str, Any] = {}
        self.ready = anyio.Event()
        if not self.cards:
            self.ready.set()

    def announce(self) -> None:
        """Show the cards (once the run's state says it waits: a card seen is a card the runs board lists)."""
        for card_id, call in self.cards.items():
            self._publish(card(card_id, call, self.suggested[call.call_id]))

    def open_cards(self) -> list[dict[str, Any]]:
        return [card(card_id, call, self.suggested[call.call_id]) for card_id, call in self.cards.items()]

    def answer(
        self,
        card_id: str,
        *,
        call_id: str | None,
        verdict: str,
        reason: str = "",
        answers: list[Any] | None = None,
        pattern: str | None = None,
        by: str | None = None,
    ) -> PendingCall:
        call = self.cards.get(card_id)
        if call is None:
            self.refuse("no open card has this id (stale, replayed or forged)", None, card_id)
            raise AnswerRefused(404, "no open approval or question has this id (answered, withdrawn, or never asked)")
        if call_id is not None and call_id != call.call_id:
            self.refuse(f"the answer named another call ({call_id[:80]!r})", call, card_id)
            raise AnswerRefused(409, "this answer names another call than the one this card is for")
        if verdict not in VERDICTS or (call.questions and verdict == "allow_always"):
            raise AnswerRefused(422, "a call is approved once, always, or denied; a question answered or skipped")
        if call.questions:
            self.answers[call.call_id] = None if verdict == "deny" else _checked(call, answers)
        elif verdict == "allow_always":
            patterns = always_patterns(call, pattern, self.suggested[call.call_id])
            self.always[call.call_id] = ApprovalDecision("allow_always", reason, patterns=patterns)
            self.decisions[call.call_id] = verdict
        else:
            self.decisions[call.call_id] = verdict
        del self.cards[card_id]  # single use
        answered = {"type": "pending_answered", "id": card_id, "call_id": call.call_id, "verdict": verdict}
        self._publish({**answered, "by": by})  # who answered (None: the operator's token)
        if not self.cards:
            self.ready.set()
        return call

    def refuse(self, why: str, call: PendingCall | None, card_id: str) -> None:
        log.warning("gateway: refused an answer for card %r: %s", card_id[:40], why)
        if self._on_refused is not None:
            self._on_refused(why, call, card_id)

    def withdraw(self) -> None:
        for card_id, call in list(self.cards.items()):
            del self.cards[card_id]
            self._publish({"type": "pending_withdrawn", "id": card_id, "call_id": call.call_id})


def _checked(call: PendingCall, answers: list[Any] | None) -> list[Any]:
    questions = [question_from(q) for q in call.questions]
    replies = replies_from(answers, questions) if answers is not None else None
    if replies is None:
        raise AnswerRefused(422, f"give exactly one answer per question ({len(questions)})")
    why = refused(replies)
    if why is not None:
        raise AnswerRefused(422, why)
    return list(answers or [])
