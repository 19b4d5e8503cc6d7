"""Arguments on their way in: parsed, repaired, validated, and explained when they are wrong.

Repairs cover the slips models make most; they are applied before validation and always reported.

Only repairs that cannot change meaning are made: an object or list sent as a JSON string is decoded, a
single value where a list is expected is wrapped, and a ``null`` for an optional field that does not
accept null means "use the default" (that is how strict-mode schemas spell an omitted field). A parameter
sent under a name models commonly guess (``path`` where the tool says ``file_path``, ``filePath``) is taken
as the tool's own when it can mean nothing else (``toolrig.argnames``); two names for one field are refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from toolrig.argnames import NamePlan, name_plan
from toolrig.errors import ErrorType, ToolError
from toolrig.schema import json_kind, json_kinds, model_schema

_INVALID_JSON_HINT = 'Send the arguments as one JSON object, e.g. {"name": "value"}.'
_TOO_DEEP_HINT = "Send flatter arguments: nesting this deep is never a tool's input."
# A lone UTF-16 surrogate: legal in JSON text (as an escape), but no UTF-8 can carry it.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class FieldKinds:
    kinds: frozenset[str]
    required: bool

    @property
    def takes_string(self) -> bool:
        return "string" in self.kinds or not self.kinds


@cache
def field_kinds(model: type[BaseModel]) -> dict[str, FieldKinds]:
    schema = model_schema(model)
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    return {
        name: FieldKinds(frozenset(json_kinds(sub, defs)), name in required)
        for name, sub in schema.get("properties", {}).items()
    }


def parse_arguments(raw: str | bytes | dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """Turn what a consumer sent into an argument object, or fail with ``invalid_input``."""
    notes: list[str] = []
    if type(raw) is dict:  # the common case (a Python caller, a provider SDK's parsed arguments)
        try:
            to_json(raw)  # in C: valid text, reasonable depth
        except Exception:
            _refuse_surrogates(raw)
        return raw, notes
    if raw is None:
        return {}, notes
    value: Any = raw
    if isinstance(raw, str | bytes):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            return {}, notes
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolError(
                ErrorType.INVALID_INPUT,
                f"The arguments are not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
                _INVALID_JSON_HINT,
            ) from None
        except RecursionError:
            raise _too_deep() from None
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = json.loads(value)
                notes.append("The arguments were JSON encoded twice; they were decoded.")
            except json.JSONDecodeError:
                pass
            except RecursionError:
                raise _too_deep() from None
    if not isinstance(value, dict):
        raise ToolError(
            ErrorType.INVALID_INPUT,
            f"The arguments must be a JSON object, not {json_kind(value)}.",
            _INVALID_JSON_HINT,
        )
    try:
        to_json(value)  # the common case, in C: valid text, reasonable depth
    except Exception:
        _refuse_surrogates(value)
    return value, notes


MAX_DEPTH = 200  # far deeper than any tool's input; well under Python's recursion limit for what follows


def _too_deep() -> ToolError:
    return ToolError(ErrorType.INVALID_INPUT, "The arguments are nested too deeply.", _TOO_DEEP_HINT)


def _refuse_surrogates(value: Any) -> None:
    """Refuse text no UTF-8 can carry (a lone surrogate), and nesting deeper than any input needs.

    Such a string would fail later, in a file write, a database, the audit row or a provider's request,
    after the call has already happened; here it is one clear ``invalid_input``.
    """
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep()
        if isinstance(item, str):
            if found := _SURROGATE.search(item):
                raise ToolError(
                    ErrorType.INVALID_INPUT,
                    f"The argument {where or '(the arguments)'} contains a lone UTF-16 surrogate "
                    f"(U+{ord(found.group()):04X}), which is not text: UTF-8 cannot carry it.",
                    "Send valid Unicode text; binary data goes base64-encoded where a tool accepts it.",
                )
        elif isinstance(item, dict):
            for key, child in item.items():
                label = f"{where}.{key}" if where else str(key)
                stack.append((key, depth + 1, label))
                stack.append((child, depth + 1, label))
        elif isinstance(item, list | tuple):
            stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(item))


def _drop_null_defaults(value: Any, node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """Remove ``null`` where the schema has an optional field that does not accept null, at any depth."""
    if depth > 32 or not isinstance(node, dict):
        return value
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = defs.get(ref[len("#/$defs/") :], {})
    if isinstance(value, dict | list) and isinstance(node.get("anyOf"), list):
        wanted = "object" if isinstance(value, dict) else "array"
        for branch in node["anyOf"]:
            if wanted in json_kinds(branch, defs):
                return _drop_null_defaults(value, branch, defs, depth + 1)
        return value
    if isinstance(value, list):
        items = node.get("items")
        if isinstance(items, dict):
            return [_drop_null_defaults(v, items, defs, depth + 1) for v in value]
        return value
    if not isinstance(value, dict):
        return value
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return value
    required = set(node.get("required", []))
    out: dict[str, Any] = {}
    for key, item in value.items():
        sub = properties.get(key)
        if item is None and key not in required and sub is not None and "null" not in json_kinds(sub, defs):
            continue
        out[key] = _drop_null_defaults(item, sub, defs, depth + 1) if sub is not None else item
    return out


@dataclass(frozen=True, slots=True)
class RepairPlan:
    """What could ever need repair in a model's arguments, worked out once so most calls skip repair."""

    fields: dict[str, FieldKinds]  # fields that take an object or a list: decode and wrap apply
    drops_nulls: bool  # some optional field, at any depth, does not accept null
    names: NamePlan | None = None  # other spellings of the fields' names that are accepted (argnames)

    @property
    def needed(self) -> bool:
        return bool(self.fields) or self.drops_nulls or self.names is not None


def _has_optional_without_null(node: Any, defs: dict[str, Any]) -> bool:
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            required = set(node.get("required", []))
            if any(k not in required and "null" not in json_kinds(v, defs) for k, v in properties.items()):
                return True
        return any(_has_optional_without_null(v, defs) for k, v in node.items() if k != "$defs") or any(
            _has_optional_without_null(v, defs) for v in (node.get("$defs") or {}).values()
        )
    if isinstance(node, list):
        return any(_has_optional_without_null(v, defs) for v in node)
    return False


@cache
def repair_plan(model: type[BaseModel]) -> RepairPlan:
    schema = model_schema(model)
    fields = {name: info for name, info in field_kinds(model).items() if info.kinds & {"object", "array"}}
    return RepairPlan(fields, _has_optional_without_null(schema, schema.get("$defs", {})), name_plan(schema))


def repair_arguments(model: type[BaseModel], args: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    plan = repair_plan(model)
    notes: list[str] = []
    if plan.names is not None:
        args = plan.names.apply(args, notes)
    fixed: dict[str, Any] | None = None
    for name, info in plan.fields.items():
        if name not in args:
            continue
        value = args[name]
        new = value
        if isinstance(value, str) and not info.takes_string and info.kinds & {"object", "array"}:
            try:
                decoded = json.loads(value)
            except json.JSONDecodeError:
                decoded = None
            if (isinstance(decoded, dict) and "object" in info.kinds) or (
                isinstance(decoded, list) and "array" in info.kinds
            ):
                new = decoded
                notes.append(f"'{name}' was sent as a JSON string; it was decoded.")
        if (
            "array" in info.kinds
            and new is not None
            and not isinstance(new, list)
            and json_kind(new) not in info.kinds
            and not (isinstance(new, int | float) and "integer" in info.kinds)
        ):
            new = [new]
            notes.append(f"'{name}' expects a list; the single value was wrapped in one.")
        if new is not value:
            fixed = dict(args) if fixed is None else fixed
            fixed[name] = new
    result = fixed if fixed is not None else args
    if plan.drops_nulls and _has_null(result):
        schema = model_schema(model)
        result = _drop_null_defaults(result, schema, schema.get("$defs", {}))
    return result, notes


def _has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


def _preview(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(arguments)"


def explain_validation_error(model: type[BaseModel], exc: ValidationError) -> ToolError:
    """One line per bad field, in words a model can act on, naming the fields that do exist."""
    lines: list[str] = []
    for error in exc.errors(include_url=False):
        where = _location(error["loc"])
        kind = error["type"]
        if kind == "missing":
            lines.append(f"- '{where}' is required but missing.")
        elif kind == "extra_forbidden":
            lines.append(f"- '{where}' is not a parameter of this tool.")
        else:
            lines.append(f"- '{where}': {error['msg']} (got {_preview(error.get('input'))}).")
    # The names a caller writes: a field's alias when it has one (memory_get's `from`, not `from_`).
    fields = ", ".join(f"'{info.alias or name}'" for name, info in model.model_fields.items()) or "none"
    plural = "s" if len(lines) != 1 else ""
    return ToolError(
        ErrorType.INVALID_INPUT,
        f"{len(lines)} invalid argument{plural}:\n" + "\n".join(lines),
        f"Fix the argument{plural} above and call again. The parameters are: {fields}.",
    )
