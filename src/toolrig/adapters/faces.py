"""A profile applied: the tools a consumer sees under a profile's names, and its calls and results translated.

Trust model: a face call's arguments are the model's, as hostile as any; translating them only renames and
converts, and whatever cannot be converted is passed on as it came so that the executor's validation
refuses it (and the audit records it) under the tool's own name. Nothing here runs a tool.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from toolrig.definition import Tool
from toolrig.errors import ErrorType, ToolError
from toolrig.executor import Executor
from toolrig.profiles import PREFERRED, Face, Profile, Shaped, capability_of
from toolrig.registry import AnyTool
from toolrig.result import ToolResult
from toolrig.schema import json_kinds, schema_checker


class FaceTool(Tool[BaseModel, BaseModel]):
    """A toolrig tool as a profile shows it: the face's name, description and schema, the tool's flags.

    Adapters render it like any tool (Anthropic, OpenAI, MCP, JSON); it is never registered or executed:
    calls of it go through ``translate`` to the tool it stands for.
    """

    def __init__(self, face: Face, tool: AnyTool) -> None:
        self.face = face
        self.canonical = tool
        self.name = face.name
        self.description = face.description
        self.group = tool.group
        self.input_model = tool.input_model
        self.output_model = tool.output_model
        for flag in ("read_only", "destructive", "open_world", "terminal", "sequential"):
            setattr(self, flag, getattr(tool, flag))

    def input_schema(self) -> dict[str, Any]:
        return self.face.input_schema()

    def output_schema(self) -> dict[str, Any] | None:
        return None  # the face's results follow the foreign system's shape, which toolrig does not publish


def faced(tools: Iterable[AnyTool], profile: Profile, *, once: bool = True) -> list[AnyTool]:
    """The tools as ``profile`` shows them: each capability once, under its face or its own name.

    A tool that no face stands for is left out when the profile has no ``extras``, or when its own name is
    taken by a face (codebuff's ``write_file`` is toolrig's, reshaped). ``once=False``: every face (the
    docs list the names a model may call, not only those it is shown).
    """
    tools = list(tools)
    if profile.is_identity:
        return once_per_capability(tools, profile) if once else tools
    out: list[AnyTool] = []
    face_names = {face.name for face in profile.faces}
    for tool in tools:
        faces = profile.faces_of(tool.name)
        if faces:
            out.extend(FaceTool(face, tool) for face in faces)
        elif profile.extras and tool.name not in face_names:
            out.append(tool)
    return once_per_capability(out, profile) if once else out


def shown_capability(tool: AnyTool) -> str:
    """The capability a shown tool offers: a face's tool's, else the tool's own (``Task`` is spawn_agents)."""
    return capability_of(tool.canonical.name if isinstance(tool, FaceTool) else tool.name)


def once_per_capability(tools: list[AnyTool], profile: Profile) -> list[AnyTool]:
    """``tools`` with each capability offered once: two names for one thing cost tokens and split the choice.

    Which name stays: the profile's preferred one (Claude's ``Agent``), else the capability's own tool, else the
    first face (Claude's ``Read`` over ``NotebookRead``). The others stay callable: a run and ``Rig.call``
    still find them by name; only the list a model is shown loses them.
    """
    preferred = PREFERRED.get(profile.name, ())
    groups: dict[str, list[AnyTool]] = {}
    for tool in tools:
        groups.setdefault(shown_capability(tool), []).append(tool)
    keep: set[int] = set()
    for capability, group in groups.items():
        chosen = next((t for t in group if t.name in preferred), None)
        chosen = chosen or next((t for t in group if t.name == capability), None) or group[0]
        keep.add(id(chosen))
    return [t for t in tools if id(t) in keep]


@dataclass(slots=True)
class Translated:
    """A call in toolrig's terms: the tool's name and arguments, the face it came through, notes to add."""

    name: str
    args: Any
    face: Face | None = None
    face_args: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # where the face's own arguments break its schema


def translate(profile: Profile, name: str, args: Any, tool: AnyTool | None) -> Translated:
    """A call of ``name`` under ``profile`` as a call of the toolrig tool (``tool``: that tool, if known)."""
    face = profile.face(name)
    if face is None:
        return Translated(name, args)
    parsed = args
    if isinstance(args, str | bytes):
        try:
            parsed = json.loads(args) if args.strip() else {}
        except ValueError:
            return Translated(face.tool, args, face)  # the executor explains the bad JSON
    if parsed is None:
        parsed = {}
    if not isinstance(parsed, dict):
        return Translated(face.tool, args, face)
    # OpenAI strict mode sends every optional parameter, null when unused: null means "not given" here.
    parsed = {key: value for key, value in parsed.items() if value is not None}
    problems = _problems(face, parsed)
    if problems:
        # Nothing is translated from arguments the face itself refuses (Read's file_path as a list would read
        # one file of several); the executor still sees, refuses and audits the call.
        return Translated(face.tool, {"_invalid_arguments": parsed}, face, dict(parsed), problems=problems)
    notes: list[str] = []
    converted = face.args_in(dict(parsed), notes)
    if tool is not None:
        schema = tool.input_schema()
        converted = _fit(converted, schema)
        converted = _unsupported(converted, schema, face, notes)
        known = schema.get("properties", {})
        for key, value in face.tool_defaults.items():
            if key in known and key not in converted:
                converted[key] = value
    return Translated(face.tool, converted, face, dict(parsed), notes)


_CHECKERS: dict[int, tuple[Face, Any]] = {}


def _unhonourable(error: Any) -> bool:
    """A missing argument, or a list or object where one value goes: nothing a face's reading can honour."""
    container = isinstance(error.instance, list | dict)
    return bool(error.validator == "required" or (error.validator == "type" and container))


def _problems(face: Face, args: dict[str, Any]) -> list[str]:
    """Where the face's arguments break its own schema in a way no translation can honour.

    A missing required argument, or a list or object where the face takes one value (Read's ``file_path``
    as a list would read the first file of several). Scalars of the wrong type are left to the face's
    lenient reading (``"120000"`` for a number) and to the tool's own validation.
    """
    cached = _CHECKERS.get(id(face))
    if cached is None or cached[0] is not face:
        schema = {k: v for k, v in face.schema.items() if k != "additionalProperties"}
        cached = _CHECKERS[id(face)] = (face, schema_checker(schema, _unhonourable))
    return cached[1](args)[:10] if cached[1] is not None else []


def _unsupported(args: dict[str, Any], schema: dict[str, Any], face: Face, notes: list[str]) -> dict[str, Any]:
    """Drop, with a note, the face's documented parameters the tool does not take (yet): Read's ``pages``.

    Only the face's own parameters: anything else the model sent goes on and the executor refuses it, so a
    misspelt argument is an error, never silently lost.
    """
    known = schema.get("properties", {})
    documented = face.schema.get("properties", {})
    if schema.get("additionalProperties", True) is not False:
        return args
    for key in [k for k in args if k not in known and k in documented]:
        args.pop(key)
        notes.append(f"'{key}' is not supported by toolrig's {face.tool} yet; it was not used")
    return args


def _fit(args: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Join a list of strings into one command-line string where the tool takes a string (ripgrep flags)."""
    properties = schema.get("properties", {})
    defs = schema.get("$defs", {})
    for key, value in list(args.items()):
        node = properties.get(key)
        if isinstance(value, list) and isinstance(node, dict) and all(isinstance(v, str) for v in value):
            kinds = json_kinds(node, defs)
            if kinds and "array" not in kinds and "string" in kinds:
                args[key] = shlex.join(value)
    return args


def speak(profile: Profile, result: ToolResult) -> ToolResult:
    """An error's hint in the profile's names: "call one of: read_files, run_command" names Read and Bash."""
    hint = result.next_action_hint
    if profile.is_identity or not result.is_error or not hint:
        return result

    def name(match: re.Match[str]) -> str:
        faces = profile.faces_of(match.group(0))
        return "/".join(face.name for face in faces) if faces else match.group(0)

    spoken = re.sub(r"\b[a-z][a-z0-9_]*\b", name, hint)
    return result if spoken == hint else result.model_copy(update={"next_action_hint": spoken})


def shape_result(call: Translated, result: ToolResult) -> ToolResult:
    """The tool's result in the face's shape; errors keep toolrig's contract, with the notes of translation."""
    notes = [*call.notes, *result.notes]
    if call.face is not None and result.is_error and result.error_type == ErrorType.INVALID_INPUT:
        # The executor named the tool's own parameters; the model called the face, so name the face's too.
        params = ", ".join(f"'{p}'" for p in call.face.schema.get("properties", {}))
        hint = f"Fix the arguments and call {call.face.name} again. Its parameters are: {params}."
        update: dict[str, Any] = {"notes": [*notes, f"{call.face.name} stands for toolrig's {call.name}"]}
        if call.problems:
            count = f"{len(call.problems)} invalid argument" + ("s" if len(call.problems) > 1 else "")
            update["message"] = f"{count} of {call.face.name}:\n" + "\n".join(call.problems)
        return result.model_copy(update={**update, "next_action_hint": hint})
    if call.face is None or call.face.result_out is None or result.is_error:
        return result.model_copy(update={"notes": notes}) if call.notes else result
    shaped = Shaped(result.output or {}, call.face_args, call.args if isinstance(call.args, dict) else {})
    shaped.duration_ms = result.meta.duration_ms
    try:
        output = call.face.result_out(shaped)
    except ToolError as err:
        return ToolResult.from_error(err, notes=notes, meta=result.meta)
    return result.model_copy(update={"output": output, "notes": notes})


async def call_speaking(executor: Executor, profile: Profile, name: str, args: Any, **options: Any) -> ToolResult:
    """One call made in ``profile``'s names: the face translated to its tool, the result shaped back.

    The one place a profile's call is translated, for ``Rig.call`` and the agent loop alike; the executor
    records both names (``called_as``).
    """
    face = None if profile.is_identity else profile.face(name)
    if face is None:
        result = await executor.invoke(name, args, **options)
        return result if profile.is_identity else speak(profile, result)
    tool = executor.registry.find(face.tool)
    translated = translate(profile, name, args, tool)
    if face.settings_in is not None and tool is not None and isinstance(translated.args, dict):
        scope = options.get("scope")
        agent = options.get("agent") or getattr(scope, "agent", None)
        agent = agent or options.get("agent_id") or getattr(scope, "agent_id", None)
        translated.args = face.settings_in(translated.args, executor.tool_config(tool, agent), translated.notes)
    result = await executor.invoke(translated.name, translated.args, called_as=name, **options)
    return speak(profile, shape_result(translated, result))
