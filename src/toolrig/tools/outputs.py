"""Paging through outputs that were too large to show whole (the executor keeps them for this)."""

from __future__ import annotations

import json

from pydantic import Field

from toolrig.context import ToolContext
from toolrig.definition import Tool, ToolInput, ToolOutput

MAX_PAGE = 50_000


class ReadOutputInput(ToolInput):
    handle: str = Field(description="The handle a cut result gave, like 'out_0123456789abcdef'.")
    offset: int = Field(default=0, ge=0, description="Character offset to start from.")
    limit: int = Field(default=20_000, ge=1, le=MAX_PAGE, description="How many characters to return.")


class ReadOutputOutput(ToolOutput):
    content: str = Field(description="This page of the saved output (its JSON text).")
    offset: int
    total_chars: int
    next_offset: int | None = Field(description="Where the next page starts; null at the end.")


class ReadOutput(Tool[ReadOutputInput, ReadOutputOutput]):
    name = "read_output"
    group = "outputs"
    read_only = True
    description = (
        "Read a page of a tool output that was too large to show whole. Use the handle the cut result named, "
        "and pass next_offset to continue until it is null. A page may be shorter than limit so that it fits."
    )

    def execute(self, input: ReadOutputInput, ctx: ToolContext) -> ReadOutputOutput:
        page, total = ctx.stores.outputs.read(input.handle, input.offset, input.limit)
        # A page must itself fit the output cap, or it would be cut again; JSON escaping can grow it.
        budget = max(ctx.output_cap - 400, 100)
        while len(page) > 1 and len(json.dumps(page, ensure_ascii=False)) > budget:
            page = page[: max(1, len(page) * budget // len(json.dumps(page, ensure_ascii=False)) - 1)]
        end = input.offset + len(page)
        return ReadOutputOutput(
            content=page, offset=input.offset, total_chars=total, next_offset=end if end < total else None
        )


TOOLS = [ReadOutput()]
