from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Literal, Optional

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from toolrig.arguments import repair_arguments
from toolrig.schema import budget_schema, model_schema, strip_titles, to_strict

# ----------------------------------------------------------------------------------------- examples


class Color(StrEnum):
    RED = "red"
    GREEN = "green"


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int = 3
    b: str | None = None


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=2, max_length=10, description="The name.")
    count: int = Field(default=5, ge=0, le=100)
    color: Color = Color.RED
    inner: Inner = Field(default_factory=Inner, description="Nested.")
    inners: list[Inner] = Field(default_factory=list)
    title: str = "kept: a property named title is not a keyword"
    url: str = Field(default="x", json_schema_extra={"format": "uri"})


def test_plain_schema_has_an_object_root_and_no_generated_titles() -> None:
    schema = model_schema(Example)
    assert schema["type"] == "object" and "title" not in schema
    assert "title" in schema["properties"]
    assert "title" not in schema["properties"]["name"]
    assert schema["properties"]["name"]["minLength"] == 2


def test_strict_makes_every_property_required_and_optionals_nullable() -> None:
    result = to_strict(model_schema(Example))
    assert result.compatible, result.problems
    schema = result.schema
    assert schema["required"] == list(schema["properties"])
    assert schema["additionalProperties"] is False
    count = schema["properties"]["count"]
    assert count["type"] == ["integer", "null"] and "default" not in count
    assert count["minimum"] == 0 and count["maximum"] == 100
    assert count["description"] == "Null means the default, 5."
    inner_def = schema["$defs"]["Inner"]
    assert inner_def["required"] == ["a", "b"] and inner_def["additionalProperties"] is False


def test_strict_moves_unsupported_constraints_into_the_description() -> None:
    name = to_strict(model_schema(Example)).schema["properties"]["name"]
    assert "minLength" not in name and "maxLength" not in name
    assert name["description"] == "The name. At most 10 characters; at least 2 characters."
    url = to_strict(model_schema(Example)).schema["properties"]["url"]
    assert "format" not in str({k: v for k, v in url.items() if k != "description"})
    assert url["description"] == 'Format: uri. Null means the default, "x".'


def test_strict_inlines_a_ref_that_has_siblings() -> None:
    inner = to_strict(model_schema(Example)).schema["properties"]["inner"]
    # {"$ref": ..., "description": ...} is not allowed beside a $ref: it is inlined, then made nullable.
    assert "$ref" not in str(inner.get("anyOf", [inner])[0].get("$ref", ""))


def test_open_mappings_are_reported_incompatible_not_raised() -> None:
    class WithDict(BaseModel):
        labels: dict[str, str]

    result = to_strict(model_schema(WithDict))
    assert not result.compatible
    assert any("additionalProperties" in p for p in result.problems)


def test_discriminated_unions_become_anyof() -> None:
    class Cat(BaseModel):
        kind: Literal["cat"]

    class Dog(BaseModel):
        kind: Literal["dog"]

    class Pet(BaseModel):
        pet: Annotated[Cat | Dog, Field(discriminator="kind")]

    result = to_strict(model_schema(Pet))
    assert result.compatible, result.problems
    assert "anyOf" in result.schema["properties"]["pet"]
    assert "oneOf" not in str(result.schema) and "discriminator" not in str(result.schema)


def test_tuples_and_untyped_values_are_incompatible() -> None:
    class Odd(BaseModel):
        pair: tuple[int, str]
        anything: Any

    result = to_strict(model_schema(Odd))
    assert not result.compatible
    assert any("prefixItems" in p for p in result.problems)
    assert any("accepts anything" in p for p in result.problems)


def test_strip_titles_keeps_properties_named_title() -> None:
    schema = {"title": "X", "properties": {"title": {"title": "Title", "type": "string"}}}
    assert strip_titles(schema) == {"properties": {"title": {"type": "string"}}}


def test_budget_caps_depth_and_size_and_keeps_an_object_root() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        deep = {"type": "object", "properties": {"x": deep}}
    capped = budget_schema(deep, max_depth=10)
    assert "were cut" in capped["description"]
    assert str(capped).count("properties") < 10
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5000)}}
    wide["required"] = ["p0", "p4999"]
    small = budget_schema(wide, max_nodes=100)
    assert len(small["properties"]) < 100 and small["required"] == ["p0"]
    assert budget_schema(["not", "a", "schema"]) == {"type": "object", "properties": {}}
    assert budget_schema({"type": "string"})["type"] == "object"
    remote = budget_schema({"type": "object", "properties": {"a": {"$ref": "https://evil.example/s.json"}}})
    assert remote["properties"]["a"] == {}
    assert "description" not in remote


# ----------------------------------------------------------------------------------------- property


@dataclass
class Spec:
    kind: str
    children: list[Spec] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    defaults: list[bool] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)
    bounds: tuple[int, int] | None = None


_names = itertools.count()


def leaf_specs() -> st.SearchStrategy[Spec]:
    bounded = st.tuples(st.integers(-50, 0), st.integers(1, 50)).map(lambda b: Spec("int", bounds=b))
    literal = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3, unique=True).map(
        lambda c: Spec("literal", choices=c)
    )
    return st.one_of(
        st.sampled_from([Spec("int"), Spec("float"), Spec("str"), Spec("bool"), Spec("enum")]), bounded, literal
    )


def model_spec(children: st.SearchStrategy[Spec]) -> st.SearchStrategy[Spec]:
    return st.lists(st.tuples(children, st.booleans()), min_size=1, max_size=4).map(
        lambda fields: Spec(
            "model",
            children=[f[0] for f in fields],
            names=[f"f{i}" for i in range(len(fields))],
            defaults=[f[1] for f in fields],
        )
    )


def specs() -> st.SearchStrategy[Spec]:
    return st.recursive(
        leaf_specs(),
        lambda inner: st.one_of(
            inner.map(lambda s: Spec("list", children=[s])),
            inner.map(lambda s: Spec("optional", children=[s])),
            model_spec(inner),
        ),
        max_leaves=6,
    )


class Shade(StrEnum):
    LIGHT = "light"
    DARK = "dark"


def python_type(spec: Spec) -> Any:
    if spec.kind == "int":
        return Annotated[int, Field(ge=spec.bounds[0], le=spec.bounds[1])] if spec.bounds else int
    simple = {"float": float, "str": str, "bool": bool, "enum": Shade}
    if spec.kind in simple:
        return simple[spec.kind]
    if spec.kind == "literal":
        return Literal[tuple(spec.choices)]
    if spec.kind == "list":
        return list[python_type(spec.children[0])]  # type: ignore[misc]
    if spec.kind == "optional":
        return Optional[python_type(spec.children[0])]  # noqa: UP045
    return build_model(spec)


def value_strategy(spec: Spec) -> st.SearchStrategy[Any]:
    if spec.kind == "int":
        low, high = spec.bounds or (-(10**6), 10**6)
        return st.integers(low, high)
    if spec.kind == "float":
        return st.floats(allow_nan=False, allow_infinity=False, width=32)
    if spec.kind == "str":
        return st.text(max_size=8)
    if spec.kind == "bool":
        return st.booleans()
    if spec.kind == "enum":
        return st.sampled_from(["light", "dark"])
    if spec.kind == "literal":
        return st.sampled_from(spec.choices)
    if spec.kind == "list":
        return st.lists(value_strategy(spec.children[0]), max_size=3)
    if spec.kind == "optional":
        return st.one_of(st.none(), value_strategy(spec.children[0]))
    fields = {name: value_strategy(child) for name, child in zip(spec.names, spec.children, strict=True)}
    optional = [name for name, has in zip(spec.names, spec.defaults, strict=True) if has]
    return st.fixed_dictionaries(
        {k: v for k, v in fields.items() if k not in optional}, optional={k: fields[k] for k in optional}
    )


def default_for(spec: Spec) -> Any:
    defaults = {"int": spec.bounds[0] if spec.bounds else 0, "float": 0.5, "str": "d", "bool": True}
    if spec.kind in defaults:
        return defaults[spec.kind]
    if spec.kind == "enum":
        return Shade.DARK
    if spec.kind == "literal":
        return spec.choices[0]
    if spec.kind == "list":
        return []
    if spec.kind == "optional":
        return None
    return None  # models get a factory below


def build_model(spec: Spec) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, child, has_default in zip(spec.names, spec.children, spec.defaults, strict=True):
        annotation = python_type(child)
        if not has_default:
            fields[name] = (annotation, ...)
        elif child.kind == "model":
            nested = annotation
            fields[name] = (Optional[nested], None)  # noqa: UP045
        else:
            fields[name] = (annotation, default_for(child))
    return create_model(f"M{next(_names)}", __config__=ConfigDict(extra="forbid"), **fields)


def model_accepts(model: type[BaseModel], value: Any) -> bool:
    try:
        model.model_validate(value)
    except ValidationError:
        return False
    return True


def schema_accepts(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def fill_nulls(spec: Spec, value: Any) -> Any:
    """What a strict-mode model sends: every optional property present, null when it means 'default'."""
    if spec.kind == "model" and isinstance(value, dict):
        out = dict(value)
        for name, child, has_default in zip(spec.names, spec.children, spec.defaults, strict=True):
            if name in value:
                out[name] = fill_nulls(child, value[name])
            elif has_default:
                out[name] = None
        return out
    if spec.kind == "list" and isinstance(value, list):
        return [fill_nulls(spec.children[0], v) for v in value]
    if spec.kind == "optional" and value is not None:
        return fill_nulls(spec.children[0], value)
    return value


def mutate(data: st.DataObject, spec: Spec, value: dict[str, Any]) -> dict[str, Any]:
    """An instance both sides must refuse: a missing required key, an unknown key, or a wrong-shaped value."""
    required = [n for n, has in zip(spec.names, spec.defaults, strict=True) if not has]
    how = data.draw(st.sampled_from(["extra", "wrong", *(["missing"] if required else [])]))
    out = dict(value)
    if how == "extra":
        out["zz_unknown"] = 1
    elif how == "missing":
        del out[data.draw(st.sampled_from(required))]
    else:
        name = data.draw(st.sampled_from(spec.names))
        child = spec.children[spec.names.index(name)]
        out[name] = [[1]] if child.kind in ("model", "optional") else {"unexpected": True}
        if child.kind == "optional":
            out[name] = {"unexpected": [1]} if child.children[0].kind != "model" else [[1]]
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=model_spec(specs()), data=st.data())
def test_emitted_schemas_accept_exactly_what_the_model_accepts(spec: Spec, data: st.DataObject) -> None:
    model = build_model(spec)
    plain = model_schema(model)
    strict = to_strict(plain)
    jsonschema.Draft202012Validator.check_schema(plain)
    jsonschema.Draft202012Validator.check_schema(strict.schema)
    assert strict.compatible, strict.problems

    valid = data.draw(value_strategy(spec))
    assert model_accepts(model, valid)
    assert schema_accepts(plain, valid)
    sent = fill_nulls(spec, valid)
    assert schema_accepts(strict.schema, sent)
    repaired, _ = repair_arguments(model, sent)
    assert model.model_validate(repaired) == model.model_validate(valid)

    invalid = mutate(data, spec, valid)
    assert not model_accepts(model, invalid)
    assert not schema_accepts(plain, invalid)
    assert not schema_accepts(strict.schema, fill_nulls(spec, invalid))


@pytest.mark.parametrize("value", [-1, 101])
def test_strict_keeps_numeric_bounds_so_out_of_range_is_refused(value: int) -> None:
    strict = to_strict(model_schema(Example)).schema
    instance = dict.fromkeys(strict["properties"]) | {"name": "ok", "count": value}
    assert not schema_accepts(strict, instance)
