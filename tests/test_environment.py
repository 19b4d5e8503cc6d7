"""Every environment variable src/ reads by name is in the one table of docs/environment.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "environment.md"
_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id in ("environ", "environment")
    )


def variables_read_in_src() -> dict[str, str]:
    """Constant names passed to os.environ.get/[]/setdefault/os.getenv, and env-var option defaults."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "src" / "toolrig").rglob("*.py")):
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[ast.AST] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                if (attr in ("get", "setdefault", "pop") and _is_environ(node.func.value)) or attr == "getenv":
                    names = node.args[:1]
                elif attr == "option" and any(
                    isinstance(a, ast.Constant) and str(a.value).endswith("-env") for a in node.args
                ):
                    names = [k.value for k in node.keywords if k.arg == "default"]
            elif isinstance(node, ast.Subscript) and _is_environ(node.value):
                names = [node.slice]
            for name in names:
                if isinstance(name, ast.Constant) and isinstance(name.value, str) and _NAME.match(name.value):
                    found.setdefault(name.value, where)
            # tables of variable names looked up at the call (DEFAULT_KEY_ENV, BASE_URL_ENV)
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id.endswith("_ENV") for t in targets):
                    for value in node.value.values:
                        if isinstance(value, ast.Constant) and isinstance(value.value, str):
                            found.setdefault(value.value, where)
    return found


def test_every_variable_toolrig_reads_is_in_the_environment_table() -> None:
    documented = set(re.findall(r"^\| `([A-Z0-9_]+)`(?:, `([A-Z0-9_]+)`)?", TABLE.read_text(), flags=re.M))
    names = {n for pair in documented for n in pair if n}
    read = variables_read_in_src()
    assert {"TOOLRIG_HOME", "TOOLRIG_NO_CGROUP", "TOOLRIG_MCP_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"} <= set(
        read
    )
    assert {name: where for name, where in read.items() if name not in names} == {}
    assert names - set(read) == set()  # and the table lists nothing toolrig no longer reads


def test_the_readme_points_at_the_table() -> None:
    assert "docs/environment.md" in (ROOT / "README.md").read_text(encoding="utf-8")
