from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolrig.cli import app


def run(*args: str, root: Path | None = None) -> tuple[int, str, str]:
    runner = CliRunner()
    full = list(args) + (["--root", str(root)] if root is not None else [])
    result = runner.invoke(app, full, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_call_prints_the_result_json_and_exits_zero(workspace: Path) -> None:
    code, out, _ = run("call", "calculate", "--json", '{"expression": "sqrt(16) + pi"}', root=workspace)
    assert code == 0
    assert json.loads(out) == {"is_error": False, "output": {"result": 7.141592653589793}}


def test_call_exits_one_on_a_tool_error_with_the_same_message_as_the_llm_path(workspace: Path) -> None:
    from toolrig import Rig

    code, out, _ = run("call", "calculate", "--json", '{"expression": 5}', root=workspace)
    assert code == 1
    via_cli = json.loads(out)
    via_python = Rig(workspace).call_sync("calculate", {"expression": 5}).model_dump(mode="json")
    assert via_cli == via_python and via_cli["error_type"] == "invalid_input"


def test_call_exits_two_on_bad_usage(workspace: Path) -> None:
    assert run("call", "calculate", "--json", "{nope", root=workspace)[0] == 2
    assert run("call", "calculate", "--json", "[1]", root=workspace)[0] == 2
    code, _, err = run("call", "no_such_tool", root=workspace)
    assert code == 2 and "no tool named 'no_such_tool'" in err
    assert run("call")[0] == 2


def test_a_bad_config_file_exits_two_naming_file_and_line(workspace: Path) -> None:
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("tools:\n  alow: []\n")
    code, _, err = run("call", "calculate", "--json", '{"expression": "1"}', root=workspace)
    assert code == 2 and "config.yaml:2: tools.alow: unknown setting" in err


def test_generated_subcommand_takes_required_scalars_as_positionals(workspace: Path) -> None:
    code, out, _ = run("calculator", "calculate", "2 ** 10", root=workspace)
    assert code == 0 and json.loads(out)["output"]["result"] == 1024


def test_generated_subcommand_reports_validation_in_the_llm_words(workspace: Path) -> None:
    code, out, _ = run("outputs", "read_output", "out_0000000000000000", "--limit", "lots", root=workspace)
    assert code == 1
    message = json.loads(out)["message"]
    assert "'limit': Input should be a valid integer" in message


def test_help_is_built_from_the_descriptions() -> None:
    code, out, _ = run("calculator", "calculate", "--help")
    assert code == 0
    assert "Evaluate an arithmetic expression" in out and "EXPRESSION" in out and "read-only" in out
    code, out, _ = run("--help")
    assert code == 0 and "calculator" in out and "call" in out


def test_tools_list_and_schema(workspace: Path) -> None:
    code, out, _ = run("tools", "list", "--json", root=workspace)
    assert code == 0
    listed = {t["name"]: t for t in json.loads(out)}
    assert listed["calculate"]["group"] == "calculator" and listed["calculate"]["read_only"]
    _, out, _ = run("tools", "list", "--group", "calculator", root=workspace)
    assert out.split()[0] == "calculate"
    code, out, _ = run("tools", "schema", "calculate", "--format", "openai", root=workspace)
    assert json.loads(out)["function"]["strict"] is True
    code, out, _ = run("tools", "schema", "calculate", "--format", "anthropic", root=workspace)
    assert json.loads(out)["input_schema"]["required"] == ["expression"]
    assert run("tools", "schema", "nope", root=workspace)[0] == 2


def test_denied_tools_disappear_from_the_cli(workspace: Path) -> None:
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("tools:\n  deny: [calculate]\n")
    _, out, _ = run("tools", "list", "--json", root=workspace)
    assert "calculate" not in {t["name"] for t in json.loads(out)}
    assert run("call", "calculate", "--json", '{"expression": "1"}', root=workspace)[0] == 2
    assert run("calculator", "calculate", "1", root=workspace)[0] == 2


def test_trust_adds_lists_and_removes(workspace: Path) -> None:
    assert run("trust", str(workspace))[0] == 0
    assert str(workspace.resolve()) in run("trust", "--list")[1]
    assert run("trust", str(workspace), "--remove")[0] == 0
    assert str(workspace.resolve()) not in run("trust", "--list")[1]


def test_the_installed_console_script_works_end_to_end(workspace: Path) -> None:
    exe = shutil.which("toolrig", path=str(Path(sys.executable).parent))
    assert exe, "the toolrig console script is not installed next to this Python"
    env = {**os.environ, "TOOLRIG_HOME": str(workspace / "home")}
    out = subprocess.run(
        [exe, "call", "calculate", "--json", '{"expression":"sqrt(16) + pi"}', "--root", str(workspace)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "7.141592653589793" in out.stdout
    module = subprocess.run(
        [sys.executable, "-m", "toolrig", "calculator", "calculate", "1/0", "--root", str(workspace)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert module.returncode == 1 and "Division by zero" in module.stdout


def test_help_does_not_import_provider_sdks_or_tool_modules() -> None:
    code = (
        "import sys, runpy\n"
        "sys.argv = ['toolrig', '--help']\n"
        "try:\n    runpy.run_module('toolrig', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('anthropic', 'openai', 'mcp', 'httpx2', 'pydantic')"
        " or m.startswith('toolrig.tools.')]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "HEAVY []" in out.stderr, out.stderr


def calculate_then(workspace: Path, probe: str) -> subprocess.CompletedProcess[str]:
    """``toolrig call calculate`` in a fresh interpreter, then ``probe`` run in it to look at what it loaded."""
    argv = ["toolrig", "call", "calculate", "--json", '{"expression": "6 * 7"}', "--root", str(workspace)]
    code = (
        "import sys, runpy\n"
        f"sys.argv = {argv!r}\n"
        "try:\n    runpy.run_module('toolrig', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
    ) + probe
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_call_imports_only_the_called_tools_module_and_no_provider_sdk(workspace: Path) -> None:
    out = calculate_then(
        workspace,
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'openai', 'mcp')"
        " or (m.startswith('toolrig.tools.') and m != 'toolrig.tools._index'))\n"
        "print('LOADED', loaded, file=sys.stderr)\n",
    )
    assert '"result": 42' in out.stdout, out
    assert "LOADED ['toolrig.tools.calculator']" in out.stderr, out.stderr


# What a call that needs none of them must not load: the YAML parser (no config file), the network guard and
# HTTP (calculate reaches no network), the skill parser, the profiles' face tables (no pattern names a face),
# the event kinds (calculate emits none), the shell parser (no command subject), difflib (no unmatched name).
NOT_ON_A_PLAIN_CALL = (
    "yaml", "httpx2", "toolrig.sandbox.http", "toolrig.sandbox.network", "toolrig.skills.skill",
    "toolrig.skills.discovery", "toolrig.catalog.capabilities", "toolrig.profiles.claude",
    "toolrig.profiles.codebuff", "toolrig.profiles.native", "toolrig.profiles.camelagi", "toolrig.events",
    "toolrig.sandbox.shell_syntax", "difflib",
)  # fmt: skip


def test_a_call_without_a_config_file_validates_no_config_model_and_skips_what_it_does_not_use(
    workspace: Path,
) -> None:
    out = calculate_then(
        workspace,
        "from toolrig.config import Section\n"
        "built = sorted(m.__name__ for m in Section.__subclasses__() if m.__pydantic_complete__)\n"
        f"loaded = sorted(m for m in {NOT_ON_A_PLAIN_CALL!r} if m in sys.modules)\n"
        "print('BUILT', built, 'LOADED', loaded, file=sys.stderr)\n",
    )
    assert '"result": 42' in out.stdout, out
    assert "BUILT [] LOADED []" in out.stderr, out.stderr


def test_a_config_error_still_names_file_key_and_line_in_a_fresh_interpreter(
    workspace: Path, toolrig_home: Path
) -> None:
    # The config models build on their first validation now (defer_build): the message must not change.
    (toolrig_home / "config.yaml").write_text("output:\n  max_chars: 50000\ntools:\n  denny: [calculate]\n")
    argv = [sys.executable, "-m", "toolrig", "call", "calculate", "--json", '{"expression": "6 * 7"}']
    out = subprocess.run([*argv, "--root", str(workspace)], capture_output=True, text=True, check=False)
    assert out.returncode == 2, out
    assert f"{toolrig_home / 'config.yaml'}:4: tools.denny: unknown setting" in out.stderr, out.stderr


def test_a_call_with_a_config_file_applies_it_in_a_fresh_interpreter(workspace: Path, toolrig_home: Path) -> None:
    (toolrig_home / "config.yaml").write_text("tools:\n  deny: [calculate]\n")
    argv = [sys.executable, "-m", "toolrig", "call", "calculate", "--json", '{"expression": "6 * 7"}']
    out = subprocess.run([*argv, "--root", str(workspace)], capture_output=True, text=True, check=False)
    assert out.returncode != 0 and '"result": 42' not in out.stdout, out


@pytest.mark.parametrize("args", [["--version"], ["tools", "--help"]])
def test_other_entry_points_answer(args: list[str]) -> None:
    assert run(*args)[0] == 0


def test_tools_list_and_call_take_an_agent(workspace: Path, toolrig_home: Path) -> None:
    (toolrig_home / "config.yaml").write_text("agents:\n  math:\n    tools: [calculate]\n")
    code, out, _ = run("tools", "list", "--agent", "math", root=workspace)
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ["calculate"]
    code, out, _ = run("call", "read_output", "--json", '{"handle": "x"}', "--agent", "math", root=workspace)
    assert code == 1 and "not available to agent 'math'" in json.loads(out)["message"]
    code, _, err = run("call", "calculate", "--json", '{"expression": "1"}', "--agent", "maths", root=workspace)
    assert code == 2 and "no agent named 'maths'" in err


def test_help_lists_the_governance_commands() -> None:
    code, out, _ = run("--help")
    assert code == 0 and "audit" in out and "policy" in out
    code, out, _ = run("call", "--help")
    assert "--agent NAME" in out and "approvals.fallback" in out


def test_an_ignored_workspace_setting_is_warned_about_once(workspace: Path) -> None:
    (workspace / ".toolrig").mkdir()
    (workspace / ".toolrig/config.yaml").write_text("workspace:\n  extra_paths: [/]\n")
    env = {**os.environ, "TOOLRIG_HOME": str(workspace / "home")}
    argv = [sys.executable, "-m", "toolrig", "call", "calculate", "--json", '{"expression": "1"}']
    out = subprocess.run([*argv, "--root", str(workspace)], capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0
    assert out.stderr.count("workspace.extra_paths") == 1
    assert out.stderr.startswith("toolrig: warning: ")


def test_tools_list_with_an_unknown_group_exits_two_naming_the_groups(workspace: Path) -> None:
    code, out, err = run("tools", "list", "--group", "nope", root=workspace)
    assert code == 2 and out == ""
    assert "no tool group named 'nope'" in err and "calculator" in err and "files" in err


def test_tools_list_is_one_line_per_tool_each_the_first_sentence_cut_at_a_word(workspace: Path) -> None:
    from toolrig.rig import Rig

    _, out, _ = run("tools", "list", root=workspace)
    lines = out.splitlines()
    with Rig(workspace) as rig:
        assert len(lines) == len(rig.tools())  # each capability once: Agent/Task are spawn_agents
    assert all(len(line) <= 110 for line in lines)
    by_name = {line.split()[0]: line for line in lines}
    assert "e.g" not in by_name["librarian_query"] or "e.g." in by_name["librarian_query"]
    assert not by_name["librarian_query"].rstrip().endswith("e.g")


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("Run a query, e.g. 'x'. More.", 80, "Run a query, e.g. 'x'"),
        ("Apply a patch:\n*** Begin Patch\n...", 80, "Apply a patch: *** Begin Patch"),
        ("One two three four five six", 14, "One two three…"),
        ("Short", 80, "Short"),
    ],
)
def test_first_sentence_ends_at_a_full_stop_not_an_abbreviation_and_cuts_at_a_word(
    text: str, width: int, expected: str
) -> None:
    from toolrig.adapters.plain import first_sentence

    assert first_sentence(text, width) == expected


def test_generated_subcommands_take_the_first_required_input_as_the_one_positional(workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    code, out, _ = run("search", "glob", "*.py", root=workspace)  # a string-or-list input: one value is the string
    assert code == 0 and json.loads(out)["output"]["files"] == ["a.py"]
    code, out, _ = run("edit", "write_file", "b.txt", "--content", "hi", root=workspace)
    assert code == 0 and (workspace / "b.txt").read_text() == "hi"
    _, out, _ = run("edit", "write_file", "--help")
    assert "write_file [OPTIONS] PATH\n" in out and "--content" in out


def test_help_of_a_json_option_shows_the_shape_it_wants() -> None:
    _, out, _ = run("files", "list_directory", "--help")
    assert '[{"path": "...", "recursive": false}]' in " ".join(out.split()).replace('" ', '"')


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("--bogus",), 2, "No such option '--bogus'"),  # click's usage error
        (("tasks", "list", "--limit", "x"), 2, "Invalid value for '--limit'"),
        (("cron", "remove", "j-nope"), 1, "No job"),  # a ClickException from a command
        (("cron", "add", "x", "sometimes", "p"), 2, "'sometimes' is not a schedule"),
    ],
)
def test_every_error_is_spelled_toolrig_error_whoever_raised_it(
    workspace: Path, args: tuple[str, ...], code: int, message: str
) -> None:
    result = CliRunner().invoke(app, [*args, *(["--root", str(workspace)] if args[0] != "--bogus" else [])])
    assert result.exit_code == code, result.output
    errors = [line for line in result.stderr.splitlines() if "rror:" in line]
    assert len(errors) == 1 and errors[0].startswith(f"toolrig: error: {message}"), result.stderr


def test_no_command_writes_an_error_or_warning_prefix_of_its_own() -> None:
    # The one spelling is `toolrig: error:` / `toolrig: warning:` (click's own errors are respelled by Root).
    src = Path(__file__).resolve().parent.parent / "src" / "toolrig"
    own = [
        f"{path.name}: {match}"
        for path in [src / "cli.py", *sorted((src / "commands").glob("*.py"))]
        for match in re.findall(r"""echo\(f?["'](?!toolrig: )((?:error|warning|Error|Warning):)""", path.read_text())
    ]
    assert own == []
