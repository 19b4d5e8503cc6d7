from __future__ import annotations

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from toolrig.agent.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    close_open_calls,
    merged,
    messages_from_json,
    messages_to_json,
)

text = st.text(max_size=40)
blocks = st.one_of(
    st.builds(TextBlock, text),
    st.builds(
        ThinkingBlock, text, signature=text, redacted=text, provider=st.sampled_from(["", "anthropic", "openai"])
    ),
    st.builds(ToolCallBlock, text, text, text),
    st.builds(ToolResultBlock, text, text, text, st.booleans()),
)
messages = st.lists(
    st.builds(Message, st.sampled_from(["user", "assistant"]), st.lists(blocks, max_size=4)), max_size=5
)


@given(messages)
def test_messages_survive_a_json_round_trip(history: list[Message]) -> None:
    wire = json.loads(json.dumps(messages_to_json(history)))
    assert messages_from_json(wire) == history


@given(messages)
def test_merging_leaves_no_two_neighbours_with_one_role_and_keeps_every_block(history: list[Message]) -> None:
    joined = merged(history)
    assert all(a.role != b.role for a, b in itertools.pairwise(joined))
    assert [b for m in joined for b in m.content] == [b for m in history for b in m.content]


def test_open_calls_of_the_last_turn_are_answered_as_cancelled() -> None:
    history = [Message.user("go"), Message("assistant", [ToolCallBlock("a", "x", "{}"), ToolCallBlock("b", "y", "{}")])]
    closing = close_open_calls(history, "stopped")
    assert closing is not None and [r.call_id for r in closing.tool_results] == ["a", "b"]
    assert all(r.is_error and json.loads(r.content)["error_type"] == "cancelled" for r in closing.tool_results)
    assert close_open_calls([*history, closing], "stopped") is None


def test_unparseable_arguments_parse_to_none_and_empty_ones_to_an_empty_object() -> None:
    assert ToolCallBlock("a", "x", "{bad").parsed() is None
    assert ToolCallBlock("a", "x", "[1]").parsed() is None
    assert ToolCallBlock("a", "x", "").parsed() == {}
