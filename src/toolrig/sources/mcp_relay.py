"""What a connected MCP server may ask of toolrig: questions (elicitation), the model (sampling), roots.

Trust model: the server is untrusted. Its form is checked (``toolrig.forms``: the flat subset MCP allows,
else declined) and reaches the user only through the run's question channel, as an ``ask_user`` question
with that form (an MCP client is shown it as written, a terminal field by field; the answer is checked
against it), or, when nobody is there, as a yes/no approval that accepts the form's own defaults; never
answered by the model; sampling is off unless the
server's config turns it on, then capped per run and approved per request; roots are offered only when
the config's ``roots:`` names them (a server told of a folder reads it under its own rules, not toolrig's).
A ``tools/list_changed`` notice marks the listing stale: it is re-read and re-checked against the trusted
fingerprints before the next call.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from toolrig.config import McpServerConfig
from toolrig.context import ToolContext
from toolrig.errors import ToolError
from toolrig.forms import FormError, check_form, check_values

if TYPE_CHECKING:
    from mcp.client.session import ClientRequestContext
    from mcp.types import (
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
        ListRootsResult,
    )

log = logging.getLogger("toolrig.mcp")

MAX_QUESTION = 1000


async def ask_the_user(ctx: ToolContext | None, server: str, question: str, detail: str) -> bool:
    """The door from a remote server to the run's approval channel: a yes or a no.

    It answers as every approval does: ``approvals.mode: off`` says yes without asking. With no call in
    flight there is no run to ask on behalf of, so the answer is no.
    """
    if ctx is None:
        return False
    return await ctx.approvals.ask(f"{server}/elicitation", question, detail, call_id=ctx.call_id)


async def ask_the_form(ctx: ToolContext | None, questions: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The door to the run's question channel (``ask_user``'s): typed answers, or None when nobody answered.

    The question names the call the server answers (``call_id``): a channel that asks per call (``toolrig mcp
    serve``: the client that made the call) finds its person by that, as it does for ``ask_user``'s own.
    """
    if ctx is None or not questions:
        return None
    return await ctx.approvals.ask_user(
        questions, call_id=ctx.call_id, session_id=ctx.session_id, agent_id=ctx.agent_id, events=ctx.events
    )


@dataclass
class Relay:
    """One server's requests to toolrig, answered on behalf of the run that holds the connection."""

    server: str
    config: McpServerConfig
    root: Path
    calls: list[ToolContext] = field(default_factory=list)  # in flight: the newest one's user is asked
    samples: int = 0
    stale: bool = False
    changed: anyio.Event = field(default_factory=anyio.Event)  # set at each change notice (tests wait on it)

    def mark_changed(self) -> None:
        self.stale = True
        self.changed.set()
        self.changed = anyio.Event()

    def current(self) -> ToolContext | None:
        return self.calls[-1] if self.calls else None

    # -- elicitation

    async def elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        from mcp.types import ElicitRequestFormParams, ElicitResult

        message = str(getattr(params, "message", ""))[:MAX_QUESTION]
        if not isinstance(params, ElicitRequestFormParams):
            log.warning("MCP server %r asked the user to open a URL (%s); declined", self.server, message[:200])
            return ElicitResult(action="decline")
        raw: Any = params.requested_schema
        schema = raw if isinstance(raw, dict) else raw.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            form = check_form(schema)
        except FormError as exc:
            log.warning("MCP server %r sent a form toolrig does not show (%s); declined", self.server, exc)
            return ElicitResult(action="decline")
        question = f"The MCP server '{self.server}' asks: {message}"
        try:
            replies = await ask_the_form(self.current(), [{"question": question, "form": form}])
        except ToolError as exc:  # the answer did not fit the form: nothing is sent
            log.warning("an answer for MCP server %r was refused: %s", self.server, exc.message)
            return ElicitResult(action="decline")
        if replies is not None:  # the person filled the form in the question channel
            try:  # checked here too, whoever answered: left-out fields take their defaults
                content = check_values(form, (replies[0] if replies else {}).get("values") or {})
            except FormError as exc:
                log.warning("an answer for MCP server %r was refused: %s", self.server, exc)
                return ElicitResult(action="decline")
            return ElicitResult(action="accept", content=content)
        # Nobody at the question channel: a yes/no approval can still accept the form's own defaults.
        try:
            answers = check_values(form, {})
        except FormError as exc:
            # The approval answers yes or no; a form with blanks to fill cannot be answered honestly.
            log.warning("MCP server %r asked for what has no default (%s); declined", self.server, exc)
            return ElicitResult(action="decline")
        detail = "Yes accepts" + (f" with: {json.dumps(answers, ensure_ascii=False)[:500]}" if answers else "")
        if await ask_the_user(self.current(), self.server, question, detail):
            return ElicitResult(action="accept", content=answers)
        return ElicitResult(action="decline")

    # -- sampling

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        from mcp.types import INVALID_REQUEST, CreateMessageResult, ErrorData, TextContent

        settings = self.config.sampling
        # The model is the one the call in flight brought (its run's, on its budget): passed with the call,
        # never set on the server for whichever run started last.
        current = self.current()
        model = current.models.for_servers() if current is not None and current.models is not None else None
        if settings is None or model is None:
            why = "is not enabled for this server" if settings is None else "has no model in this run"
            return ErrorData(code=INVALID_REQUEST, message=f"toolrig's sampling {why}")
        if self.samples >= settings.max_requests:
            return ErrorData(code=INVALID_REQUEST, message=f"sampling budget spent ({settings.max_requests} per run)")
        turns: list[tuple[str, str]] = []
        for message in params.messages:
            blocks = message.content if isinstance(message.content, list) else [message.content]
            text = "\n".join(block.text for block in blocks if isinstance(block, TextContent))
            if not text:
                return ErrorData(code=INVALID_REQUEST, message="toolrig samples text messages only")
            turns.append((message.role, text))
        if not turns:
            return ErrorData(code=INVALID_REQUEST, message="no messages to sample")
        limit = min(params.max_tokens, settings.max_tokens)
        question = f"The MCP server '{self.server}' wants the model to answer: {turns[-1][1][:MAX_QUESTION]}"
        detail = f"Up to {limit} tokens; request {self.samples + 1} of {settings.max_requests} this run."
        if not await ask_the_user(current, self.server, question, detail):
            return ErrorData(code=INVALID_REQUEST, message="the user declined the sampling request")
        self.samples += 1
        system = params.system_prompt[:4000] if params.system_prompt else None
        try:
            sample = await model(turns, limit, system)
        except ToolError as exc:  # refused by the run (its budget is spent)
            return ErrorData(code=INVALID_REQUEST, message=exc.message[:300])
        except Exception as exc:  # the model's failure is the server's answer, not our crash
            log.warning("sampling for MCP server %r failed: %s", self.server, exc)
            return ErrorData(code=INVALID_REQUEST, message=f"the model call failed: {str(exc)[:300]}")
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=sample.text),
            model=sample.model,
            stop_reason="endTurn",
        )

    # -- roots and notifications

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        from mcp.types import ListRootsResult, Root

        return ListRootsResult(roots=[Root(uri=uri, name=name) for uri, name in self.root_uris()])  # type: ignore[arg-type]

    def root_uris(self) -> list[tuple[str, str]]:
        """The folders the config's ``roots:`` names ('.' is the workspace): (file URI, name) each."""
        named = self.config.roots or []
        folders = [self.root / Path(os.path.expanduser(p)) for p in named]
        return [(Path(os.path.abspath(f)).as_uri(), f.name or "/") for f in folders]

    async def on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self.mark_changed()
            log.info("MCP server %r changed its tool list; re-reading it before the next call", self.server)
