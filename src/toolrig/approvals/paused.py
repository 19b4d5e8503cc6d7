"""Paused runs: a channel that answers nothing now, and one that replays the person's later decisions.

A headless run cannot wait for a person: ``PauseChannel`` records each request (approval or question) by
its tool call id and the run stops with them in its ``RunState``; whoever resumes it (any process) hands
the decisions and answers to ``ReplayChannel``. Anything without a decision is denied, never allowed by
default; a question without answers is skipped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolrig.approvals.channel import ApprovalChannel
from toolrig.approvals.model import ApprovalDecision, ApprovalRequest, Verdict
from toolrig.approvals.questions import replies_from

PAUSED_REASON = "paused: this call waits for a person's decision; the run will resume with it"


@dataclass
class PauseChannel:
    """Answers nothing now: records each request by its call id, so the run can stop and be resumed."""

    pending: dict[str, ApprovalRequest] = field(default_factory=dict)

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        for request in requests:
            self.pending[request.id] = request
        # Denied for now so nothing runs, but recorded as waiting: the person has not said no.
        return [ApprovalDecision("deny", PAUSED_REASON, how="paused") for _ in requests]


class ReplayChannel:
    """Answers with what a person gave for a paused run, keyed by tool call id; anything else is denied.

    ``decisions`` answer approvals; ``answers`` answer questions (``ask_user``): per call a list with one
    answer per question (``{"selected": [...], "other_text": ...}`` or the seed's spelling), or None to skip.
    A question the paused state did not ask (one the resumed run asks afresh, its call id not in ``asked``)
    goes to ``then``, the run's own question channel: a headless run pauses again rather than skip it.

    Each decision and answer is used once, and a decision holds only for the call the person saw: ``bound``
    maps a paused call id to its request's fingerprint (tool and exact arguments). A later approval request
    that is not that call (a new call, or one reusing the id with other arguments) is fresh: it goes to
    ``approvals``, the run's own approval channel (a headless run pauses again), else it is denied.
    """

    def __init__(
        self,
        decisions: Mapping[str, ApprovalDecision | Verdict],
        answers: Mapping[str, Any] | None = None,
        *,
        asked: Collection[str] = (),
        then: ApprovalChannel | None = None,
        bound: Mapping[str, str] | None = None,
        approvals: ApprovalChannel | None = None,
    ) -> None:
        self.decisions = {
            k: (v if isinstance(v, ApprovalDecision) else ApprovalDecision(v)) for k, v in decisions.items()
        }
        self.answers = dict(answers or {})
        self.asked = {*asked, *self.answers}
        self.then = then
        self.bound = dict(bound or {})
        self.approvals = approvals

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        decided: dict[int, ApprovalDecision] = {}
        for channel, fresh in (
            (self.then, [r for r in requests if r.questions and r.id not in self.asked]),
            (self.approvals, [r for r in requests if not r.questions and not self._paused(r)]),
        ):
            if fresh and channel is not None:
                decided |= {id(r): d for r, d in zip(fresh, await channel.decide(fresh), strict=True)}
        return [decided.get(id(r)) or (self._question(r) if r.questions else self._approval(r)) for r in requests]

    def _paused(self, request: ApprovalRequest) -> bool:
        """Whether this is a call the paused state holds, not yet decided (a decision given answers it)."""
        if request.id in self.bound:
            return self.bound[request.id] == request.fingerprint
        return request.id in self.decisions

    def _approval(self, request: ApprovalRequest) -> ApprovalDecision:
        if not self._paused(request):
            return ApprovalDecision("deny", "no decision was given for this call when the run resumed")
        decision = self.decisions.pop(request.id, None)
        fingerprint = self.bound.pop(request.id, "")
        if decision is None:
            return ApprovalDecision("deny", "no decision was given for this call when the run resumed")
        return replace(decision, fingerprint=fingerprint) if fingerprint else decision

    def _question(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.discard(request.id)  # answered once: a later question reusing the id is asked afresh
        replies = replies_from(self.answers.pop(request.id, None), request.questions)
        if replies is None:
            return ApprovalDecision("deny", "no answers were given for these questions when the run resumed")
        return ApprovalDecision("allow_once", "answered when the run resumed", answers=replies)
