"""A server's elicitation form is hostile input: whatever its schema and whatever the person typed, turning it
into questions and the replies into values never fails, and sends only the form's own fields."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolrig.sources.mcp_relay import form_answers, form_questions

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
field_specs = st.dictionaries(
    st.sampled_from(["type", "enum", "oneOf", "default", "title", "description"]),
    st.sampled_from(["string", "integer", "number", "boolean"]) | json_values,
    max_size=4,
)
schemas = st.fixed_dictionaries(
    {"properties": st.dictionaries(st.text(min_size=1, max_size=10), field_specs | json_values, max_size=25)},
    optional={"required": st.lists(st.text(max_size=10), max_size=4) | json_values},
)
reply = st.fixed_dictionaries(
    {}, optional={"selected": st.lists(st.text(max_size=10), max_size=2), "other_text": st.text()}
)
replies = st.lists(reply, max_size=25)


@settings(max_examples=300)
@given(schema=schemas, answers=replies, message=st.text(max_size=50))
def test_any_form_and_any_replies_give_questions_and_values_of_the_forms_own_fields(
    schema: dict[str, Any], answers: list[dict[str, Any]], message: str
) -> None:
    questions = form_questions(message, schema)
    assert len(questions) <= 20
    assert all(isinstance(q["question"], str) and isinstance(q["options"], list) for q in questions)
    content = form_answers(schema, answers)
    assert content is None or set(content) <= set(schema["properties"])


def test_typed_values_come_back_typed_and_a_bad_number_declines() -> None:
    schema = {
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "ok": {"type": "boolean"},
            "kind": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["n"],
    }
    good = [{"other_text": "3"}, {"other_text": "2.5"}, {"selected": ["no"]}, {"selected": ["b"]}]
    assert form_answers(schema, good) == {"n": 3, "x": 2.5, "ok": False, "kind": "b"}
    assert form_answers(schema, [{"other_text": "three"}]) is None
    assert form_answers(schema, [{}]) is None  # required, no default
    assert form_answers(schema, [{"other_text": "1"}, {"other_text": "nan"}]) is None  # JSON has no NaN
