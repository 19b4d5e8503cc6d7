from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from toolrig.config import Config
from toolrig.config_keys import names_a_setting, settings

SRC = Path(__file__).resolve().parents[1] / "src" / "toolrig"
# sections of the config, plus `agent`, a section people (and one of our messages) have wrongly assumed
_PREFIXES = sorted({*Config.model_fields, "agent"}, key=len, reverse=True)
_SETTING = re.compile(
    r"(?<![\w./-])(?:" + "|".join(map(re.escape, _PREFIXES)) + r")\.[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*"
)
# names in the same dotted shape that are not settings: the audit's `rule` for a call a hook denied
_LABELS = frozenset({"hooks.before_tool"})
_NOT_A_SETTING = re.compile(r"\.(?:py|yaml|yml|json|db|md|toml|txt|com|org|net|io)$")  # files and domains


def setting_names_in_src() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for match in _SETTING.finditer(node.value):
                    name = match.group(0)
                    module = SRC.joinpath(*name.split("."))  # ``stores.notes`` names a module, not a setting
                    if module.with_suffix(".py").exists() or module.is_dir():
                        continue
                    if not _NOT_A_SETTING.search(name) and name not in _LABELS:
                        found.setdefault(match.group(0), f"{path.relative_to(SRC)}:{node.lineno}")
    return found


def test_every_setting_a_message_or_docstring_names_exists_in_the_config_model() -> None:
    names = setting_names_in_src()
    assert len(names) > 10  # the scan sees the messages (llm.api_key_env, approvals.fallback, ...)
    unknown = {name: where for name, where in names.items() if not names_a_setting(name)}
    assert unknown == {}


@pytest.mark.parametrize(
    "key",
    [
        "llm.api_key_env",
        "approvals.mode",
        "agents.scout.tools",
        "mcp_servers.git.env",
        "stores.kv.backend",
        "tool_config.web_search.api_key_env",
        "llm",
    ],
)
def test_real_settings_resolve(key: str) -> None:
    assert names_a_setting(key)


@pytest.mark.parametrize("key", ["agent.api_key_env", "llm.api_key_envv", "approvals.modes", "stores.kv.backend.x"])
def test_misspelt_or_invented_settings_do_not_resolve(key: str) -> None:
    assert not names_a_setting(key)


def test_every_setting_has_a_type_and_every_section_field_is_listed() -> None:
    listed = {s.key: s for s in settings()}
    assert listed["llm.api_key_env"].type == "text | null"
    assert listed["approvals.mode"].default and listed["approvals.mode"].type.count("|") >= 2
    assert "agents.<name>.tools" in listed and "mcp_servers.<name>.command" in listed
