from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.sample_tools import Echo, Refuse, SyncEcho
from toolrig.definition import Tool
from toolrig.errors import DefinitionError
from toolrig.registry import Registry, UnknownToolError


def test_add_get_and_list_by_group() -> None:
    registry = Registry([Echo(), Refuse()])
    assert registry.get("echo").name == "echo"
    assert [t.name for t in registry.list("sample")] == ["echo", "refuse"]
    assert "refuse" in registry and "nope" not in registry


def test_names_are_unique_in_a_registry() -> None:
    registry = Registry([Echo()])
    with pytest.raises(DefinitionError, match="taken twice"):
        registry.add(Echo())


def test_adding_a_class_instead_of_an_instance_is_explained() -> None:
    with pytest.raises(DefinitionError, match="instantiate"):
        Registry().add(Echo)  # type: ignore[arg-type]


def test_unknown_names_raise_with_a_suggestion() -> None:
    with pytest.raises(UnknownToolError, match="no tool named 'echoo'"):
        Registry([Echo()]).get("echoo")


@pytest.mark.parametrize(
    ("allow", "deny", "expected"),
    [
        ([], [], ["echo", "refuse", "sync_echo"]),
        (["echo"], [], ["echo"]),
        (["*echo"], [], ["echo", "sync_echo"]),
        ([], ["refuse"], ["echo", "sync_echo"]),
        (["echo", "refuse"], ["refuse"], ["echo"]),  # deny wins over allow
        (["group:sample"], ["sync_*"], ["echo", "refuse"]),
        (["group:other"], [], []),
    ],
)
def test_select_allows_then_denies_and_deny_wins(allow: list[str], deny: list[str], expected: list[str]) -> None:
    registry = Registry([Echo(), Refuse(), SyncEcho()])
    assert registry.select(allow, deny).names() == expected


def test_builtin_groups_are_known_without_importing_tool_modules() -> None:
    code = textwrap.dedent(
        """
        import sys
        from toolrig.registry import Registry, builtin_group_names
        registry = Registry.default(entry_points=False)
        assert "calculator" in builtin_group_names()
        assert not any(m.startswith("toolrig.tools.") for m in sys.modules), sorted(sys.modules)
        registry.get("calculate")
        assert "toolrig.tools.calculator" in sys.modules
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == "ok", out.stderr


def test_builtin_tools_must_live_in_the_module_of_their_group() -> None:
    registry = Registry.default(entry_points=False)
    for item in registry.list():
        assert type(item).__module__ == f"toolrig.tools.{item.group}", item.name


def test_third_party_tools_load_from_the_entry_point_group(tmp_path: Path) -> None:
    """A real distribution on sys.path, found through importlib.metadata like any installed plugin."""
    package = tmp_path / "rig_plugin_demo.py"
    package.write_text(
        textwrap.dedent(
            """
            from toolrig import Tool, ToolInput, ToolOutput

            class In(ToolInput):
                word: str

            class Out(ToolOutput):
                word: str

            class Reverse(Tool[In, Out]):
                name = "reverse_word"
                group = "wordplay"
                description = "Reverse a word."

                def execute(self, input, ctx):
                    return Out(word=input.word[::-1])

            TOOLS = [Reverse()]
            """
        )
    )
    dist = tmp_path / "rig_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rig-plugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[toolrig.tools]\nwordplay = rig_plugin_demo\n")
    code = textwrap.dedent(
        """
        from toolrig import Rig
        import tempfile
        rig = Rig(tempfile.mkdtemp())
        print(rig.call_sync("reverse_word", {"word": "stressed"}).output["word"])
        """
    )
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "TOOLRIG_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert out.stdout.strip() == "desserts", out.stderr


def test_a_broken_plugin_is_logged_and_does_not_take_the_catalog_down(tmp_path: Path) -> None:
    (tmp_path / "broken_plugin_demo.py").write_text("raise ImportError('plugin is broken')\n")
    dist = tmp_path / "broken_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[toolrig.tools]\nbroken = broken_plugin_demo\n")
    code = "from toolrig.registry import Registry; print(Registry.default().names())"
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert "calculate" in out.stdout
    assert "could not load tool plugin 'broken'" in out.stderr


def test_tool_base_class_is_generic_over_pydantic_models() -> None:
    assert Tool.__parameters__  # type: ignore[attr-defined]


class Displayed(Echo):
    name = "srv__echo"
    display_name = "srv/echo"


def test_a_tool_is_found_by_its_display_name_too() -> None:
    registry = Registry([Displayed(), Echo()])
    assert registry.get("srv/echo") is registry.get("srv__echo")
    assert registry.find("srv/nope") is None


@pytest.mark.parametrize(
    ("allow", "deny", "expected"),
    [
        ([], ["srv/*"], ["echo"]),
        ([], ["srv/echo"], ["echo"]),
        (["srv/*"], [], ["srv__echo"]),
        ([], ["srv__*"], ["echo"]),
        ([], ["*/echo"], ["echo"]),
    ],
)
def test_allow_and_deny_match_display_names(allow: list[str], deny: list[str], expected: list[str]) -> None:
    assert Registry([Displayed(), Echo()]).select(allow, deny).names() == expected


def test_the_builtin_index_names_every_builtin_tool_and_its_group() -> None:
    from toolrig.registry import builtin_index
    from toolrig.tools import _index

    hint = "regenerate: python -c 'import toolrig.registry as r; r.write_builtin_index()'"
    assert builtin_index() == _index.GROUP_OF, hint


def test_finding_a_builtin_tool_loads_its_group_only() -> None:
    registry = Registry.default(entry_points=False)
    assert registry.find("calculate") is not None
    assert registry._pending and "builtin:calculator" not in registry._pending
    assert {t.group for t in registry._tools.values()} == {"calculator"}


def test_a_selection_stays_lazy_and_still_narrows() -> None:
    chosen = Registry.default(entry_points=False).select(deny=["calculate"])
    assert chosen._pending  # nothing imported by the selection itself
    assert chosen.find("calculate") is None
    assert chosen.find("run_command") is not None
    assert "calculate" not in chosen.names() and "glob" in chosen.names()


def test_every_entry_point_form_loads_and_a_clashing_name_is_skipped_not_fatal(tmp_path: Path) -> None:
    """docs/plugins.md's table, one distribution made in a temp dir: nothing is installed."""
    (tmp_path / "forms_plugin_demo.py").write_text(
        textwrap.dedent(
            """
            from toolrig import Tool, ToolInput, ToolOutput

            class In(ToolInput):
                word: str

            class Out(ToolOutput):
                word: str

            def made(name):
                class Made(Tool[In, Out]):
                    group = "forms"
                    description = "Echo a word."

                    def execute(self, input, ctx):
                        return Out(word=f"{self.name}:{input.word}")

                Made.name = name
                return Made

            AsClass = made("as_class")
            as_instance = made("as_instance")()
            as_list = [made("in_list")()]

            def as_function():
                return [made("from_function")()]

            clash = made("calculate")()  # a built-in's name: skipped, the built-in stays
            TOOLS = [made("from_module")()]
            """
        )
    )
    dist = tmp_path / "forms_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: forms-plugin-demo\nVersion: 1.0\n")
    points = {
        "clash": "forms_plugin_demo:clash",  # first, so that only the ordering rule can keep the built-in
        "module": "forms_plugin_demo",
        "cls": "forms_plugin_demo:AsClass",
        "instance": "forms_plugin_demo:as_instance",
        "list": "forms_plugin_demo:as_list",
        "function": "forms_plugin_demo:as_function",
    }
    (dist / "entry_points.txt").write_text("[toolrig.tools]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    code = textwrap.dedent(
        """
        import tempfile
        from toolrig import Rig
        rig = Rig(tempfile.mkdtemp())
        print(sorted(t.name for t in rig.tools() if t.group == "forms"))
        print(rig.call_sync("calculate", {"expression": "1 + 1"}).output)
        print(rig.call_sync("from_function", {"word": "w"}).output)
        """
    )
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "TOOLRIG_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    lines = out.stdout.splitlines()
    assert lines == [
        "['as_class', 'as_instance', 'from_function', 'from_module', 'in_list']",
        "{'result': 2}",
        "{'word': 'from_function:w'}",
    ], out.stderr
    assert "a tool plugin was skipped: tool name 'calculate' is taken twice" in out.stderr
