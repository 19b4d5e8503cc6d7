"""Approvals over MCP: the client asks its user through elicitation; without it, a configured fallback answers.

Trust model: the answer is only as good as the client that relays it; an answer is bound to the approval
request it was asked for (its id, hence its fingerprint of tool and arguments). A client that cannot ask
gets the fallback (deny by default), never a silent yes.

Questions (``ask_user``) travel the same way, as a form whose JSON Schema is built from the options; a
question with a form of its own (checked by ``toolrig.forms``) sends that form as written, and the client's
answer is checked against it before the tool sees it.

Clients on 2025-era protocols are asked mid-call with ``elicitation/create``. 2026-07-28 clients cannot be
sent requests, so the call is parked: the server answers ``input_required`` with the questions, the client
asks its user and calls again with the answers, and the parked call resumes where it stopped. A parked
call that nobody resumes is denied after ``timeout_seconds``.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from toolrig.approvals.model import ApprovalDecision, ApprovalRequest, Verdict
from toolrig.approvals.questions import answered, elicitation_schema, refused, replies_from_form

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.types import ElicitRequest

    from toolrig.result import ToolResult

log = logging.getLogger("toolrig.mcp")

Fallback = Literal["deny", "allow"]

DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [
                {"const": "allow_once", "title": "Allow once"},
                {"const": "allow_always", "title": "Always allow"},
                {"const": "deny", "title": "Deny"},
            ],
        }
    },
    "required": ["decision"],
}
_VERDICTS: tuple[Verdict, ...] = ("allow_once", "allow_always", "deny")


class Asker(Protocol):
    """Puts approval questions to the user of the MCP client that made a call."""

    async def ask(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]: ...


class McpApprovalChannel:
    """The ``ApprovalChannel`` of one call under ``toolrig mcp serve``: asks the client that made it.

    Made per call and passed with it (``Rig.call(..., channel=...)``), so a batch that gathers several
    clients' calls is split by the broker and each client is asked only about its own calls. A client that
    cannot ask (``asker`` None) gets the fallback.
    """

    def __init__(self, fallback: Fallback = "deny", asker: Asker | None = None) -> None:
        self.fallback = fallback
        self.asker = asker

    async def decide(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        if self.asker is None:
            return [self._fallback() for _ in requests]
        return list(await self.asker.ask(requests))

    def _fallback(self) -> ApprovalDecision:
        if self.fallback == "deny":
            return ApprovalDecision(
                "deny", "the MCP client cannot ask its user (no elicitation support)", by_default=True
            )
        return ApprovalDecision(
            "allow_once", "allowed without asking: the MCP client cannot ask its user", by_default=True
        )


def question(request: ApprovalRequest) -> str:
    """What the user reads: the tool, what it acts on, why it asks, and the exact arguments."""
    lines = [f"Allow the tool '{request.tool}' to run?"]
    if request.reason:
        lines.append(request.reason)
    if request.subjects:
        lines.append("It acts on: " + ", ".join(request.subjects[:10]))
    args = json.dumps(request.args, ensure_ascii=False, default=str)
    lines.append("Arguments: " + (args if len(args) <= 2000 else args[:2000] + "…"))
    return "\n".join(lines)


def decision_from(answer: Any, request: ApprovalRequest | None = None) -> ApprovalDecision:
    """Read an ElicitResult (or its JSON): only an accepted, well-formed answer allows anything.

    For a question request the accepted form holds the answers (see ``elicitation_schema``); anything
    else (declined, dismissed, not a form) skips the questions.
    """
    action = getattr(answer, "action", None) if not isinstance(answer, dict) else answer.get("action")
    content = getattr(answer, "content", None) if not isinstance(answer, dict) else answer.get("content")
    if request is not None and request.questions:
        if action == "accept" and isinstance(content, dict):
            replies = replies_from_form(content, request.questions)
            if answered(replies) or refused(replies) is not None:  # a refusal reaches the tool, with its reason
                return ApprovalDecision("allow_once", "answered through the MCP client", answers=replies)
        return ApprovalDecision("deny", "the user skipped the questions")
    if action == "accept" and isinstance(content, dict) and content.get("decision") in _VERDICTS:
        verdict: Verdict = content["decision"]
        return ApprovalDecision(verdict, "the user answered through the MCP client")
    if action == "decline":
        return ApprovalDecision("deny", "the user declined")
    if action == "cancel":
        return ApprovalDecision("deny", "the user dismissed the question")
    return ApprovalDecision("deny", "the MCP client sent no usable answer")


def form(request: ApprovalRequest) -> tuple[str, dict[str, Any]]:
    """The message and the JSON Schema of the form a request is asked with."""
    if len(request.questions) == 1 and request.questions[0].form is not None:
        return request.questions[0].question or "Please fill in this form.", elicitation_schema(request.questions)
    if request.questions:
        lines = ["The agent asks:"]
        for index, item in enumerate(request.questions, start=1):
            lines.append(f"{index}. {item.question}")
        return "\n".join(lines), elicitation_schema(request.questions)
    return question(request), DECISION_SCHEMA


def elicit_request(request: ApprovalRequest) -> ElicitRequest:
    from mcp.types import ElicitRequest, ElicitRequestFormParams

    message, schema = form(request)
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


class ElicitingAsker:
    """2025-era clients: one ``elicitation/create`` per request, sent on the call's own stream."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ctx = ctx

    async def ask(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        from mcp.shared.exceptions import MCPError, NoBackChannelError

        decisions = []
        for request in requests:
            message, schema = form(request)
            try:
                answer = await self._ctx.session.elicit_form(message, schema, related_request_id=self._ctx.request_id)
            except (MCPError, NoBackChannelError) as exc:
                decisions.append(ApprovalDecision("deny", f"the MCP client could not ask its user: {exc}"))
                continue
            decisions.append(decision_from(answer, request))
        return decisions


class ParkedCall:
    """A call waiting for its client to come back with answers (2026-07-28 input_required rounds).

    The call itself runs in the server's task group; each round's ``tools/call`` waits for the next thing
    the call has to say: questions (answered by the next round) or its result.
    """

    def __init__(self, fingerprint: str, timeout_seconds: float) -> None:
        self.key = secrets.token_urlsafe(24)  # the request state: unguessable, so it cannot be forged
        self.fingerprint = fingerprint
        self.timeout_seconds = timeout_seconds
        self.questions: dict[str, ApprovalRequest] = {}
        self.result: ToolResult | None = None
        self.report: Callable[[float, float | None, str | None], Awaitable[None]] | None = None
        self._answers: dict[str, Any] = {}
        self._answered = anyio.Event()
        self._send, self._receive = anyio.create_memory_object_stream[str](2)
        self._scope = anyio.CancelScope()

    async def ask(self, requests: Sequence[ApprovalRequest]) -> list[ApprovalDecision]:
        self.questions = {request.id: request for request in requests}
        self._answers, self._answered = {}, anyio.Event()
        if not self._announce("questions"):
            return [ApprovalDecision("deny", "the MCP client went away") for _ in requests]
        try:
            with anyio.move_on_after(self.timeout_seconds):
                await self._answered.wait()
        finally:
            answers, self.questions = self._answers, {}
        return [
            decision_from(answers[r.id], r) if r.id in answers else ApprovalDecision("deny", "no answer came in time")
            for r in requests
        ]

    def answer(self, responses: dict[str, Any]) -> None:
        self._answers = {key: value for key, value in responses.items() if key in self.questions}
        self._answered.set()

    async def run(self, call: Callable[[], Awaitable[ToolResult]]) -> None:
        """Run the call (registered with this object as its asker); always ends by announcing its end."""
        try:
            with self._scope:
                self.result = await call()
        finally:
            self._announce("done")
            self._send.close()

    def _announce(self, what: str) -> bool:
        try:
            self._send.send_nowait(what)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    async def next(self) -> Literal["questions", "done"]:
        """Wait for the call to ask something or finish; a cancelled round cancels the call."""
        try:
            outcome = await self._receive.receive()
        except anyio.get_cancelled_exc_class():
            self.cancel()
            raise
        except anyio.EndOfStream:
            return "done"
        if outcome == "done":
            self._receive.close()
            return "done"
        return "questions"

    def cancel(self) -> None:
        self._scope.cancel()
        self._receive.close()

    def abandon(self) -> None:
        """No round will ever wait for this call again."""
        self._receive.close()

    def __repr__(self) -> str:
        return f"<parked call {self.key[:6]}… {len(self.questions)} question(s)>"
