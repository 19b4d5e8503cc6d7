"""A profile: toolrig's tools under another system's names, parameters and result shapes.

A profile is data (one ``Face`` per foreign tool: its name, its JSON Schema as the other system documents
it, the toolrig tool it stands for) plus two small functions per face: arguments in (the foreign call ->
toolrig's arguments) and results out (toolrig's output -> the foreign shape). It never runs anything: the
call still goes through the one executor, policy and audit under the toolrig tool's name.

This module sits low in the layers (only ``errors`` below it) so that the registry and policy can read a
profile's names (``tools.deny: [Bash]``); what turns faces into tools and calls lives in
``toolrig.adapters.faces``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

JsonSchema = dict[str, Any]
Args = dict[str, Any]

SubjectStyle = Literal["path", "command", "blanket"]


@dataclass(slots=True)
class Shaped:
    """What a result mapper sees: the toolrig output, the face's own arguments and the call's duration."""

    output: dict[str, Any]
    args: Args
    canonical_args: Args
    duration_ms: float = 0.0


ArgsIn = Callable[[Args, list[str]], Args]
ResultOut = Callable[[Shaped], dict[str, Any]]
# The tool's arguments, its settings as the calling agent sees them (tool_config; None: it takes none), notes.
SettingsIn = Callable[[Args, Any, list[str]], Args]


def same_args(args: Args, notes: list[str]) -> Args:
    return dict(args)


@dataclass(frozen=True, slots=True)
class Face:
    """One foreign tool: ``name`` with ``schema`` (as its system documents it), standing for toolrig's ``tool``.

    ``args_in`` turns the face's arguments into the tool's (appending a note for what it had to drop);
    ``result_out`` turns the tool's output into the face's shape (None: unchanged). ``subject`` names the
    face parameter that the foreign system's allowlist patterns (``Bash:git *``, ``Edit:/src/*``) are
    matched against, and ``subject_style`` how that system matched them. ``tool_defaults`` are arguments
    of the toolrig tool the face's system implies (Claude's Write overwrites: ``on_conflict: overwrite``),
    sent only when the tool has that parameter and the call did not set it. ``settings_in`` reads the
    tool's settings for what the face's system means but toolrig's config decides (Codebuff's
    ``timeout_seconds: -1``: no limit where config allows it, else the longest limit it allows).
    """

    name: str
    tool: str
    description: str
    schema: JsonSchema
    args_in: ArgsIn = same_args
    result_out: ResultOut | None = None
    subject: str | None = None
    subject_style: SubjectStyle | None = None
    tool_defaults: Mapping[str, Any] = field(default_factory=dict)
    settings_in: SettingsIn | None = None

    def input_schema(self) -> JsonSchema:
        copied: JsonSchema = json.loads(json.dumps(self.schema))
        return copied


@dataclass(frozen=True, slots=True)
class Profile:
    """A named set of faces. ``extras``: toolrig tools no face stands for are offered under their own names."""

    name: str
    description: str
    faces: tuple[Face, ...] = ()
    extras: bool = True
    _by_name: dict[str, Face] = field(default_factory=dict, init=False, compare=False, repr=False)
    _by_tool: dict[str, tuple[Face, ...]] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        for face in self.faces:
            if face.name in self._by_name:
                raise ValueError(f"profile {self.name!r} names the face {face.name!r} twice")
            self._by_name[face.name] = face
            self._by_tool[face.tool] = (*self._by_tool.get(face.tool, ()), face)

    def face(self, name: str) -> Face | None:
        return self._by_name.get(name)

    def faces_of(self, tool: str) -> tuple[Face, ...]:
        return self._by_tool.get(tool, ())

    @property
    def is_identity(self) -> bool:
        return not self.faces


def obj(properties: Mapping[str, JsonSchema], required: tuple[str, ...] = (), **extra: Any) -> JsonSchema:
    """An object schema the way the foreign systems publish theirs: closed, required fields listed."""
    schema: JsonSchema = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    schema.update(extra)
    return schema


def string(description: str = "", **extra: Any) -> JsonSchema:
    return {"type": "string", **({"description": description} if description else {}), **extra}


def number(description: str = "", kind: str = "number", **extra: Any) -> JsonSchema:
    return {"type": kind, **({"description": description} if description else {}), **extra}


def boolean(description: str = "", **extra: Any) -> JsonSchema:
    return {"type": "boolean", **({"description": description} if description else {}), **extra}


def array(items: JsonSchema, description: str = "", **extra: Any) -> JsonSchema:
    return {"type": "array", "items": items, **({"description": description} if description else {}), **extra}


def rename(args: Args, mapping: Mapping[str, str]) -> Args:
    """The arguments with some keys renamed.

    Keys not in ``mapping`` keep their names, and fail validation under the tool's name if the tool has no
    such field: nothing the model sent is silently lost.
    """
    return {mapping.get(key, key): value for key, value in args.items()}


def drop(args: Args, notes: list[str], keys: Mapping[str, str]) -> Args:
    """Remove face-only keys, with a note saying why each one present was not used."""
    out = dict(args)
    for key, why in keys.items():
        if key in out:
            value = out.pop(key)
            if why and value not in (None, False, "", [], {}):
                notes.append(f"'{key}' was not used: {why}")
    return out


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
