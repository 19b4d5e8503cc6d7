"""Every setting toolrig reads, as dotted keys generated from the config models.

One source for ``toolrig config keys`` and for the test that checks every message naming a setting
(``llm.api_key_env``) against the models: a hint that names a setting that does not exist sends a newcomer
hunting for it, so the names come from here rather than from memory.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from toolrig.config import Config

NAME = "<name>"  # a key the user chooses (an agent, an MCP server, a tool in tool_config)


@dataclass(frozen=True)
class Setting:
    key: str
    type: str
    default: str
    meaning: str


def _strip(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _model_in(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds (directly, optional, or as the values of a dict keyed by name)."""
    annotation = _strip(annotation)
    origin = get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            model, by_name = _model_in(arg)
            if model is not None:
                return model, by_name
    if origin is dict:
        model, _ = _model_in(get_args(annotation)[1])
        return model, model is not None
    return None, False


def type_name(annotation: Any) -> str:
    annotation = _strip(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return "|".join(str(a) for a in get_args(annotation))
    if origin in (Union, types.UnionType):
        parts = [type_name(a) for a in get_args(annotation) if a is not type(None)]
        optional = len(parts) < len(get_args(annotation))
        return " | ".join(parts) + (" | null" if optional else "")
    if origin is list:
        return f"list of {type_name(get_args(annotation)[0])}"
    if origin is dict:
        key, value = get_args(annotation)
        return f"map of {type_name(key)} to {type_name(value)}"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "|".join(str(m.value) for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    if isinstance(annotation, type):
        return {"str": "text", "int": "integer", "float": "number", "bool": "true|false"}.get(
            annotation.__name__, annotation.__name__
        )
    return str(annotation).replace("typing.", "")


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
        if isinstance(value, BaseModel):
            return ""
        return repr(value)
    if field.default is PydanticUndefined:
        return "(required)"
    value = field.default
    return str(value.value if isinstance(value, Enum) else value)


def settings(model: type[BaseModel] = Config, prefix: str = "") -> list[Setting]:
    """Every leaf setting of ``model`` (sections recurse; ``agents.<name>.tools`` for named entries)."""
    found: list[Setting] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        meaning = (field.description or "").strip()
        inner, by_name = _model_in(field.annotation)
        if inner is not None:
            if by_name or meaning:
                found.append(Setting(key, type_name(field.annotation), _default(field), meaning))
            found.extend(settings(inner, f"{key}.{NAME}." if by_name else f"{key}."))
            continue
        found.append(Setting(key, type_name(field.annotation), _default(field), meaning))
    return found


def _patterns() -> list[list[str]]:
    return [s.key.split(".") for s in settings()]


def names_a_setting(key: str) -> bool:
    """``llm.api_key_env`` or ``agents.scout.tools`` names a setting (or a section holding some)."""
    parts = key.split(".")
    if parts[0] == "tool_config":  # a tool's own settings: each tool validates its map with its own model
        return True
    return any(
        len(parts) <= len(pattern) and all(p in (NAME, k) for p, k in zip(pattern, parts, strict=False))
        for pattern in _patterns()
    )
