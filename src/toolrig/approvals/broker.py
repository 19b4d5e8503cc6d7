"""Getting approvals answered: batching parallel requests, timeouts with a fallback, single-use grants.

Trust model: an answer comes from a person (or a program standing in for one) through a channel; it is
bound to the fingerprint of the exact tool and arguments, so it can never approve a different call.

Calls that ask at once are shown as one batch. The first request to arrive leads: it lets every call
started in the same tick reach its gate, then waits while other calls are still on their way to the
approval step (policy passed, approval not reached yet) or while a front end holds the batch open
(``collecting()``), at most ``batch_window`` seconds, and hands the whole batch to the channel. If the
leader is cancelled, the others elect a new one, so nobody waits on a call that is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import anyio
import anyio.lowlevel

from toolrig.approvals.channel import ApprovalChannel, NobodyHere
from toolrig.approvals.forward import FirstAnswer
from toolrig.approvals.model import ApprovalDecision, ApprovalRequest
from toolrig.event_bus import EventSink

log = logging.getLogger("toolrig.approvals.broker")


@dataclass(frozen=True, slots=True)
class Answer:
    decision: ApprovalDecision
    how: str  # for the audit row: allow_once, allow_always, deny, timeout:deny, no_channel:allow, grant, ...


@dataclass(slots=True)
class _Slot:
    request: ApprovalRequest
    events: EventSink
    channel: ApprovalChannel | None = None  # the caller's own (its run's), else the Rig's
    answer: Answer | None = None

    @property
    def key(self) -> int:
        """Whose person is asked: requests with one key are asked together, one batch at a time."""
        return id(self.channel)


class ApprovalBroker:
    """One per Rig: the requests of every caller meet here so that calls that ask at once are asked at once.

    Who is asked comes with each request (its caller's channel, passed with the call), the Rig's own channel
    otherwise. Batches are led per channel: a caller whose person has not answered yet holds back only the
    requests for that same person, never another caller's (a gateway's runs each have their own). Nothing of a
    run is kept here beyond the requests waiting in a batch.
    """

    def __init__(
        self,
        channel: ApprovalChannel | None,
        *,
        timeout: float = 300.0,
        fallback: str = "deny",
        batch_window: float = 0.5,
        forward: Sequence[ApprovalChannel] = (),
    ) -> None:
        self.channel = channel
        self.forward = list(forward)  # approvals.forward: remote channels raced against ``channel``
        self.timeout = timeout
        self.fallback = fallback
        self.batch_window = batch_window
        self._queue: list[_Slot] = []
        self._leading: set[int] = set()  # the channels (by identity) a batch is being asked of right now
        self._changed: anyio.Event | None = None
        self._arriving: set[str] = set()
        self._holds = 0
        self._grants: dict[str, ApprovalDecision] = {}

    # ------------------------------------------------------------------------------ what callers use

    def grant(self, fingerprint: str, decision: ApprovalDecision | None = None) -> None:
        """Answer one future request with this fingerprint in advance (a resumed run, a program's pre-approval)."""
        self._grants[fingerprint] = decision or ApprovalDecision("allow_once", fingerprint=fingerprint)

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Hold the batch open while a front end is still starting calls (an agent loop streaming tool calls)."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            self._notify()

    def arrive(self, call_id: str) -> None:
        """A call passed policy and is on its way to the approval step."""
        self._arriving.add(call_id)

    def depart(self, call_id: str) -> None:
        """The call reached the approval step or ended before it."""
        if call_id in self._arriving:
            self._arriving.discard(call_id)
            self._notify()

    async def decide(
        self, request: ApprovalRequest, events: EventSink, channel: ApprovalChannel | None = None
    ) -> Answer:
        from toolrig.events import ApprovalRequestEvent, ApprovalResolvedEvent  # built on the first approval

        granted = self._grants.pop(request.fingerprint, None) if request.fingerprint else None
        if granted is not None:
            events.emit(
                ApprovalRequestEvent(request.id, request.tool, request.args, list(request.subjects), request.reason)
            )
            answer = Answer(_bound(granted, request), "grant")
            events.emit(
                ApprovalResolvedEvent(request.id, request.tool, answer.decision.verdict, answer.decision.reason)
            )
            return answer
        if channel is None and self.channel is None and not self.forward:
            return self._fallback("nobody can be asked here (no approval channel)", "no_channel")
        if not self._queue and not self._leading:
            self._changed = None  # nobody waits: never reuse an event made in another event loop
        slot = _Slot(request, events, channel)
        self._queue.append(slot)
        self._notify()
        try:
            while slot.answer is None:
                if slot.key in self._leading:
                    await self._wait()
                    continue
                self._leading.add(slot.key)
                try:
                    await self._lead(slot.key)
                finally:
                    self._leading.discard(slot.key)
                    self._notify()
        finally:
            if slot in self._queue:
                self._queue.remove(slot)
        return slot.answer

    # ------------------------------------------------------------------------------ leading a batch

    def _asking(self, own: ApprovalChannel | None) -> ApprovalChannel:
        """The channel a batch goes to: the caller's or the Rig's, raced against the forwarded ones if any."""
        channels = [c for c in (own or self.channel, *self.forward) if c is not None]
        return channels[0] if len(channels) == 1 else FirstAnswer(channels)

    async def _lead(self, key: int) -> None:
        from toolrig.events import ApprovalRequestEvent, ApprovalResolvedEvent

        deadline = anyio.current_time() + self.batch_window
        await anyio.lowlevel.checkpoint()  # calls started in the same tick run up to their own gates
        while self._arriving or self._holds:
            left = deadline - anyio.current_time()
            if left <= 0:
                break
            with anyio.move_on_after(left):
                await self._wait()
        batch = [slot for slot in self._queue if slot.key == key]  # one question, to this channel's person
        self._queue = [slot for slot in self._queue if slot.key != key]
        try:
            for slot in batch:
                request = slot.request
                slot.events.emit(
                    ApprovalRequestEvent(request.id, request.tool, request.args, list(request.subjects), request.reason)
                )
            answers = await self._ask(self._asking(batch[0].channel), [slot.request for slot in batch])
            for slot, answer in zip(batch, answers, strict=True):
                slot.answer = answer
                decision = answer.decision
                slot.events.emit(
                    ApprovalResolvedEvent(slot.request.id, slot.request.tool, decision.verdict, decision.reason)
                )
        finally:
            # Cancelled mid-question: whoever is still waiting goes back in line for the next leader.
            self._queue[:0] = [slot for slot in batch if slot.answer is None]

    async def _ask(self, channel: ApprovalChannel, requests: list[ApprovalRequest]) -> list[Answer]:
        decisions = None
        try:
            with anyio.move_on_after(self.timeout):
                decisions = list(await channel.decide(requests))
        except NobodyHere:
            return [self._fallback("nobody can be asked here (no approval channel)", "no_channel")] * len(requests)
        except Exception:
            log.exception("the approval channel failed; using the fallback")
            return [self._fallback("the approval channel failed", "channel_error")] * len(requests)
        if decisions is None:
            return [self._fallback(f"no answer came within {self.timeout:g} seconds", "timeout")] * len(requests)
        if len(decisions) != len(requests):
            log.error("the approval channel answered %d of %d requests", len(decisions), len(requests))
            return [self._fallback("the approval channel gave no answer for it", "channel_error")] * len(requests)
        answers = []
        for request, decision in zip(requests, decisions, strict=True):
            bound = _bound(decision, request)
            answers.append(Answer(bound, (decision.how or bound.verdict) if bound is decision else "deny:fingerprint"))
        return answers

    def _fallback(self, why: str, label: str) -> Answer:
        if self.fallback == "allow":
            return Answer(ApprovalDecision("allow_once", f"{why}; approvals.fallback allows it"), f"{label}:allow")
        return Answer(ApprovalDecision("deny", f"{why}; approvals.fallback denies it"), f"{label}:deny")

    async def _wait(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None


def _bound(decision: ApprovalDecision, request: ApprovalRequest) -> ApprovalDecision:
    """An answer given for other arguments approves nothing."""
    if decision.fingerprint and request.fingerprint and decision.fingerprint != request.fingerprint:
        return ApprovalDecision("deny", "the answer was given for a call with other arguments")
    return decision
