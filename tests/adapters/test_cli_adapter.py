"""Generated subcommands for a tool with every kind of input: positionals, options, lists, flags, JSON."""

from __future__ import annotations

from typing import Any

import click
from click.testing import CliRunner
from pydantic import BaseModel, Field

from toolrig import Tool, ToolContext, ToolInput, ToolOutput
from toolrig.adapters.cli import plan_params, tool_command


class Where(BaseModel):
    column: str
    value: int


class QueryIn(ToolInput):
    table: str = Field(description="Table to read.")
    limit: int = Field(default=10, description="Most rows.")
    columns: list[str] = Field(default_factory=list, description="Columns to return.")
    distinct: bool = Field(default=False, description="Drop duplicate rows.")
    where: Where | None = Field(default=None, description="A filter.")
    mode: str = "fast"


class QueryOut(ToolOutput):
    ok: bool


class Query(Tool[QueryIn, QueryOut]):
    name = "query"
    group = "sample"
    description = "Query a table. Returns rows."

    def execute(self, input: QueryIn, ctx: ToolContext) -> QueryOut:
        return QueryOut(ok=True)


class PathsIn(ToolInput):
    paths: list[str] = Field(description="Files to read.")
    verbose: bool = False


class Paths(Tool[PathsIn, QueryOut]):
    name = "paths"
    group = "sample"
    description = "Takes paths."

    def execute(self, input: PathsIn, ctx: ToolContext) -> QueryOut:
        return QueryOut(ok=True)


def invoke(tool: Tool[Any, Any], argv: list[str]) -> tuple[int, dict[str, Any], str]:
    captured: dict[str, Any] = {}

    def run(item: Tool[Any, Any], args: dict[str, Any], common: dict[str, Any]) -> None:
        captured.update(args)

    command = tool_command(tool, run, [])
    result = CliRunner().invoke(command, argv, catch_exceptions=False)
    return result.exit_code, captured, result.output


def test_plan_puts_required_scalars_first_as_positionals_and_the_rest_as_options() -> None:
    kinds = {p.field: p.kind for p in plan_params(Query().input_schema())}
    assert kinds == {
        "table": "positional",
        "limit": "option",
        "columns": "multiple",
        "distinct": "flag",
        "where": "json",
        "mode": "option",
    }


def test_options_lists_flags_and_json_become_tool_arguments() -> None:
    code, args, _ = invoke(
        Query(),
        ["users", "--limit", "5", "--columns", "id", "--columns", "name", "--distinct", "--where",
         '{"column": "age", "value": 3}'],
    )  # fmt: skip
    assert code == 0
    assert args == {
        "table": "users",
        "limit": "5",  # passed as text: the executor validates it, as it would for a model
        "columns": ["id", "name"],
        "distinct": True,
        "where": {"column": "age", "value": 3},
    }


def test_omitted_options_are_left_out_so_the_tool_defaults_apply() -> None:
    code, args, _ = invoke(Query(), ["users", "--no-distinct"])
    assert code == 0 and args == {"table": "users", "distinct": False}


def test_json_that_does_not_parse_is_passed_on_for_validation_to_explain() -> None:
    _, args, _ = invoke(Query(), ["users", "--where", "{oops"])
    assert args["where"] == "{oops"


def test_a_single_required_list_becomes_a_variadic_positional() -> None:
    code, args, _ = invoke(Paths(), ["a.py", "b.py", "--verbose"])
    assert code == 0 and args == {"paths": ["a.py", "b.py"], "verbose": True}
    code, _, output = invoke(Paths(), [])
    assert code == 2 and "Missing argument" in output


def test_help_shows_descriptions_defaults_and_positional_text() -> None:
    command = tool_command(Query(), lambda *a: None, [])
    text = command.get_help(click.Context(command))
    assert "Query a table. Returns rows." in text
    assert "Most rows. Default: 10." in text
    assert "Repeat for several." in text
    assert "TABLE  Table to read." in text
    assert "--distinct / --no-distinct" in text


class KindsIn(ToolInput):
    name: str
    count: int = 1
    ratio: float = 0.5
    either: int | float = 1
    loose: int | str = 1
    ids: list[int] = Field(default_factory=list)


class Kinds(Tool[KindsIn, QueryOut]):
    name = "kinds"
    group = "sample"
    description = "Takes values of each kind."

    def execute(self, input: KindsIn, ctx: ToolContext) -> QueryOut:
        return QueryOut(ok=True)


def test_an_option_is_labelled_by_its_kind_not_always_text() -> None:
    labels = {p.field: p.metavar for p in plan_params(Kinds().input_schema())}
    assert labels == {
        "name": "TEXT",
        "count": "INTEGER",
        "ratio": "NUMBER",
        "either": "NUMBER",
        "loose": "VALUE",
        "ids": "INTEGER",
    }
    command = tool_command(Kinds(), lambda *a: None, [])
    text = command.get_help(click.Context(command))
    assert "--count INTEGER" in text and "--ratio NUMBER" in text and "--ids INTEGER" in text
    assert "--where" not in text and "--limit" not in text
    query = tool_command(Query(), lambda *a: None, [])
    assert "--where JSON" in query.get_help(click.Context(query))
