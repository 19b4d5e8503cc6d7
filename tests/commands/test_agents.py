from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.agent.subagents.test_types import REVIEWER, write
from toolrig.cli import app
from toolrig.commands.agents import _one_line
from toolrig.config import set_trust


def test_agents_list_and_show_print_where_each_type_came_from(workspace: Path) -> None:
    set_trust(workspace)
    write(workspace / ".claude" / "agents", "reviewer.md", REVIEWER)
    runner = CliRunner()
    listed = runner.invoke(app, ["agents", "list", "--root", str(workspace)])
    assert listed.exit_code == 0, listed.output
    assert "reviewer" in listed.output and "project" in listed.output and "reviewer.md" in listed.output
    shown = runner.invoke(app, ["agents", "show", "reviewer", "--root", str(workspace)])
    assert shown.exit_code == 0 and "You review code." in shown.output and "run_command" in shown.output
    missing = runner.invoke(app, ["agents", "show", "nobody", "--root", str(workspace)])
    assert missing.exit_code == 1 and "no agent type" in missing.output


def test_agents_list_and_show_name_the_organism_listener_and_a_broken_file_is_a_config_error(
    workspace: Path,
) -> None:
    from tests.agent.subagents.test_organism import ORGANISM

    set_trust(workspace)
    (workspace / "organism.yaml").write_text(ORGANISM, encoding="utf-8")
    runner = CliRunner()
    listed = runner.invoke(app, ["agents", "list", "--root", str(workspace)])
    assert listed.exit_code == 0, listed.output
    [line] = [x for x in listed.output.splitlines() if x.startswith("writer ")]
    assert "organism" in line and "organism.yaml (listeners[2])" in line
    shown = runner.invoke(app, ["agents", "show", "researcher", "--root", str(workspace)])
    assert (
        shown.exit_code == 0 and "data/research/**" in shown.output and "You are a research assistant." in shown.output
    )
    (workspace / "organism.yaml").write_text("listeners:\n  - {name: a, max_turns: 0}\n", encoding="utf-8")
    broken = runner.invoke(app, ["agents", "list", "--root", str(workspace)])
    assert broken.exit_code == 2 and "organism.yaml: listeners[0].max_turns:" in broken.stderr
    assert "Traceback" not in broken.output


def test_agents_list_cuts_a_long_description_between_words_and_says_so(workspace: Path, toolrig_home: Path) -> None:
    words = "Reviews pull requests for security problems and explains every finding with a fix"
    (toolrig_home / "config.yaml").write_text(f"agents:\n  reviewer:\n    description: {words} and more words.\n")
    listed = CliRunner().invoke(app, ["agents", "list", "--root", str(workspace)])
    line = next(row for row in listed.output.splitlines() if row.startswith("reviewer"))
    shown = line.split("config", 1)[1].split("  (", 1)[0].strip()
    assert shown.endswith("…") and words.startswith(shown[:-1]) and words[len(shown) - 1] == " ", shown


@given(st.text(max_size=200), st.integers(min_value=2, max_value=100))
def test_one_line_fits_breaks_between_words_and_prints_no_control_characters(text: str, width: int) -> None:
    out = _one_line(text, width)
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    assert len(out) <= width and all(c.isprintable() for c in out)
    if out == flat:
        return
    body = out.removesuffix("…")
    assert out.endswith("…") and flat.startswith(body)
    if " " in flat[: width - 1]:  # a word boundary to cut at: never inside a word
        assert flat[len(body)] in " .:;,(", (flat, out)
