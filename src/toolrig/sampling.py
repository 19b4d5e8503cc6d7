"""Which model answers a tool's ``ctx.sample``, and under what limits.

Trust model: the text a tool sends may carry whatever a hostile model, file or page put into it, and the
answer is untrusted data for the tool. Each request passes the call's approval first (``approvals.mode``:
``off`` says yes, otherwise the person is asked, as for a remote MCP server's sampling), is capped in
tokens and in requests per call, and goes to exactly one model: the MCP client that made the call
(``sampling/createMessage``) under ``toolrig mcp serve``, or the agent run's own model, its tokens counted
in the run's budget. A client that did not declare sampling gets a clear error, never another model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from functools import partial

from toolrig.context import Approvals, Sample, ServerModel
from toolrig.errors import ErrorType, ToolError

# (turns, max_tokens, system) -> the answer; a ToolError for a refusal the tool should read. An MCP client's
# (``ModelSource.client``) or an agent run's own model, on its budget (``ModelSource.run``).
ClientSampler = ServerModel
RunSampler = ServerModel

MAX_TOKENS = 4_000  # per request: a tool gets a paragraph or a page, not a model's whole output window
MAX_PER_CALL = 10  # requests one call may make
MAX_TEXT = 100_000  # characters of prompt (all turns and the system prompt) one request may send


@dataclass(frozen=True, slots=True)
class ModelSource:
    """The model a caller brings for its calls' ``ctx.sample``: its MCP client's, or its agent run's.

    ``from_client``: the calls come from an MCP client, whose ``client`` sampler is None when it did not
    declare sampling (then it gets a clear error, never another model).
    """

    client: ClientSampler | None = None
    from_client: bool = False
    run: RunSampler | None = None


class CallModels:
    """``ToolContext.models`` for one call: the model its caller brought, asked at most ``MAX_PER_CALL`` times."""

    def __init__(self, approvals: Approvals, source: ModelSource | None) -> None:
        self.approvals = approvals
        self.source = source or ModelSource()
        self.used = 0

    async def sample(
        self,
        turns: Sequence[tuple[str, str]],
        *,
        max_tokens: int,
        system: str | None,
        tool: str,
        call_id: str,
        session_id: str | None,
        agent_id: str | None,
    ) -> Sample:
        if not 1 <= max_tokens <= MAX_TOKENS:
            raise ToolError(ErrorType.INVALID_INPUT, f"max_tokens must be from 1 to {MAX_TOKENS}, not {max_tokens}.")
        if sum(len(text) for _, text in turns) + len(system or "") > MAX_TEXT:
            raise ToolError(ErrorType.TOO_LARGE, f"A sampling request may send at most {MAX_TEXT} characters.")
        source = self.source
        if source.from_client:
            if source.client is None:
                raise ToolError(
                    ErrorType.UNAVAILABLE,
                    "The MCP client that made this call does not support sampling (it did not declare it).",
                    "Do the work without asking a model, or tell the user their client cannot sample.",
                )
            answer = partial(source.client, list(turns), max_tokens, system)
        elif source.run is not None:
            answer = partial(source.run, list(turns), max_tokens, system)
        else:
            raise ToolError(
                ErrorType.UNAVAILABLE,
                "No model can be asked here: sampling needs an agent run or an MCP client that samples.",
                "Do the work without asking a model.",
            )
        if self.used >= MAX_PER_CALL:
            raise ToolError(ErrorType.RATE_LIMITED, f"A call may ask a model at most {MAX_PER_CALL} times.")
        subject = turns[-1][1][:300] if turns else ""
        reason = f"The tool '{tool}' asks the model to answer, in up to {max_tokens} tokens."
        if not await self.approvals.ask(f"{tool}/sampling", subject, reason, call_id=call_id):
            raise ToolError(ErrorType.DENIED, "The user did not approve asking the model.")
        self.used += 1
        return await _guarded(answer())

    def for_servers(self) -> ServerModel | None:
        """A remote MCP server's request during this call: the caller's run's model, never an MCP client's."""
        return self.source.run


async def _guarded(answer: Awaitable[Sample]) -> Sample:
    """A model's failure is the tool's error result, never a traceback."""
    try:
        return await answer
    except ToolError:
        raise
    except Exception as exc:
        raise ToolError(ErrorType.UNAVAILABLE, f"The model call failed: {str(exc)[:300]}") from None
