"""One tool's calls, worked out: what calling it takes (its plan) and its output made into a ``ToolResult``.

The plan is made on the tool's first call; the output is checked against its model, made JSON-safe and
fitted to the output cap.

Stages 1 and 4's per-tool halves of ``toolrig.executor``: facts about the tool, never about a caller.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from toolrig.arguments import repair_plan
from toolrig.definition import ToolOutput
from toolrig.errors import ErrorType, ToolError
from toolrig.function_tool import FunctionTool
from toolrig.registry import AnyTool
from toolrig.result import ResultMeta, ToolResult, ok_checked
from toolrig.shaping import escape_surrogates, fit

log = logging.getLogger("toolrig.executor")


@dataclass(slots=True)
class ToolPlan:
    """What calling one tool takes, worked out on its first call rather than on every call.

    Only facts about the tool itself live here (its models, whether its arguments can need repair, whether
    it can see a cancellation token): the gates are not planned, they run on every call, so a gate, hook or
    audit sink configured at any time is never skipped.
    """

    tool: AnyTool
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    validate: Callable[[Any], BaseModel]  # the input model's validator (``model_validate`` without its wrapper)
    dump: Callable[..., Any]  # the output model's serializer, to JSON-able Python
    repairs: bool  # some field could be repaired (a JSON string for an object, a lone item for a list, a null)
    # A token is made and bound only for a tool that could observe it: one that reads its context
    # (``ctx.cancel``), or one that runs across more than one step, where a timeout or the caller's
    # cancellation can arrive while it runs (``check_cancelled()`` in a worker thread or after an await).
    needs_token: bool
    has_subjects: bool  # the tool reads subjects from its input (a ``Subject`` mark, or its own ``subjects``)
    attaches: bool  # the output model can carry content parts (a ``ToolOutput``)
    # A ``@tool`` function the executor calls itself, on the validated input's fields, without ``execute``'s
    # wrapper (``FunctionTool.calls_fn_directly``); its value is wrapped by ``FunctionTool.wrap``.
    direct: FunctionTool | None
    # Its declared result type when a value of exactly that type is its own validated JSON form
    # (``FunctionTool.plain_result``): the output is then ``{"result": value}``, no output model built.
    plain: type | None

    @classmethod
    def of(cls, tool: AnyTool) -> ToolPlan:
        repair = repair_plan(tool.input_model)
        one_step = tool.never_suspends or not (tool.is_async or tool.blocking)
        direct = tool if isinstance(tool, FunctionTool) and tool.calls_fn_directly else None
        return cls(
            tool=tool,
            input_model=tool.input_model,
            output_model=tool.output_model,
            validate=tool.input_model.__pydantic_validator__.validate_python,
            dump=tool.output_model.__pydantic_serializer__.to_python,
            repairs=repair.needed,
            needs_token=tool.reads_context or not one_step,
            has_subjects=tool.has_subjects,
            attaches=issubclass(tool.output_model, ToolOutput),
            direct=direct,
            plain=direct.plain_result if direct is not None else None,
        )


def shape(
    plan: ToolPlan,
    output_cap: int,
    save: Callable[[str], str],
    output: BaseModel | None,
    data: dict[str, Any] | None,
    notes: list[str],
) -> ToolResult:
    """Stage 4's first half: the output checked against its model and dumped (``data`` when already so)."""
    if data is None:
        model = plan.output_model
        if type(output) is not model:
            if not isinstance(output, model):
                try:
                    output = model.model_validate(output)
                except ValidationError as exc:
                    raise RuntimeError(
                        f"returned {type(output).__name__}, not a valid {model.__name__}: {exc}"
                    ) from None
            # A subclass instance is dumped by its own serializer, as before (it may have more fields).
            data = output.__pydantic_serializer__.to_python(output, mode="json")
        else:
            data = plan.dump(output, mode="json")
    # Compact JSON as a model sees it; its UTF-8 size bounds its length in characters from above.
    try:
        raw = to_json(data)
    except PydanticSerializationError:
        # Text no UTF-8 can carry (a file name that is not UTF-8, as os.fsdecode gives it): one such name
        # must not turn a whole listing into an internal error. Anything else still fails as before.
        data = escape_surrogates(data)
        raw = to_json(data)
        notes = [*notes, r"Some text was not valid UTF-8 (a file name, say); its bytes are shown as \xNN."]
    if len(raw) > _INT_DIGITS and _LONG_DIGITS.search(raw):
        # Integers past Python's str() limit break every json.dumps downstream (CLI, MCP, providers,
        # sessions): they travel as their decimal digits in a string instead.
        data = _big_ints_as_text(data)
        notes = [*notes, "Integers longer than 4,300 digits are given as strings of their digits."]
        raw = to_json(data)
    handle = None
    if len(raw) > output_cap and len(text := raw.decode()) > output_cap:
        handle = save(text)
        data, how = fit(data, output_cap)
        notes = [
            *notes,
            f"The output was {len(text):,} characters, over the {output_cap:,} a result may hold, so {how}. "
            f"The whole output is saved: read it with read_output(handle='{handle}', offset=0).",
        ]
    content = (
        cast(ToolOutput, output).attached_content()
        if output is not None and (plan.attaches or isinstance(output, ToolOutput))
        else []
    )
    meta = ResultMeta("", "", 0.0, len(raw), handle)  # tool, call id and duration: stamped by _record
    return ok_checked(data, list(notes) if notes else [], meta, content)


_INT_DIGITS = 4_300
_LONG_DIGITS = re.compile(rb"\d{%d,}" % (_INT_DIGITS + 1))


def _big_ints_as_text(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 14_000:
        try:
            str(value)
        except ValueError:
            return to_json(value).decode()
        return value
    if isinstance(value, dict):
        return {k: _big_ints_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_big_ints_as_text(v) for v in value]
    return value


def unrecorded(name: str, call_id: str, exc: Exception) -> ToolResult:
    """The result of a call whose audit row could not be written: its output is withheld, saying why."""
    if isinstance(exc, ToolError):
        # The audit log refused on purpose (a state dir a repository planted a symlink in): say why.
        log.warning("audit sink refused call %s: %s", call_id, exc.message)
        result = ToolResult.error(
            exc.error_type,
            f"The call could not be recorded in the audit log, so its result is withheld: {exc.message}",
            exc.next_action_hint,
        )
    else:
        # "Every call, allowed or not, is one row": a call whose row cannot be written does not
        # hand its output on, so nothing it read leaves unrecorded.
        log.exception("audit sink failed for call %s", call_id, exc_info=exc)
        result = ToolResult.error(
            ErrorType.INTERNAL,
            "The call could not be recorded in the audit log, so its result is withheld.",
            "Tell the user: the audit log (.toolrig/audit.db) cannot be written.",
        )
    result.meta.tool, result.meta.call_id = name, call_id
    return result


def raw_for_record(args: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    """Arguments that could not be parsed, kept for the audit row as the text that was sent."""
    if isinstance(args, dict):
        return args
    if isinstance(args, bytes):
        args = args.decode("utf-8", "replace")
    if not isinstance(args, str):  # a Python caller's list or number: kept as its bounded repr
        try:
            args = repr(args)
        except ValueError:  # an integer past Python's 4,300-digit text limit
            args = f"<{type(args).__name__} too large to show>"
    return {"_unparsed": args[:2_000]} if args else {}
