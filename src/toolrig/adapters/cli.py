"""Command-line subcommands generated from tool definitions, never written by hand per tool.

Required scalar inputs become positionals, the rest ``--options`` (lists repeatable, booleans as
``--flag/--no-flag``, nested values as JSON). Values are passed on as text: the executor validates them,
so a mistake reads the same on the command line as it does to a model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from toolrig.registry import AnyTool
from toolrig.schema import json_kinds, resolve_ref

SCALARS = frozenset({"string", "integer", "number", "boolean", "null"})


@dataclass(frozen=True)
class ParamPlan:
    field: str
    kind: str  # "positional", "variadic", "option", "multiple", "flag", "json"
    required: bool
    help: str


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


def plan_params(schema: dict[str, Any]) -> list[ParamPlan]:
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    plans: list[ParamPlan] = []
    variadic_candidates = []
    for name, node in schema.get("properties", {}).items():
        kinds = _kinds(node, defs) - {"null"}
        is_required = name in required
        help_text = _help_text(node, defs)
        if kinds <= SCALARS and kinds:
            if kinds == {"boolean"}:
                plans.append(ParamPlan(name, "flag", is_required, help_text))
            else:
                plans.append(ParamPlan(name, "positional" if is_required else "option", is_required, help_text))
            continue
        if kinds == {"array"}:
            items = resolve_ref(resolve_ref(node, defs).get("items", {}), defs)
            if _kinds(items, defs) - {"null"} <= SCALARS:
                plans.append(ParamPlan(name, "multiple", is_required, help_text))
                if is_required:
                    variadic_candidates.append(len(plans) - 1)
                continue
        plans.append(ParamPlan(name, "json", is_required, (help_text + " (JSON)").strip()))
    if len(variadic_candidates) == 1:
        index = variadic_candidates[0]
        plan = plans[index]
        plans[index] = ParamPlan(plan.field, "variadic", True, plan.help)
    return plans


def _option_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def build_params(plans: list[ParamPlan]) -> list[click.Parameter]:
    params: list[click.Parameter] = []
    for plan in plans:
        if plan.kind == "positional":
            params.append(click.Argument([plan.field], required=True))
        elif plan.kind == "variadic":
            params.append(click.Argument([plan.field], nargs=-1, required=True))
        elif plan.kind == "flag":
            flag = _option_name(plan.field)
            params.append(
                click.Option(
                    [f"{flag}/--no-{flag[2:]}", plan.field], default=None, required=plan.required, help=plan.help
                )
            )
        elif plan.kind == "multiple":
            params.append(
                click.Option(
                    [_option_name(plan.field), plan.field],
                    multiple=True,
                    required=plan.required,
                    help=(plan.help + " Repeat for several.").strip(),
                )
            )
        else:
            metavar = "JSON" if plan.kind == "json" else "TEXT"
            params.append(
                click.Option(
                    [_option_name(plan.field), plan.field], required=plan.required, metavar=metavar, help=plan.help
                )
            )
    return params


def collect_args(plans: list[ParamPlan], values: dict[str, Any]) -> dict[str, Any]:
    """Turn parsed command-line values into tool arguments, leaving out what was not given."""
    args: dict[str, Any] = {}
    for plan in plans:
        value = values.get(plan.field)
        if value is None or (plan.kind in ("multiple", "variadic") and not value):
            continue
        if plan.kind in ("multiple", "variadic"):
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
    lines = [f"  {p.field.upper()}  {p.help}" for p in plans if p.kind in ("positional", "variadic") and p.help]
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
    short = tool.description.split(". ")[0].rstrip(".") + "."
    return click.Command(
        tool.name,
        callback=callback,
        params=[*build_params(plans), *common],
        help=tool.description,
        short_help=short,
        epilog=(positional_help(plans) + (f"\n\nFlags: {', '.join(flags)}." if flags else "")).strip() or None,
    )
