from __future__ import annotations

from pathlib import Path

from toolrig.adapters.markdown import catalog
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


def test_the_readme_links_the_catalog() -> None:
    assert "docs/tools.md" in (ROOT / "README.md").read_text(encoding="utf-8")
