"""One ``execute_tool`` span per tool call, built from the executor's own extension points.

Nothing in the executor names telemetry: when it is on, four members join the call path (``install``). The
first (admission) opens the span and makes it current, so whatever the tool starts (a subagent's run, a
remote MCP call, a durable task) nests under it; the last (an audit sink, after the audit row) closes it
with the same decision the row holds. A call refused before admission (an unknown tool) gets its span there.
The span and its context token live on the call object itself, never on a shared one.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from opentelemetry import context, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from toolrig.policy.redact import redact
from toolrig.telemetry import names
from toolrig.telemetry.setup import Telemetry, wall_ns

if TYPE_CHECKING:
    from toolrig.gate import Extensions, ToolCall
    from toolrig.result import ToolResult

_SPAN = "_otel_span"  # attributes set on the ToolCall (not slotted): this call's span, token, approval span
_TOKEN = "_otel_context"  # noqa: S105 - the context token to detach the span with, not a secret
_ASKED = "_otel_asked"
log = logging.getLogger("toolrig.telemetry")
_CONTENT_CAP = 8192  # characters of arguments or result kept on a span when content is captured


class ToolSpans:
    """The extension members that trace tool calls for one Rig."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def install(self, extensions: Extensions) -> None:
        extensions.reserve("admission", self.begin, awake=True)
        extensions.reserve("rate_limit", self.asking, awake=True)  # after policy and rate limit: asked?
        extensions.reserve("before_tool", self.answered, awake=True)
        extensions.reserve("audit", self.end, awake=True)

    # Each member is guarded: telemetry that fails (an exporter's bug, a sampler's) is logged, and never
    # changes a call's outcome (a gate that raised would refuse the call; an audit sink, withhold its result).

    def begin(self, call: ToolCall) -> None:
        if call.dry_run:  # `policy explain`: judged, never run, never recorded
            return
        try:
            span = self._open(call)
            call.__dict__[_TOKEN] = context.attach(trace.set_span_in_context(span))
        except Exception:
            log.exception("telemetry: could not open the span of call %s", call.call_id)

    def _open(self, call: ToolCall) -> trace.Span:
        name = call.tool.name if call.tool is not None else call.name
        span = self.telemetry.tracer.start_span(
            f"execute_tool {name}",
            kind=SpanKind.INTERNAL,
            start_time=wall_ns(call.started),
            attributes={
                names.OPERATION: "execute_tool",
                names.TOOL_NAME: name,
                names.TOOL_CALL_ID: call.call_id,
                names.TOOL_TYPE: "function",
                names.ORIGIN: call.origin,
            },
        )
        call.__dict__[_SPAN] = span
        return span

    def asking(self, call: ToolCall) -> None:
        """A call the gate asks about: its wait for an answer is a child span, ended when it is answered."""
        span = call.__dict__.get(_SPAN)
        if call.verdict != "ask" or span is None or call.dry_run:
            return
        try:
            asked = self.telemetry.tracer.start_span(
                f"approval {call.tool.name if call.tool is not None else call.name}",
                context=trace.set_span_in_context(span),
                attributes={names.TOOL_CALL_ID: call.call_id, names.DECIDED_BY: call.decided_by},
            )
            call.__dict__[_ASKED] = (asked, time.perf_counter())
        except Exception:
            log.exception("telemetry: could not open the approval span of call %s", call.call_id)

    def answered(self, call: ToolCall) -> None:
        if _ASKED in call.__dict__:
            try:
                self._close_approval(call)
            except Exception:
                log.exception("telemetry: could not close the approval span of call %s", call.call_id)

    def _close_approval(self, call: ToolCall) -> None:
        asked, since = call.__dict__.pop(_ASKED)
        answer = call.approval or "none"
        asked.set_attribute(names.APPROVAL, answer)
        asked.end()
        self.telemetry.approval_wait.record(time.perf_counter() - since, {names.APPROVAL: answer})

    def end(self, call: ToolCall, result: ToolResult) -> None:
        if call.dry_run:
            return
        try:
            self._end(call, result)
        except Exception:
            log.exception("telemetry: could not close the span of call %s", call.call_id)
        finally:
            token = call.__dict__.pop(_TOKEN, None)
            if token is not None:
                context.detach(token)

    def _end(self, call: ToolCall, result: ToolResult) -> None:
        span = call.__dict__.get(_SPAN) or self._open(call)  # refused before admission: opened now
        if _ASKED in call.__dict__:
            self._close_approval(call)  # denied, timed out or cancelled while asking
        tool = call.tool.name if call.tool is not None else call.name
        decision = call.verdict or ("error" if result.is_error else "allow")  # as the audit row's decision
        outcome = "error" if result.is_error else "ok"
        attributes: dict[str, Any] = {names.DECISION: decision, names.OUTCOME: outcome}
        for key, value in (
            (names.DECIDED_BY, call.decided_by),
            (names.APPROVAL, call.approval),
            (names.CALLED_AS, call.called_as),
            (names.AGENT_ID, call.agent_id),
            (names.PARENT_AGENT_ID, call.parent_agent_id),
            (names.CONVERSATION_ID, call.session_id),
        ):
            if value:
                attributes[key] = value
        if result.error_type is not None:
            attributes[names.ERROR_TYPE] = result.error_type.value
            span.set_status(Status(StatusCode.ERROR, result.message or ""))
        containment = _containment(result)
        if containment:
            attributes[names.CONTAINMENT] = containment
            self.telemetry.commands.add(1, {names.CONTAINMENT: containment})
        if self.telemetry.capture_content:
            attributes[names.TOOL_ARGUMENTS] = _content(call.raw_args)
            if result.output is not None:
                attributes[names.TOOL_RESULT] = _content(result.output)
        span.set_attributes(attributes)
        span.end()
        self.telemetry.tool_calls.add(1, {names.TOOL_NAME: tool, names.DECISION: decision, names.OUTCOME: outcome})


def _containment(result: ToolResult) -> str:
    output = result.output
    if output is None:
        return ""
    value = output.get("containment")
    return value if isinstance(value, str) else ""


def content_text(value: Any) -> str:
    """Content as a span records it: redacted as the audit log redacts it, as JSON, capped."""
    return _content(value)


def _content(value: Any) -> str:
    text = json.dumps(redact(value), ensure_ascii=False, default=str)
    return text if len(text) <= _CONTENT_CAP else text[:_CONTENT_CAP] + "…"
