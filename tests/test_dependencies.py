"""Every third-party module src/ imports is declared in pyproject (dependencies or a runtime extra).

A dev dependency must never be what makes a runtime import work (issue 13: `rich` came from a dev tool, so
`toolrig chat` crashed after the README's install). .ci/run also installs `.[all]` alone in a fresh venv.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _normal(re.split(r"[\s\[<>=!~;@]", spec, maxsplit=1)[0])


def declared_runtime_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"])
    for extra, items in project["optional-dependencies"].items():
        if extra != "dev":
            specs += [s for s in items if not s.startswith("toolrig[")]
    return {_requirement_name(s) for s in specs}


@cache
def imported_top_level_modules() -> dict[str, str]:
    """Module name -> one file importing it (for the failure message)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "src" / "toolrig").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if (path.parent / f"{top}.py").exists() and top not in packages_distributions():
                    continue  # a sibling module, as a script run by its path imports it (sandbox/launcher.py)
                if top not in sys.stdlib_module_names and top not in ("toolrig", "__future__"):
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


# Modules that come with a declared distribution as part of it (same project, version-locked to it).
_PART_OF = {"pydantic_core": "pydantic", "httpcore2": "httpx2"}


def test_every_third_party_import_in_src_is_a_declared_runtime_dependency() -> None:
    declared = declared_runtime_distributions()
    distributions = packages_distributions()
    undeclared = {}
    for module, where in imported_top_level_modules().items():
        providers = {_normal(d) for d in distributions.get(module, [])}
        if _PART_OF.get(module) in declared:
            continue
        if not providers & declared:
            undeclared[module] = (where, sorted(providers))
    assert undeclared == {}, f"imported by src/, not declared in pyproject (module: file, distributions): {undeclared}"


def test_the_scan_sees_the_imports_that_matter() -> None:
    modules = imported_top_level_modules()
    assert {"rich", "click", "pydantic", "anthropic", "mcp", "jsonschema"} <= set(modules)
