from __future__ import annotations

from tests.support.sample_tools import add, note, step
from toolrig.agent.calls import barrier_groups, preview
from toolrig.agent.messages import ToolCallBlock
from toolrig.errors import ErrorType
from toolrig.result import ToolResult


def calls(*names: str) -> list[ToolCallBlock]:
    return [ToolCallBlock(f"c{i}", name, "{}") for i, name in enumerate(names)]


def test_sequential_calls_split_the_turn_into_ordered_groups() -> None:
    offered = {t.name: t for t in (add, note, step)}
    assert barrier_groups(calls("add", "note"), offered) == [[0, 1]]
    assert barrier_groups(calls("add", "step", "note", "add"), offered) == [[0], [1], [2, 3]]
    assert barrier_groups(calls("step", "step"), offered) == [[0], [1]]
    assert barrier_groups(calls("unknown", "step"), offered) == [[0], [1]]


def test_previews_are_short_and_say_what_failed() -> None:
    long = ToolResult.ok({"text": "x" * 500})
    assert len(preview(long)) == 150
    failed = ToolResult.error(ErrorType.NOT_FOUND, "No such file: a.txt")
    assert preview(failed) == "not_found: No such file: a.txt"
