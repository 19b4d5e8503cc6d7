"""`toolrig tools list/schema --profile` and `toolrig call --profile`: the CLI speaks every profile's names."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from toolrig.cli import app


def run(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv), catch_exceptions=False)
    return result.exit_code, result.output


def test_tools_list_under_a_profile_shows_its_names(workspace: Path) -> None:
    code, out = run("tools", "list", "--profile", "claude", "--json", "--root", str(workspace))
    assert code == 0
    names = {t["name"] for t in json.loads(out)}
    assert {"Read", "Write", "Edit", "Bash", "Grep", "Glob"} <= names and "run_command" not in names


def test_tools_schema_under_a_profile_prints_the_faces_schema(workspace: Path) -> None:
    code, out = run("tools", "schema", "Grep", "--profile", "claude", "--format", "anthropic", "--root", str(workspace))
    assert code == 0
    schema = json.loads(out)
    assert schema["name"] == "Grep" and "-i" in schema["input_schema"]["properties"]
    code, out = run("tools", "schema", "Grep", "--root", str(workspace))
    assert code == 2 and "no tool named 'Grep'" in out


def test_an_unknown_profile_is_a_usage_error(workspace: Path) -> None:
    code, out = run("tools", "list", "--profile", "cursor", "--root", str(workspace))
    assert code == 2 and "claude" in out


def test_call_under_a_profile_maps_arguments_and_result(workspace: Path) -> None:
    (workspace / "x.txt").write_text("1\n2\n", encoding="utf-8")
    argv = ["call", "read_file", "--profile", "native", "--json", '{"path": "x.txt"}', "--root", str(workspace)]
    code, out = run(*argv)
    assert code == 0
    assert json.loads(out)["output"]["data"]["content"] == "1\n2\n"
