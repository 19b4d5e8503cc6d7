"""``invoke_agent`` spans for runs and ``chat`` spans for model requests (loaded only when telemetry is on).

A run's span is current while the run goes on, so its model requests and tool calls nest under it, and a
subagent's run (started by a tool call of its parent) under that call: one trace per tree.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanKind, Status, StatusCode

from toolrig.telemetry import names
from toolrig.telemetry.tools import content_text

if TYPE_CHECKING:
    from toolrig.telemetry.setup import Telemetry


def agent_attributes(run: Any) -> dict[str, Any]:
    settings = run.provider.settings
    lineage = getattr(run, "lineage", None)
    name = lineage.kind.name if lineage is not None and hasattr(lineage.kind, "name") else run.agent_id
    attributes: dict[str, Any] = {
        names.OPERATION: "invoke_agent",
        names.PROVIDER: settings.provider,
        names.REQUEST_MODEL: settings.model,
        names.AGENT_NAME: name or "toolrig",
    }
    if run.agent_id:
        attributes[names.AGENT_ID] = run.agent_id
    if run.session_id:
        attributes[names.CONVERSATION_ID] = run.session_id
    if lineage is not None:
        attributes[names.TASK_ID] = lineage.child.task_id
        attributes[names.PARENT_TASK_ID] = lineage.parent.task_id
        if lineage.parent.agent_id:
            attributes[names.PARENT_AGENT_ID] = lineage.parent.agent_id
    return attributes


class RunSpan:
    """The span of one run, current for the run's duration."""

    def __init__(self, telemetry: Telemetry, run: Any) -> None:
        self.telemetry = telemetry
        self.attributes = agent_attributes(run)
        self.started = time.perf_counter()

    def __enter__(self) -> RunSpan:
        name = f"invoke_agent {self.attributes[names.AGENT_NAME]}"
        self._use = self.telemetry.tracer.start_as_current_span(
            name, kind=SpanKind.INTERNAL, attributes=self.attributes, end_on_exit=True, record_exception=False
        )
        self.span = self._use.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        outcome: dict[str, Any] = {names.OPERATION: "invoke_agent", names.PROVIDER: self.attributes[names.PROVIDER]}
        if exc is not None:
            error = getattr(exc, "kind", None) or type(exc).__name__
            self.span.set_attribute(names.ERROR_TYPE, error)
            self.span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))
            outcome[names.ERROR_TYPE] = error
        self.telemetry.duration.record(time.perf_counter() - self.started, outcome)
        self._use.__exit__(kind, exc, tb)

    def finished(self, result: Any) -> None:
        usage = result.usage
        self.span.set_attributes(
            {
                names.STOP_REASON: result.stop_reason,
                names.INPUT_TOKENS: usage.input + usage.cache_read + usage.cache_write,
                names.OUTPUT_TOKENS: usage.output,
            }
        )
        if self.telemetry.capture_content:
            self.span.set_attribute(
                names.OUTPUT_MESSAGES,
                content_text([{"role": "assistant", "parts": [{"type": "text", "content": result.response}]}]),
            )


class ChatSpan:
    """One model request: model, provider, usage, finish reason and time to first chunk."""

    def __init__(self, telemetry: Telemetry, settings: Any) -> None:
        self.telemetry = telemetry
        self.base = {
            names.OPERATION: "chat",
            names.PROVIDER: settings.provider,
            names.REQUEST_MODEL: settings.model,
        }
        self.first: float | None = None

    def __enter__(self) -> ChatSpan:
        self._use = self.telemetry.tracer.start_as_current_span(
            f"chat {self.base[names.REQUEST_MODEL]}",
            kind=SpanKind.CLIENT,
            attributes=self.base,
            record_exception=False,
        )
        self.span = self._use.__enter__()
        self.started = time.perf_counter()
        return self

    def chunk(self) -> None:
        """A streamed item arrived; the first one marks the time to first chunk."""
        if self.first is None:
            self.first = time.perf_counter() - self.started

    def done(self, complete: Any) -> None:
        usage = complete.usage
        input_tokens = usage.input + usage.cache_read + usage.cache_write
        attributes: dict[str, Any] = {
            names.RESPONSE_MODEL: self.base[names.REQUEST_MODEL],
            names.INPUT_TOKENS: input_tokens,
            names.OUTPUT_TOKENS: usage.output,
            names.FINISH_REASONS: [complete.stop_reason or complete.raw_stop_reason or "unknown"],
        }
        if self.first is not None:
            attributes[names.TIME_TO_FIRST_CHUNK] = self.first
            self.telemetry.first_chunk.record(self.first, self.base)
        if self.telemetry.capture_content:
            attributes[names.OUTPUT_MESSAGES] = content_text(
                [{"role": "assistant", "parts": [{"type": "text", "content": complete.message.text}]}]
            )
        self.span.set_attributes(attributes)
        for kind, count in (("input", input_tokens), ("output", usage.output)):
            self.telemetry.token_usage.record(count, {**self.base, names.TOKEN_TYPE: kind})

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        measured = dict(self.base)
        if exc is not None:
            error = getattr(exc, "kind", None) or type(exc).__name__
            self.span.set_attribute(names.ERROR_TYPE, error)
            self.span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))
            measured[names.ERROR_TYPE] = error
        self.telemetry.duration.record(time.perf_counter() - self.started, measured)
        self._use.__exit__(kind, exc, tb)
