"""Command-line subcommands generated from tool definitions, never written by hand per tool.

The first required input that is a scalar (or a list of scalars, or either) becomes the one positional,
so every tool reads the same way (``toolrig search glob '**/*.py'``, ``toolrig files read_file PATH``); every
other input is an ``--option`` (lists repeatable, booleans as ``--flag/--no-flag``, nested values as JSON,
with an example of the JSON shape in ``--help``). Values are passed on as text: the executor validates them,
so a mistake reads the same on the command line as it does to a model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from toolrig.content import describe
from toolrig.registry import AnyTool
from toolrig.result import ToolResult
from toolrig.schema import json_kinds, resolve_ref

SCALARS = frozenset({"string", "integer", "number", "boolean", "null"})


@dataclass(frozen=True)
class ParamPlan:
    field: str
    kind: str  # "positional", "variadic", "option", "multiple", "flag", "json"
    required: bool
    help: str
    metavar: str = "TEXT"  # what --help shows the value as: INTEGER, NUMBER, TEXT, JSON


def _metavar(kinds: set[str]) -> str:
    """The label of a scalar value by its JSON Schema kinds (an ``int`` field read ``TEXT`` before)."""
    if kinds == {"integer"}:
        return "INTEGER"
    if kinds <= {"integer", "number"}:
        return "NUMBER"
    return "TEXT" if kinds == {"string"} else "VALUE"


def _kinds(node: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    return json_kinds(node, defs) or {"any"}


def _help_text(node: dict[str, Any], defs: dict[str, Any]) -> str:
    node = resolve_ref(node, defs)
    parts = [node.get("description", "")]
    enum = node.get("enum") or next((s.get("enum") for s in node.get("anyOf", []) if "enum" in s), None)
    if enum:
        parts.append("One of: " + ", ".join(str(v) for v in enum) + ".")
    if "default" in node and node["default"] not in (None, [], {}):
        parts.append(f"Default: {json.dumps(node['default'])}.")
    return " ".join(p for p in parts if p).strip()


def example_value(node: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> Any:
    """A small value of the shape ``node`` wants, for ``--help`` (``[{"path": "src", "recursive": false}]``)."""
    node = resolve_ref(node, defs)
    if "default" in node and node["default"] not in (None, [], {}):
        return node["default"]
    if node.get("enum"):
        return node["enum"][0]
    for option in node.get("anyOf", []):
        if json_kinds(option, defs) - {"null"}:
            return example_value(option, defs, depth)
    kinds = json_kinds(node, defs) - {"null"}
    if "object" in kinds and depth < 3:
        props = node.get("properties", {})
        required = set(node.get("required", []))
        shown = [n for n in props if n in required]
        shown += [n for n in props if n not in required and "default" in props[n]][: max(0, 3 - len(shown))]
        return {name: example_value(props[name], defs, depth + 1) for name in props if name in shown}
    if "array" in kinds and depth < 3:
        return [example_value(node.get("items", {}), defs, depth + 1)]
    if "boolean" in kinds:
        return False
    if "integer" in kinds or "number" in kinds:
        return 1
    if "string" in kinds:
        return "..."
    return {}


def plan_params(schema: dict[str, Any]) -> list[ParamPlan]:
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    plans: list[ParamPlan] = []
    positional_taken = False
    for name, node in schema.get("properties", {}).items():
        kinds = _kinds(node, defs) - {"null"}
        is_required = name in required
        help_text = _help_text(node, defs)
        item_kinds: set[str] = set()
        if "array" in kinds:
            items = resolve_ref(resolve_ref(node, defs).get("items", {}), defs)
            for option in resolve_ref(node, defs).get("anyOf", []):
                if "array" in _kinds(option, defs):
                    items = resolve_ref(option.get("items", {}), defs)
            item_kinds = _kinds(items, defs) - {"null"}
        scalar_items = "array" in kinds and item_kinds <= SCALARS
        takes_positional = is_required and not positional_taken and kinds != {"boolean"}
        if kinds and kinds <= SCALARS:
            if kinds == {"boolean"}:
                plans.append(ParamPlan(name, "flag", is_required, help_text))
            else:
                kind = "positional" if takes_positional else "option"
                plans.append(ParamPlan(name, kind, is_required, help_text, _metavar(kinds)))
                positional_taken = positional_taken or takes_positional
            continue
        if scalar_items and kinds - {"array"} <= SCALARS:
            either = bool(kinds - {"array"})  # a string or a list of strings: one value passes as the scalar
            if takes_positional:
                plans.append(ParamPlan(name, "variadic_or_one" if either else "variadic", True, help_text))
                positional_taken = True
            else:
                kind = "multiple_or_one" if either else "multiple"
                plans.append(ParamPlan(name, kind, is_required, help_text, _metavar(item_kinds | (kinds - {"array"}))))
            continue
        shape = json.dumps(example_value(node, defs))
        plans.append(ParamPlan(name, "json", is_required, f"{help_text} JSON, like: {shape}".strip(), "JSON"))
    return plans


def _option_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def build_params(plans: list[ParamPlan]) -> list[click.Parameter]:
    params: list[click.Parameter] = []
    for plan in plans:
        if plan.kind == "positional":
            params.append(click.Argument([plan.field], required=True))
        elif plan.kind in ("variadic", "variadic_or_one"):
            params.append(click.Argument([plan.field], nargs=-1, required=True))
        elif plan.kind == "flag":
            flag = _option_name(plan.field)
            params.append(
                click.Option(
                    [f"{flag}/--no-{flag[2:]}", plan.field], default=None, required=plan.required, help=plan.help
                )
            )
        elif plan.kind in ("multiple", "multiple_or_one"):
            params.append(
                click.Option(
                    [_option_name(plan.field), plan.field],
                    multiple=True,
                    required=plan.required,
                    metavar=plan.metavar,
                    help=(plan.help + " Repeat for several.").strip(),
                )
            )
        else:
            params.append(
                click.Option(
                    [_option_name(plan.field), plan.field], required=plan.required, metavar=plan.metavar, help=plan.help
                )
            )
    return params


def collect_args(plans: list[ParamPlan], values: dict[str, Any]) -> dict[str, Any]:
    """Turn parsed command-line values into tool arguments, leaving out what was not given."""
    args: dict[str, Any] = {}
    for plan in plans:
        value = values.get(plan.field)
        many = plan.kind in ("multiple", "variadic", "multiple_or_one", "variadic_or_one")
        if value is None or (many and not value):
            continue
        if plan.kind.endswith("_or_one"):
            args[plan.field] = value[0] if len(value) == 1 else list(value)
        elif many:
            args[plan.field] = list(value)
        elif plan.kind == "json":
            try:
                args[plan.field] = json.loads(value)
            except json.JSONDecodeError:
                args[plan.field] = value  # validation explains it, in the same words a model would read
        else:
            args[plan.field] = value
    return args


def positional_help(plans: list[ParamPlan]) -> str:
    shown = [p for p in plans if p.kind.startswith(("positional", "variadic")) and p.help]
    lines = [f"  {p.field.upper()}  {p.help}" for p in shown]
    return ("\b\nArguments:\n" + "\n".join(lines)) if lines else ""


def tool_command(
    tool: AnyTool, run: Callable[[AnyTool, dict[str, Any], dict[str, Any]], None], common: list[click.Parameter]
) -> click.Command:
    """A click command for one tool; ``run(tool, args, common_values)`` does the call and the exit code."""
    plans = plan_params(tool.input_schema())
    field_names = {p.field for p in plans}

    def callback(**values: Any) -> None:
        args = collect_args(plans, values)
        common_values = {k: v for k, v in values.items() if k not in field_names}
        run(tool, args, common_values)

    flags = [label for label, on in (("read-only", tool.read_only), ("terminal", tool.terminal)) if on]
    from toolrig.adapters.plain import first_sentence

    short = first_sentence(tool.description, 70)
    short += "" if short.endswith("…") else "."
    return click.Command(
        tool.name,
        callback=callback,
        params=[*build_params(plans), *common],
        help=tool.description,
        short_help=short,
        epilog=(positional_help(plans) + (f"\n\nFlags: {', '.join(flags)}." if flags else "")).strip() or None,
    )


def content_summary(result: ToolResult) -> list[str]:
    """One line per content part, for stderr: stdout keeps the contract JSON that scripts parse."""
    return [f"[attached {describe(part)}]" for part in result.content]
