"""ToolResult: the one value every call path returns, whatever happened inside the tool.

Its JSON form is the contract with models and programs, so it is exactly
``{"is_error": false, "output": {...}}`` or
``{"is_error": true, "error_type": ..., "message": ..., "next_action_hint": ...}``,
plus ``notes`` only when the executor has something to tell (repaired arguments, a cut output).
Bookkeeping for programs (duration, the full-output handle) rides along but is never serialised, and so do
``content`` parts (images, audio, embedded resources: ``toolrig.content``), which each adapter converts for
its consumer next to the JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, SkipValidation, model_serializer

from toolrig.content import ContentPart
from toolrig.errors import ErrorType, ToolError, default_hint, default_retryable


@dataclass(slots=True)
class ResultMeta:
    """What programs (audit, CLI, MCP) want to know about a call, and models do not; filled by the executor."""

    tool: str = ""
    call_id: str = ""
    duration_ms: float = 0.0
    output_bytes: int = 0  # UTF-8 size of the output's JSON before any cut
    full_output_handle: str | None = None


class ToolResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    is_error: bool
    output: dict[str, Any] | None = None
    error_type: ErrorType | None = None
    message: str | None = None
    next_action_hint: str | None = None
    notes: list[str] = Field(default_factory=list)
    retryable: bool = Field(default=False, exclude=True)
    meta: SkipValidation[ResultMeta] = Field(default_factory=ResultMeta, exclude=True)
    content: list[ContentPart] = Field(default_factory=list, exclude=True)

    @model_serializer(mode="wrap")
    def _contract_shape(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.is_error:
            data.pop("output", None)
        else:
            for key in ("error_type", "message", "next_action_hint"):
                data.pop(key, None)
        if not self.notes:
            data.pop("notes", None)
        return data

    @classmethod
    def ok(
        cls,
        output: dict[str, Any],
        *,
        notes: list[str] | None = None,
        meta: ResultMeta | None = None,
        content: list[ContentPart] | None = None,
    ) -> ToolResult:
        return cls(is_error=False, output=output, notes=notes or [], meta=meta or ResultMeta(), content=content or [])

    @classmethod
    def ok_checked_already(
        cls, output: dict[str, Any], notes: list[str], meta: ResultMeta, content: list[ContentPart]
    ) -> ToolResult:
        """``ok`` for the executor, whose output is already a validated model's JSON dump: not validated again.

        Validating that dict a second time (and the notes and content parts, built by the executor) was a
        tenth of a trivial call's cost. The instance is what ``ok`` would build: same fields, same fields set.
        """
        return ok_checked(output, notes, meta, content)

    @classmethod
    def error(
        cls,
        error_type: ErrorType | str,
        message: str,
        next_action_hint: str | None = None,
        *,
        retryable: bool | None = None,
        notes: list[str] | None = None,
        meta: ResultMeta | None = None,
    ) -> ToolResult:
        kind = ErrorType(error_type)
        if retryable is None:
            retryable = default_retryable(kind)
        return cls(
            is_error=True,
            error_type=kind,
            message=message,
            next_action_hint=next_action_hint or default_hint(kind),
            retryable=retryable,
            notes=notes or [],
            meta=meta or ResultMeta(),
        )

    @classmethod
    def from_error(
        cls, err: ToolError, *, notes: list[str] | None = None, meta: ResultMeta | None = None
    ) -> ToolResult:
        return cls.error(
            err.error_type, err.message, err.next_action_hint, retryable=err.retryable, notes=notes, meta=meta
        )

    def to_json(self, *, indent: int | None = None) -> str:
        """The text a model or a terminal sees: the contract JSON, compact unless indented, unicode kept readable."""
        separators = (",", ":") if indent is None else None
        data = self.model_dump(mode="json")
        try:
            return json.dumps(data, ensure_ascii=False, indent=indent, separators=separators)
        except ValueError:
            # An integer past Python's 4,300-digit str() limit: pydantic's serializer writes it whole.
            from pydantic_core import to_json

            return to_json(data, indent=indent).decode()

    def raise_for_error(self) -> dict[str, Any]:
        """Return the output, or raise the ToolError this result carries (handy in plain tests)."""
        if self.is_error:
            raise ToolError(
                self.error_type or ErrorType.INTERNAL,
                self.message or "",
                self.next_action_hint,
                retryable=self.retryable,
            )
        return self.output or {}


def ok_checked(output: dict[str, Any], notes: list[str], meta: ResultMeta, content: list[ContentPart]) -> ToolResult:
    """``ToolResult.ok_checked_already`` as a plain function: the executor's, without a classmethod's binding.

    The instance is what ``ok`` would build: same fields in the same order, the same fields set. It is filled
    through BaseModel's slot descriptors (the model is frozen, so its ``__setattr__`` would refuse), from a
    copy of a template dict (0.1 µs less than writing the nine keys out, and 0.1 µs less again for the shared
    set of fields).
    """
    result: ToolResult = _new(ToolResult)  # BaseModel has no __new__ of its own
    fields = _OK_TEMPLATE.copy()
    fields["output"] = output
    fields["notes"] = notes
    fields["meta"] = meta
    fields["content"] = content
    _set_dict(result, fields)
    # One set for every such result: a frozen model never changes its own, and ``model_copy`` changes a copy.
    _set_fields_set(result, _OK_FIELDS_SET)
    _set_extra(result, None)
    _set_private(result, None)
    return result


_new = object.__new__
_OK_TEMPLATE: dict[str, Any] = {
    "is_error": False,
    "output": None,
    "error_type": None,
    "message": None,
    "next_action_hint": None,
    "notes": None,
    "retryable": False,
    "meta": None,
    "content": None,
}
_OK_FIELDS_SET = {"is_error", "output", "notes", "meta", "content"}
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
