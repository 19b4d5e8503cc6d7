"""JSON Schema for tools: the plain form every provider takes, and OpenAI's strict form when it fits.

Pure data functions. Strict mode is only claimed for a schema that really satisfies it (every property
required, optionals nullable, closed objects, no ``default``, only the supported keywords); the other
keywords are moved into the description so the model still reads them. Schemas from third parties (MCP
servers) are untrusted and are cut to a node and depth budget before anything else looks at them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel

JsonSchema = dict[str, Any]

# Keywords OpenAI strict mode accepts on a schema node; see the Structured Outputs guide.
_STRICT_KEYWORDS = frozenset(
    {
        "type", "description", "title", "enum", "const", "properties", "required", "additionalProperties",
        "items", "anyOf", "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip
_STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
# Keywords strict mode rejects but a model can still honour when it reads them in the description.
_DESCRIBABLE = {
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "uniqueItems": "items must be unique",
    "minProperties": "at least {} entries",
    "maxProperties": "at most {} entries",
    "format": "format: {}",
    "examples": "examples: {}",
    "contentMediaType": "media type: {}",
    "contentEncoding": "encoding: {}",
}
_DROPPED = frozenset({"default", "discriminator", "$schema", "$id", "$comment", "readOnly", "writeOnly", "deprecated"})
_STRUCTURAL = frozenset({"type", "required", "enum", "const"})
STRICT_MAX_DEPTH = 10
STRICT_MAX_PROPERTIES = 5000
STRICT_MAX_ENUM = 1000


# ------------------------------------------------------------------------------------------ plain


@cache
def _model_schema(model: type[BaseModel]) -> str:
    schema = strip_titles(model.model_json_schema(mode="validation"))
    schema.pop("title", None)
    if schema.get("type") != "object":
        raise ValueError(f"{model.__name__}: a tool's input schema must be an object")
    schema.setdefault("properties", {})
    return json.dumps(schema)


def model_schema(model: type[BaseModel]) -> JsonSchema:
    """The input schema of a tool as providers want it: an object at the root, without pydantic's titles.

    Computed once per model; every caller gets its own copy to change at will.
    """
    loaded: JsonSchema = json.loads(_model_schema(model))
    return loaded


@cache
def _output_schema(model: type[BaseModel]) -> str:
    schema = strip_titles(model.model_json_schema(mode="serialization"))
    schema.pop("title", None)
    return json.dumps(schema)


def output_schema(model: type[BaseModel]) -> JsonSchema:
    loaded: JsonSchema = json.loads(_output_schema(model))
    return loaded


def strip_titles(schema: Any) -> Any:
    """Drop auto-generated ``title`` keywords (noise in a prompt) but never a property named ``title``."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
                out[key] = {name: strip_titles(sub) for name, sub in value.items()}
            else:
                out[key] = strip_titles(value)
        return out
    if isinstance(schema, list):
        return [strip_titles(item) for item in schema]
    return schema


# ------------------------------------------------------------------------------------------ reading


def resolve_ref(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A node with a local ``$ref`` replaced by its definition (siblings kept), one level deep."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref[len("#/$defs/") :], {})
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def json_kind(value: Any) -> str:
    """The JSON Schema type name of a JSON value ("number" for every number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def json_kinds(node: Any, defs: dict[str, Any], seen: frozenset[str] = frozenset()) -> set[str]:
    """Every JSON type a schema node accepts, through refs, unions and enums; empty when it accepts anything."""
    if not isinstance(node, dict):
        return set()
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
        return json_kinds(defs.get(ref[len("#/$defs/") :]), defs, seen | {ref})
    kinds: set[str] = set()
    kind = node.get("type")
    if isinstance(kind, str):
        kinds.add(kind)
    elif isinstance(kind, list):
        kinds.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []) or []:
            kinds |= json_kinds(sub, defs, seen)
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        kinds.update(json_kind(v) for v in values)
    if not kinds and "properties" in node:
        kinds.add("object")
    return kinds


# ------------------------------------------------------------------------------------------ strict


@dataclass
class StrictResult:
    """A strict-mode rendering of a schema; ``compatible`` says whether it may be sent with ``strict: true``."""

    schema: JsonSchema
    compatible: bool
    problems: list[str] = field(default_factory=list)


def to_strict(schema: JsonSchema) -> StrictResult:
    """Rewrite a schema for OpenAI strict mode; report (never raise) what keeps it from being strict."""
    converter = _StrictConverter(copy.deepcopy(schema))
    root = converter.convert_root()
    return StrictResult(root, not converter.problems, converter.problems)


def _describe(node: dict[str, Any], notes: list[str]) -> None:
    """Append notes to a node's description as a sentence the model reads."""
    if not notes:
        return
    text = "; ".join(notes)
    existing = str(node.get("description", "")).strip()
    if existing and existing[-1] not in ".!?":
        existing += "."
    node["description"] = f"{existing} {text[:1].upper()}{text[1:]}.".strip()


def _is_nullable(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(isinstance(s, dict) and _is_nullable(s) for s in node.get("anyOf", []))


def _make_nullable(node: dict[str, Any]) -> dict[str, Any]:
    if _is_nullable(node):
        return node
    kind = node.get("type")
    if isinstance(kind, str) and not ({"enum", "const", "$ref", "anyOf"} & node.keys()):
        return {**node, "type": [kind, "null"]}
    if isinstance(kind, list) and not ({"enum", "const", "$ref", "anyOf"} & node.keys()):
        return {**node, "type": [*kind, "null"]}
    description = node.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [node, {"type": "null"}]}
    if description:
        wrapped["description"] = description
    return wrapped


class _StrictConverter:
    def __init__(self, schema: JsonSchema) -> None:
        self.root = schema
        self.defs: dict[str, Any] = schema.get("$defs", {}) if isinstance(schema.get("$defs"), dict) else {}
        self.problems: list[str] = []
        self.property_count = 0

    def problem(self, path: str, text: str) -> None:
        self.problems.append(f"{path or '/'}: {text}")

    def convert_root(self) -> JsonSchema:
        root = self.root
        if root.get("type") != "object" or "anyOf" in root:
            self.problem("", "the root must be a plain object")
        defs = root.pop("$defs", None)
        out: JsonSchema = self.node(root, "", depth=1)
        if isinstance(defs, dict):
            out["$defs"] = {name: self.node(sub, f"/$defs/{name}", depth=1) for name, sub in defs.items()}
        if self.property_count > STRICT_MAX_PROPERTIES:
            self.problem("", f"{self.property_count} properties exceed strict mode's {STRICT_MAX_PROPERTIES}")
        return out

    def resolve_ref(self, ref: str) -> dict[str, Any] | None:
        prefix = "#/$defs/"
        if ref.startswith(prefix) and isinstance(self.defs.get(ref[len(prefix) :]), dict):
            return dict(self.defs[ref[len(prefix) :]])
        return None

    def node(self, node: Any, path: str, depth: int) -> Any:
        if not isinstance(node, dict):
            self.problem(path, "a boolean schema is not allowed")
            return node
        if depth > STRICT_MAX_DEPTH:
            self.problem(path, f"nesting deeper than {STRICT_MAX_DEPTH} levels")
        node = dict(node)
        if "$ref" in node and len(node) > 1:
            # Strict mode allows nothing beside a $ref: inline the target once, keeping the siblings.
            target = self.resolve_ref(node["$ref"])
            if target is None:
                self.problem(path, f"unresolvable $ref {node['$ref']}")
            else:
                node.pop("$ref")
                node = {**target, **node}
        if "allOf" in node:
            parts = node.pop("allOf")
            if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict):
                node = {**parts[0], **node}
                return self.node(node, path, depth)
            self.problem(path, "allOf with several parts")
        if "oneOf" in node:
            # pydantic's discriminated unions: the branches are disjoint, so anyOf means the same.
            node["anyOf"] = node.pop("oneOf")
        notes: list[str] = []
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key == "format" and value in _STRICT_FORMATS:
                out[key] = value
            elif key in _DESCRIBABLE:
                notes.append(_DESCRIBABLE[key].format(json.dumps(value) if key == "examples" else value))
            elif key not in _STRICT_KEYWORDS:
                self.problem(path, f"keyword {key!r} is not supported in strict mode")
            else:
                out[key] = value
        if "enum" in out and isinstance(out["enum"], list) and len(out["enum"]) > STRICT_MAX_ENUM:
            self.problem(path, f"enum with more than {STRICT_MAX_ENUM} values")
        if "anyOf" in out:
            out["anyOf"] = [self.node(sub, f"{path}/anyOf/{i}", depth) for i, sub in enumerate(out["anyOf"])]
        kinds = out.get("type")
        kind_set = set(kinds) if isinstance(kinds, list) else {kinds}
        if "object" in kind_set or "properties" in out:
            self.object_node(out, path, depth)
        if "array" in kind_set:
            if "items" not in out:
                self.problem(path, "an array needs an items schema")
            else:
                out["items"] = self.node(out["items"], f"{path}/items", depth + 1)
        if not ({"type", "$ref", "anyOf", "enum", "const"} & out.keys()):
            self.problem(path, "a schema that accepts anything (no type) is not allowed")
        _describe(out, notes)
        return out

    def object_node(self, out: dict[str, Any], path: str, depth: int) -> None:
        extra = out.get("additionalProperties", False)
        if extra not in (False, None):
            self.problem(path, "an open mapping (additionalProperties) is not allowed")
        out["additionalProperties"] = False
        properties: dict[str, Any] = out.get("properties", {})
        required = set(out.get("required", []))
        converted: dict[str, Any] = {}
        for name, sub in properties.items():
            self.property_count += 1
            default = sub.get("default") if isinstance(sub, dict) else None
            has_default = isinstance(sub, dict) and "default" in sub
            prop = self.node(sub, f"{path}/properties/{name}", depth + 1)
            if name not in required and isinstance(prop, dict):
                prop = _make_nullable(prop)
                if has_default and default is not None:
                    _describe(prop, [f"null means the default, {json.dumps(default)}"])
            converted[name] = prop
        out["properties"] = converted
        out["required"] = list(converted)
        if "type" not in out:
            out["type"] = "object"


# ------------------------------------------------------------------------------------------ foreign


def budget_schema(schema: Any, *, max_nodes: int = 2000, max_depth: int = 24) -> JsonSchema:
    """Cap a third-party schema to a depth and node budget, saying so in the root description.

    Past the depth budget a subtree accepts any value; past the node budget the remaining entries are dropped.
    The result always has an object root, so one hostile server cannot break a provider request.
    """
    nodes = 0
    cut = False

    def walk(node: Any, depth: int) -> Any:
        nonlocal nodes, cut
        nodes += 1
        if isinstance(node, dict):
            if depth > max_depth:
                cut = True
                return {}
            out: dict[str, Any] = {}
            # Small structural keywords first, so a cut drops sub-schemas, never a node's type or required list.
            ordered = sorted(node.items(), key=lambda kv: kv[0] not in _STRUCTURAL and isinstance(kv[1], dict | list))
            for key, value in ordered:
                if nodes >= max_nodes and key not in _STRUCTURAL:
                    cut = True
                    break
                if not isinstance(key, str) or key in ("$schema", "$id"):
                    continue
                if key == "$ref" and not (isinstance(value, str) and value.startswith("#/")):
                    continue  # remote references are never fetched
                out[key] = walk(value, depth + 1)
            if isinstance(out.get("required"), list) and isinstance(out.get("properties"), dict):
                out["required"] = [r for r in out["required"] if r in out["properties"]]
            return out
        if isinstance(node, list):
            items = []
            for item in node:
                if nodes >= max_nodes:
                    cut = True
                    break
                items.append(walk(item, depth))
            return items
        if isinstance(node, str):
            return node[:4000]
        return node

    result = walk(schema, 0) if isinstance(schema, dict) else None
    if not isinstance(result, dict) or result.get("type") != "object":
        result = {"type": "object", "properties": {}}
    if not isinstance(result.get("properties"), dict):
        result["properties"] = {}
    if cut:
        _describe(result, ["parts of this schema were cut because it was too deep or too large"])
    return result


# ------------------------------------------------------------------------------------------ checking


def schema_checker(
    schema: JsonSchema, keep: Callable[[Any], bool] | None = None
) -> Callable[[dict[str, Any]], list[str]] | None:
    """A function from arguments to the list of what is wrong with them (``- 'field': why``), per ``schema``.

    None when the schema itself is not a usable JSON Schema. Regular expressions and formats are not
    checked: a hostile ``pattern`` must not stall the process. ``keep`` (given each jsonschema
    ``ValidationError``) narrows which kinds of problem count.
    """
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    def skip(*_: Any) -> None:
        return None

    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        base.check_schema(schema)
    except SchemaError:
        return None
    lenient = validators.extend(base, {"pattern": skip, "patternProperties": skip, "format": skip})  # type: ignore[no-untyped-call]
    checker = lenient(schema)

    def check(args: dict[str, Any]) -> list[str]:
        try:
            found = (e for e in checker.iter_errors(args) if keep is None or keep(e))
            errors = sorted(found, key=lambda e: [str(p) for p in e.absolute_path])
        except Exception:  # an unresolvable $ref and the like: the handler sees the arguments as they are
            return []
        out = []
        for error in errors[:20]:
            where = ".".join(str(p) for p in error.absolute_path) or "(arguments)"
            out.append(f"- '{where}': {error.message[:300]}")
        return out

    return check
