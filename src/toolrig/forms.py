"""Flat forms: the JSON Schema subset MCP elicitation allows, checked on the way out and the way back.

A tool (or the model, through ``ask_user``) may ask the person to fill in a form of its own. The schema
comes from a tool or a model and the answer from a client, so both are hostile: a form is kept only when
it is an object of primitive fields (string, number, integer, boolean, the single- and multi-select enum
shapes of SEP-1330, each with a SEP-1034 default), with bounded sizes and no keyword outside that subset,
and an answer reaches the tool only when every value fits its field. The checked form keeps the shape it
was written in (an untitled enum stays ``enum``, a legacy one keeps ``enumNames``), so a client renders
what the tool meant.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any
from urllib.parse import urlsplit

MAX_FIELDS = 20
MAX_OPTIONS = 100
MAX_TEXT = 10_000  # the longest answer a string field takes
MAX_LABEL = 200  # a title, an option's value or title
MAX_DESCRIPTION = 2_000
FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
FORMATS = ("email", "uri", "date", "date-time")

_COMMON = frozenset({"type", "title", "description", "default"})
_KEYS = {
    "string": _COMMON | {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf"},
    "number": _COMMON | {"minimum", "maximum"},
    "integer": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "array": _COMMON | {"items", "minItems", "maxItems"},
}


class FormError(ValueError):
    """A form outside the allowed subset, or an answer that does not fit its form; the message says where."""


# ------------------------------------------------------------------------------ the form


def check_form(schema: Any) -> dict[str, Any]:
    """The form as a clean copy (only the allowed keywords), or ``FormError`` naming the first problem."""
    if not isinstance(schema, Mapping):
        raise FormError("a form is a JSON object: {type: object, properties: {...}}")
    extra = set(schema) - {"type", "properties", "required", "title", "description", "$schema"}
    if extra:
        raise FormError(f"a form may not use {_names(extra)} (only type, properties, required, title, description)")
    if schema.get("type", "object") != "object":
        raise FormError("a form's type must be 'object'")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        raise FormError("a form needs 'properties': at least one field")
    if len(properties) > MAX_FIELDS:
        raise FormError(f"a form has at most {MAX_FIELDS} fields, not {len(properties)}")
    fields: dict[str, Any] = {}
    for name, spec in properties.items():
        if not isinstance(name, str) or not FIELD_NAME.match(name):
            raise FormError(f"field name {str(name)[:70]!r} must be letters, digits, _ . - (at most 64)")
        try:
            fields[name] = _check_field(spec)
        except FormError as exc:
            raise FormError(f"field {name!r}: {exc}") from None
    form: dict[str, Any] = {"type": "object", "properties": fields}
    required = schema.get("required")
    if required is not None:
        if not isinstance(required, list) or not all(isinstance(r, str) and r in fields for r in required):
            raise FormError("'required' must list the form's own field names")
        if required:
            form["required"] = list(dict.fromkeys(required))
    for key, cap in (("title", MAX_LABEL), ("description", MAX_DESCRIPTION)):
        if key in schema:
            form[key] = _text(schema[key], key, cap)
    return form


def _check_field(spec: Any) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise FormError("a field is a JSON object with a 'type'")
    kind = spec.get("type")
    if not isinstance(kind, str) or kind not in _KEYS:
        raise FormError(f"type must be one of {', '.join(_KEYS)} (a form holds primitive fields only)")
    extra = set(spec) - _KEYS[kind]
    if extra:
        raise FormError(f"a {kind} field may not use {_names(extra)}")
    out: dict[str, Any] = {"type": kind}
    for key, cap in (("title", MAX_LABEL), ("description", MAX_DESCRIPTION)):
        if key in spec:
            out[key] = _text(spec[key], key, cap)
    if kind == "string":
        _check_string(spec, out)
    elif kind in ("number", "integer"):
        for key in ("minimum", "maximum"):
            if key in spec:
                out[key] = _number(spec[key], key, integer=kind == "integer")
        if "minimum" in out and "maximum" in out and out["minimum"] > out["maximum"]:
            raise FormError("minimum is above maximum")
    elif kind == "array":
        _check_array(spec, out)
    if "default" in spec:
        try:
            out["default"] = check_value(out, spec["default"])
        except FormError as exc:
            raise FormError(f"its default does not fit: {exc}") from None
    return out


def _check_string(spec: Mapping[str, Any], out: dict[str, Any]) -> None:
    for key in ("minLength", "maxLength"):
        if key in spec:
            out[key] = _count(spec[key], key, MAX_TEXT)
    if out.get("minLength", 0) > out.get("maxLength", MAX_TEXT):
        raise FormError("minLength is above maxLength")
    if "format" in spec:
        if spec["format"] not in FORMATS:
            raise FormError(f"format must be one of {', '.join(FORMATS)}")
        out["format"] = spec["format"]
    if "enum" in spec and "oneOf" in spec:
        raise FormError("use either 'enum' or 'oneOf', not both")
    if "enumNames" in spec and "enum" not in spec:
        raise FormError("'enumNames' names the values of an 'enum'")
    if "enum" in spec:
        out["enum"] = _values(spec["enum"], "enum")
        if "enumNames" in spec:
            names = _values(spec["enumNames"], "enumNames", distinct=False)
            if len(names) != len(out["enum"]):
                raise FormError("'enumNames' must name each 'enum' value, in order")
            out["enumNames"] = names
    elif "oneOf" in spec:
        out["oneOf"] = _titled(spec["oneOf"], "oneOf")
    if ("enum" in out or "oneOf" in out) and ({"minLength", "maxLength", "format"} & set(out)):
        raise FormError("a choice field takes no minLength, maxLength or format")


def _check_array(spec: Mapping[str, Any], out: dict[str, Any]) -> None:
    items = spec.get("items")
    if not isinstance(items, Mapping):
        raise FormError("a multi-select field needs 'items': {type: string, enum: [...]} or {anyOf: [...]}")
    if "enum" in items:
        if set(items) - {"type", "enum"} or items.get("type", "string") != "string":
            raise FormError("'items' of an untitled multi-select is {type: string, enum: [...]}")
        out["items"] = {"type": "string", "enum": _values(items["enum"], "items.enum")}
    elif "anyOf" in items:
        if set(items) - {"anyOf"}:
            raise FormError("'items' of a titled multi-select is {anyOf: [{const, title}...]}")
        out["items"] = {"anyOf": _titled(items["anyOf"], "items.anyOf")}
    else:
        raise FormError("'items' must list its choices ('enum' or 'anyOf')")
    count = len(choices(out))
    for key in ("minItems", "maxItems"):
        if key in spec:
            out[key] = _count(spec[key], key, count)
    if out.get("minItems", 0) > out.get("maxItems", count):
        raise FormError("minItems is above maxItems")


def _values(raw: Any, key: str, *, distinct: bool = True) -> list[str]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_OPTIONS:
        raise FormError(f"'{key}' must be a list of 1 to {MAX_OPTIONS} strings")
    values = [_text(v, key, MAX_LABEL) for v in raw]
    if distinct and len(set(values)) != len(values):
        raise FormError(f"'{key}' repeats a value")
    return values


def _titled(raw: Any, key: str) -> list[dict[str, str]]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_OPTIONS:
        raise FormError(f"'{key}' must be a list of 1 to {MAX_OPTIONS} {{const, title}} objects")
    out = []
    for item in raw:
        if not isinstance(item, Mapping) or set(item) != {"const", "title"}:
            raise FormError(f"each '{key}' entry is exactly {{const: string, title: string}}")
        value, title = _text(item["const"], "const", MAX_LABEL), _text(item["title"], "title", MAX_LABEL)
        out.append({"const": value, "title": title})
    if len({o["const"] for o in out}) != len(out):
        raise FormError(f"'{key}' repeats a value")
    return out


def _text(raw: Any, key: str, cap: int) -> str:
    if not isinstance(raw, str) or len(raw) > cap:
        raise FormError(f"'{key}' must be a string of at most {cap} characters")
    return raw


def _count(raw: Any, key: str, cap: int) -> int:
    if type(raw) is not int or not 0 <= raw <= cap:
        raise FormError(f"'{key}' must be a whole number from 0 to {cap}")
    return raw


def _number(raw: Any, key: str, *, integer: bool) -> int | float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise FormError(f"'{key}' must be a finite number")
    if integer and raw != int(raw):
        raise FormError(f"'{key}' of an integer field must be whole")
    return int(raw) if integer else raw


def _names(keys: set[Any]) -> str:
    return ", ".join(repr(str(k)[:40]) for k in sorted(keys, key=str)[:5])


# ------------------------------------------------------------------------------ reading a checked form


def fields(form: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The fields of a checked form, in order."""
    return dict(form["properties"])


def choices(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A choice field's (value, what the person reads), in order; empty for a field without choices."""
    source: Mapping[str, Any] = spec.get("items", spec) if spec.get("type") == "array" else spec
    if "enum" in source:
        names = source.get("enumNames") or source["enum"]
        return list(zip(source["enum"], names, strict=True))
    titled = source.get("oneOf") or source.get("anyOf") or ()
    return [(o["const"], o["title"]) for o in titled]


# ------------------------------------------------------------------------------ answers


def check_value(spec: Mapping[str, Any], value: Any) -> Any:
    """One value checked against its (checked) field; the value in its JSON type, or ``FormError``."""
    kind = spec["type"]
    if kind == "boolean":
        if not isinstance(value, bool):
            raise FormError("expected true or false")
        return value
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise FormError("expected a finite number")
        if kind == "integer":
            if value != int(value):
                raise FormError("expected a whole number")
            value = int(value)
        if "minimum" in spec and value < spec["minimum"]:
            raise FormError(f"expected at least {spec['minimum']}")
        if "maximum" in spec and value > spec["maximum"]:
            raise FormError(f"expected at most {spec['maximum']}")
        return value
    allowed = [v for v, _ in choices(spec)]
    if kind == "array":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise FormError("expected a list of choices")
        if len(set(value)) != len(value):
            raise FormError("a choice is picked twice")
        wrong = [v for v in value if v not in allowed]
        if wrong:
            raise FormError(f"{wrong[0][:60]!r} is not one of the choices")
        if not spec.get("minItems", 0) <= len(value) <= spec.get("maxItems", len(allowed)):
            raise FormError(f"expected {spec.get('minItems', 0)} to {spec.get('maxItems', len(allowed))} choices")
        return list(value)
    if not isinstance(value, str):
        raise FormError("expected text")
    if allowed:
        if value not in allowed:
            raise FormError(f"{value[:60]!r} is not one of the choices")
        return value
    if not spec.get("minLength", 0) <= len(value) <= spec.get("maxLength", MAX_TEXT):
        raise FormError(f"expected {spec.get('minLength', 0)} to {spec.get('maxLength', MAX_TEXT)} characters")
    if "format" in spec and not _formatted(spec["format"], value):
        raise FormError(f"expected the {spec['format']} format")
    return value


def _formatted(fmt: str, value: str) -> bool:
    try:
        if fmt == "date":
            date.fromisoformat(value)
        elif fmt == "date-time":
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        elif fmt == "email":
            local, _, domain = value.partition("@")
            return bool(local) and "." in domain and not any(c.isspace() for c in value)
        else:
            parts = urlsplit(value)
            return bool(parts.scheme) and bool(parts.netloc or parts.path)
    except ValueError:
        return False
    return True


def check_values(form: Mapping[str, Any], values: Any) -> dict[str, Any]:
    """A whole answer checked against its form: defaults fill the fields left out; ``FormError`` otherwise."""
    if not isinstance(values, Mapping):
        raise FormError("the answer is not a JSON object of field values")
    specs = fields(form)
    extra = [k for k in values if k not in specs]
    if extra:
        raise FormError(f"the answer has fields the form does not: {_names(set(extra))}")
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        if name in values and values[name] is not None:
            try:
                out[name] = check_value(spec, values[name])
            except FormError as exc:
                raise FormError(f"field {name!r}: {exc}") from None
        elif "default" in spec:
            out[name] = spec["default"]
        elif name in form.get("required", ()):
            raise FormError(f"field {name!r} is required and has no answer")
    return out
