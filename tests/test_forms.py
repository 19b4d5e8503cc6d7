"""Flat forms (MCP elicitation's JSON Schema subset): hostile forms are refused with a reason, answers are checked."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.conformance_tools import SEP1034_FORM, SEP1330_FORM
from toolrig.forms import MAX_FIELDS, FormError, check_form, check_value, check_values, fields

PRIMITIVES = {"string", "number", "integer", "boolean", "array"}
ALLOWED = {
    "string": {"type", "title", "description", "default", "minLength", "maxLength", "format", "enum", "enumNames"}
    | {"oneOf"},
    "number": {"type", "title", "description", "default", "minimum", "maximum"},
    "integer": {"type", "title", "description", "default", "minimum", "maximum"},
    "boolean": {"type", "title", "description", "default"},
    "array": {"type", "title", "description", "default", "items", "minItems", "maxItems"},
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
keywords = st.sampled_from(
    [
        "type",
        "title",
        "description",
        "default",
        "enum",
        "enumNames",
        "oneOf",
        "anyOf",
        "items",
        "minLength",
        "maxLength",
        "format",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "properties",
        "$ref",
        "const",
        "pattern",
    ]
)
field_specs = st.dictionaries(
    keywords,
    st.sampled_from(["string", "number", "integer", "boolean", "array", "object", "email"])
    | json_values
    | st.lists(st.text(max_size=8), max_size=4)
    | st.lists(st.fixed_dictionaries({"const": st.text(max_size=8), "title": st.text(max_size=8)}), max_size=4),
    max_size=6,
)
forms = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["object", "array", "string"]),
        "properties": st.dictionaries(st.text(max_size=12), field_specs, max_size=4),
    },
    optional={"required": st.lists(st.text(max_size=12), max_size=3), "additionalProperties": st.booleans()},
)


choice_values = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=4, unique=True)
well_formed_fields = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("string")}, optional={"default": json_values, "maxLength": st.integers(-1, 5)}
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["number", "integer"])},
        optional={"default": json_values, "minimum": st.integers(-5, 5), "maximum": st.floats()},
    ),
    st.fixed_dictionaries({"type": st.just("boolean")}, optional={"default": json_values}),
    st.builds(
        lambda vs, d: {"type": "string", "enum": vs, "default": d},
        choice_values,
        json_values | choice_values.map(lambda v: v[0]),
    ),
    st.builds(
        lambda vs, d: {
            "type": "array",
            "items": {"anyOf": [{"const": v, "title": v.upper()} for v in vs]},
            "default": d,
        },
        choice_values,
        json_values | choice_values,
    ),
)
well_formed = st.builds(
    lambda specs: {"type": "object", "properties": {f"f{i}": spec for i, spec in enumerate(specs)}},
    st.lists(well_formed_fields, min_size=1, max_size=5),
)


@settings(max_examples=300, deadline=None)
@given(well_formed, st.dictionaries(st.sampled_from(["f0", "f1", "f2", "f3", "f4"]), json_values, max_size=5))
def test_a_well_formed_form_with_any_defaults_and_answers_never_lets_a_misfit_through(
    schema: dict[str, Any], answer: dict[str, Any]
) -> None:
    try:
        form = check_form(schema)
    except FormError:
        return  # a default that does not fit its field, a bound out of range: said, not crashed
    assert check_form(form) == form
    try:
        values = check_values(form, answer)
    except FormError:
        return
    for name, value in values.items():
        assert check_value(fields(form)[name], value) == value


def test_the_conformance_forms_are_kept_exactly_as_written() -> None:
    assert check_form(SEP1034_FORM) == SEP1034_FORM
    assert check_form(SEP1330_FORM) == SEP1330_FORM  # untitled stays enum, legacy keeps enumNames, ...


@settings(max_examples=400, deadline=None)
@given(forms | json_values)
def test_any_form_is_either_refused_with_a_reason_or_kept_to_the_flat_primitive_subset(schema: Any) -> None:
    try:
        form = check_form(schema)
    except FormError as exc:
        assert str(exc)
        return
    assert set(form) <= {"type", "properties", "required", "title", "description"}
    assert form["type"] == "object" and 1 <= len(form["properties"]) <= MAX_FIELDS
    for spec in fields(form).values():
        assert spec["type"] in PRIMITIVES
        assert set(spec) <= ALLOWED[spec["type"]]
        if spec["type"] == "array":
            assert set(spec["items"]) <= {"type", "enum", "anyOf"}
        if "default" in spec:
            assert check_value(spec, spec["default"]) == spec["default"]
    assert check_form(form) == form  # what is kept is itself a valid form


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_any_answer_is_either_refused_with_a_reason_or_fits_every_field(answer: Any) -> None:
    for form in (check_form(SEP1034_FORM), check_form(SEP1330_FORM)):
        try:
            values = check_values(form, answer)
        except FormError as exc:
            assert str(exc)
            continue
        for name, value in values.items():
            assert check_value(fields(form)[name], value) == value


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}, "primitive"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}, "type"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "(a+)+$"}}}, "pattern"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}}, "choices"),
        ({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "default": "y"}}}, "default"),
        ({"type": "object", "properties": {"a": {"type": "integer", "default": 1.5}}}, "default"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "enumNames": ["X", "Y"]}}},
            "enumNames",
        ),
        ({"type": "object", "properties": {"a": {"type": "string", "enum": [str(i) for i in range(101)]}}}, "enum"),
        ({"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(21)}}, "at most"),
        ({"type": "object", "properties": {"a b": {"type": "string"}}}, "field name"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "required"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
            "additionalProperties",
        ),
        ({"type": "object", "properties": {}}, "at least one"),
        ("not a form", "JSON object"),
    ],
)
def test_a_form_outside_the_subset_is_refused_saying_why(schema: Any, why: str) -> None:
    with pytest.raises(FormError, match=why):
        check_form(schema)


def test_left_out_fields_take_their_defaults() -> None:
    form = check_form(SEP1034_FORM)
    assert check_values(form, {"age": 25}) == {
        "name": "John Doe",
        "age": 25,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"age": "25"}, "'age': expected a finite number"),
        ({"age": 25.5}, "'age': expected a whole number"),
        ({"age": True}, "'age': expected a finite number"),
        ({"score": math.nan}, "'score': expected a finite number"),
        ({"status": "deleted"}, "'status': 'deleted' is not one of the choices"),
        ({"verified": "yes"}, "'verified': expected true or false"),
        ({"name": "x", "admin": True}, "fields the form does not: 'admin'"),
        (["John"], "not a JSON object"),
    ],
)
def test_an_answer_that_does_not_fit_the_form_is_refused_saying_where(answer: Any, why: str) -> None:
    with pytest.raises(FormError, match=why.replace("(", r"\(")):
        check_values(check_form(SEP1034_FORM), answer)


def test_multi_selects_take_only_their_choices_once_each() -> None:
    form = check_form(SEP1330_FORM)
    assert check_values(form, {"untitledMulti": ["option1", "option2"]})["untitledMulti"] == ["option1", "option2"]
    with pytest.raises(FormError, match="not one of the choices"):
        check_values(form, {"titledMulti": ["value9"]})
    with pytest.raises(FormError, match="picked twice"):
        check_values(form, {"titledMulti": ["value1", "value1"]})
    with pytest.raises(FormError, match="not one of the choices"):
        check_values(form, {"legacyEnum": "Option One"})  # the title is shown; the value is answered


def test_a_required_field_without_an_answer_or_default_is_refused() -> None:
    form = check_form(
        {"type": "object", "properties": {"email": {"type": "string", "format": "email"}}, "required": ["email"]}
    )
    with pytest.raises(FormError, match="required"):
        check_values(form, {})
    with pytest.raises(FormError, match="expected the email format"):
        check_values(form, {"email": "not an address"})
    assert check_values(form, {"email": "a@example.org"}) == {"email": "a@example.org"}
