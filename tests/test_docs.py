from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from toolrig.adapters.markdown import catalog
from toolrig.config import Config
from toolrig.registry import Registry

ROOT = Path(__file__).resolve().parent.parent


def test_the_tool_catalog_in_docs_matches_the_registry() -> None:
    expected = catalog(Registry.default(entry_points=False))
    current = (ROOT / "docs/tools.md").read_text(encoding="utf-8")
    assert current == expected, "docs/tools.md is out of date: run `toolrig tools docs > docs/tools.md`"


def test_every_builtin_tool_is_documented_with_its_parameters() -> None:
    text = (ROOT / "docs/tools.md").read_text(encoding="utf-8")
    for item in Registry.default(entry_points=False).list():
        assert f"### `{item.name}`" in text
        for name in item.input_schema()["properties"]:
            assert f"| `{name}` |" in text


def test_the_readme_links_the_catalog_and_the_policy() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/tools.md" in readme and "(docs/policy.md)" in readme


@pytest.mark.parametrize("doc", ["README.md", "docs/policy.md"])
def test_every_config_example_in_the_docs_is_valid_config(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        Config.model_validate(yaml.safe_load(block))


@pytest.mark.parametrize("doc", ["README.md", "docs/local-models.md"])
def test_the_tool_counts_the_docs_give_are_the_catalogs(doc: str) -> None:
    from toolrig.agent.toolset import shown_tools

    tools = Registry.default(entry_points=False).list()
    core = shown_tools(tools, "core", model="any")
    text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
    assert re.findall(r"the (\d+) core tools", text) == [str(len(core))]
    assert re.findall(r"all (\d+) tools", text) == [str(len(tools))]


def test_every_test_file_the_docs_name_exists() -> None:
    # performance.md's history names files where they were then; tools.md is generated from descriptions.
    skipped = ("performance.md", "tools.md")
    docs = [ROOT / "README.md", *(p for p in (ROOT / "docs").glob("*.md") if p.name not in skipped)]
    named = {(d.name, m) for d in docs for m in re.findall(r"\btests/[\w/]+\.py", d.read_text(encoding="utf-8"))}
    assert sorted(item for item in named if not (ROOT / item[1]).is_file()) == []
