"""Parameter names models guess: the spelling one tool uses, sent to another that spells it differently.

A model that just called ``write_file(path=...)`` calls ``memory_write(path=...)`` where the tool says
``file_path``; one trained on other agents sends ``filePath``, ``file_text`` or ``cmd``; one asked to list a
folder sends ``list_directory(path="src")`` where the tool takes ``directories: [{"path": "src"}]``. Each of
these can mean only one parameter of the tool, so it is read as that parameter, with a note. A name that
could mean two parameters, or a parameter sent under two names (``path`` and ``file_path``), is refused
with an error that says which name to use: guessing there could change what the call touches.

Trust: the names and values are the model's, as hostile as any. This only renames keys and wraps values
into the tool's own shape before validation; the validated input is what policy and the tool see.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolrig.errors import ErrorType, ToolError

# Field name -> the other names models send for it. One table for every tool: a tool that has the field
# accepts its alternatives, unless it has a field by that name itself.
ALTERNATIVES: Mapping[str, tuple[str, ...]] = {
    "path": ("file_path", "filepath", "file", "filename", "file_name"),
    "file_path": ("path", "filepath", "file", "filename", "file_name"),
    "paths": ("path", "file_path", "files", "file_paths"),
    "document_name": ("name", "document", "doc_name", "filename", "file_name"),
    "content": ("contents", "file_text", "text"),
    "command": ("cmd",),
    "query": ("q", "search_query"),
    "old_string": ("old_str",),
    "new_string": ("new_str",),
    "url": ("uri",),
}
# A list-of-objects field -> more names for the key of its lone item (list_directory's "directory": "src").
ITEM_ALTERNATIVES: Mapping[str, tuple[str, ...]] = {"directories": ("directory", "dir")}

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """``filePath`` -> ``file_path``: the spelling of the same name in another language's convention."""
    return _CAMEL.sub(r"_\1", name).lower()


def _shown(name: str) -> str:
    return repr(name if len(name) <= 40 else name[:39] + "…")


@dataclass(frozen=True, slots=True)
class Wrap:
    """``field`` takes a list of objects whose one required key is ``key``; ``item_fields`` its other keys."""

    field: str
    key: str
    item_fields: frozenset[str]


@dataclass(frozen=True, slots=True)
class NamePlan:
    """The other names one tool's parameters are accepted under, worked out once per input model."""

    fields: frozenset[str]
    renames: Mapping[str, tuple[str, ...]]  # a name the tool lacks -> the fields it may stand for
    wraps: Mapping[str, Wrap]  # a name the tool lacks -> the list field its lone item goes into

    def targets(self, key: str) -> tuple[str, ...]:
        found = list(self.renames.get(key, ()))
        converted = snake(key)
        if converted != key and converted in self.fields and converted not in found:
            found.append(converted)
        return tuple(found)

    def apply(self, args: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        """``args`` under the tool's own names; ``ToolError`` when a name is ambiguous."""
        unknown = [key for key in args if key not in self.fields]
        if not unknown:
            return args
        claimed: dict[str, list[str]] = {}
        for key in unknown:
            targets = self.targets(key)
            if len(targets) > 1:
                raise _refusal(
                    f"{_shown(key)} could mean any of the parameters {', '.join(map(_shown, targets))}.",
                    self.fields,
                )
            if targets:
                claimed.setdefault(targets[0], []).append(key)
        out = dict(args)
        for field, keys in claimed.items():
            if field in args or len(keys) > 1:
                names = ", ".join(map(_shown, [field, *keys] if field in args else keys))
                raise _refusal(f"{names} all name the parameter {_shown(field)}; send it once.", self.fields)
            out[field] = out.pop(keys[0])
            notes.append(f"{_shown(keys[0])} was read as {_shown(field)}, this tool's name for it.")
        return self._wrap(out, notes) if self.wraps else out

    def _wrap(self, args: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        sent = [key for key in args if key in self.wraps and key not in self.fields]
        if not sent:
            return args
        fields = {self.wraps[key].field for key in sent}
        if len(sent) > 1 or fields & set(args):
            names = ", ".join(map(_shown, [*sent, *sorted(fields & set(args))]))
            raise _refusal(f"{names} all name the items of {_shown(next(iter(fields)))}; send one.", self.fields)
        wrap = self.wraps[sent[0]]
        out = dict(args)
        value = out.pop(sent[0])
        values = value if isinstance(value, list) and all(isinstance(v, str) for v in value) else [value]
        extras = {k: out.pop(k) for k in list(out) if k not in self.fields and k in wrap.item_fields}
        out[wrap.field] = [{wrap.key: item, **extras} for item in values]
        notes.append(f"{_shown(sent[0])} was read as {wrap.field}: [{{{wrap.key!r}: ...}}], this tool's shape.")
        return out


def _refusal(problem: str, fields: frozenset[str]) -> ToolError:
    return ToolError(
        ErrorType.INVALID_INPUT,
        f"Ambiguous arguments: {problem}",
        f"Send each parameter once, under this tool's name for it. The parameters are: {', '.join(sorted(fields))}.",
    )


def _item_schema(node: Any, defs: Mapping[str, Any]) -> dict[str, Any] | None:
    items = node.get("items") if isinstance(node, dict) else None
    if not isinstance(items, dict):
        return None
    ref = items.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        items = defs.get(ref[len("#/$defs/") :], {})
    return items if isinstance(items, dict) and items.get("type", "object") == "object" else None


def name_plan(schema: Mapping[str, Any]) -> NamePlan | None:
    """The plan for a tool's input schema, or None when no other name could ever be accepted."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    fields = frozenset(properties)
    renames: dict[str, list[str]] = {}
    for field in fields:
        for alternative in ALTERNATIVES.get(field, ()):
            if alternative not in fields:
                renames.setdefault(alternative, []).append(field)
    wraps: dict[str, Wrap] = {}
    defs = schema.get("$defs") or {}
    for field, node in properties.items():
        item = _item_schema(node, defs)
        required = item.get("required", []) if item else []
        if item is None or len(required) != 1:
            continue
        key = required[0]
        wrap = Wrap(field, key, frozenset(item.get("properties", {})) - {key})
        for name in (key, *ALTERNATIVES.get(key, ()), *ITEM_ALTERNATIVES.get(field, ())):
            if name not in fields and name not in renames:
                wraps.setdefault(name, wrap)
    camel = any("_" in field for field in fields)
    if not renames and not wraps and not camel:
        return None
    return NamePlan(fields, {k: tuple(v) for k, v in renames.items()}, wraps)
