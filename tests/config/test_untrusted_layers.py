"""An untrusted workspace's config never makes the user's valid config fail (hostile review N4).

The class: narrowing an untrusted layer produced a value (the ``!nothing`` sentinel) that later validation
rejected as the user's own error. For every ``Narrow`` rule, an untrusted layer that sets the fields carrying
that rule is merged over valid trusted layers: the Rig must build, and every warning must name the
workspace's file, never the user's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from toolrig import Rig
from toolrig.config import ALLOW_NOTHING, Config, load_config
from toolrig.config.sections import AgentConfig
from toolrig.errors import ConfigError
from toolrig.narrowing import Narrow
from toolrig.registry import Registry

# Valid user files: every name in them names a real tool, so any warning can only come from the workspace.
TRUSTED_LAYERS: dict[str, dict[str, Any]] = {
    "none": {},
    "agents": {
        "agents": {"rep": {"tools": ["read_files", "calculate"], "rate_limit": "100/hour"}},
        "tools": {"allow": ["read_files", "calculate", "write_file"], "deny": ["run_command"]},
        "approvals": {"mode": "smart"},
        "rate_limits": {"calculate": "10/minute"},
        "llm": {"max_turns": 30, "max_budget_usd": 2.0},
    },
    "globs": {
        "agents": {"rep": {"tools": ["read_*"], "approvals": {"mode": "always"}}},
        "tool_config": {"run_command": {"allow": ["git *"], "deny": ["rm *"]}, "fetch_url": {"max_bytes": 1000}},
        "tools": {"allow": ["group:files", "calc*"]},
        "workspace": {"deny_globs": [".env"], "read_only": False},
    },
}

NAMES = st.sampled_from(
    ["*", "read_files", "write_file", "calculate", "read_*", "group:files", "Bash", "nosuch", "group:nosuch", "x?"]
)
RATES = st.sampled_from(["1/second", "5/minute", "100/hour", "1000/day", "50/10m"])


def _value_for(rule: Narrow, name: str, field_type: Any) -> st.SearchStrategy[Any]:
    """Values of the type a field with ``rule`` holds, in and out of what the user allows."""
    if rule in (Narrow.INTERSECT, Narrow.UNION):
        return st.lists(NAMES, max_size=4)
    if rule is Narrow.SUBSET:
        return st.none() | st.lists(NAMES, max_size=4)
    if rule is Narrow.GLOBS:
        return st.lists(st.sampled_from(["*.env", "!.env", "secret/", "!keep/*", "build"]), max_size=3)
    if rule is Narrow.RESTRICTIVE:
        verdicts = st.sampled_from(["allow", "ask", "deny"])
        rule_dict = st.fixed_dictionaries({"tool": NAMES, "verdict": verdicts})
        return st.lists(rule_dict, max_size=3)
    if rule is Narrow.STRICTER:
        levels = [a for a in _flat_args(field_type) if isinstance(a, str)]
        return st.sampled_from(levels)
    if rule is Narrow.RATE:
        return st.none() | RATES
    if rule is Narrow.RATES:
        return st.dictionaries(NAMES, RATES, max_size=3)
    if rule is Narrow.MIN:
        numbers = st.integers(min_value=1, max_value=10**6)
        return numbers if int in _flat_args(field_type) else numbers.map(float) | st.none()
    return st.booleans()  # TRUE_WINS


def _flat_args(tp: Any) -> list[Any]:
    args = get_args(tp)
    if not args:
        return [tp]
    return [leaf for arg in args for leaf in _flat_args(arg)]


def _fields(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Narrow, Any]]:
    """Every field of ``model`` (nested sections and an agent's fields too) with its rule and type."""
    for name, info in model.model_fields.items():
        rule = next((m for m in info.metadata if isinstance(m, Narrow)), None)
        factory = info.default_factory
        if rule is not None:
            yield (*prefix, name), rule, info.annotation
        elif isinstance(factory, type) and issubclass(factory, BaseModel):
            yield from _fields(factory, (*prefix, name))
    if model is Config:
        for agent in ("rep", "new"):  # one the user configured, one only the workspace names
            yield from _fields(AgentConfig, ("agents", agent))
        for tool in Registry.default(entry_points=False).list():  # a tool's settings narrow by the same rules
            if tool.config_model is not None:
                yield from _fields(tool.config_model, ("tool_config", tool.name))


def _layer(rule: Narrow) -> st.SearchStrategy[dict[str, Any]]:
    fields = [(path, field_type) for path, r, field_type in _fields(Config) if r is rule]
    assert fields, rule
    chosen = st.lists(st.sampled_from(fields), min_size=1, max_size=4, unique_by=lambda f: f[0])
    return chosen.flatmap(
        lambda picked: st.tuples(*(_value_for(rule, p[-1], t).map(lambda v, p=p: (p, v)) for p, t in picked))
    ).map(_nest)


def _nest(pairs: tuple[tuple[tuple[str, ...], Any], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, value in pairs:
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def _check(trusted: dict[str, Any], untrusted: dict[str, Any], home: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        user_file = home / "config.yaml"
        user_file.write_text(yaml.safe_dump(trusted))
        ws_file = root / ".toolrig" / "config.yaml"
        ws_file.parent.mkdir()
        ws_file.write_text(yaml.safe_dump(untrusted))
        try:
            Config.model_validate(untrusted)
        except ValueError:
            return  # a malformed workspace file is its own error, named by file and line (test_config.py)
        loaded = load_config(root)
        with Rig(root, config=loaded) as rig:  # builds: nothing in the workspace's file stops it
            problems = [str(w) for w in rig.warnings if w.file != ws_file] + [
                w for w in loaded.warnings if not w.startswith(str(ws_file))
            ]
            assert problems == [], (untrusted, problems)


@pytest.mark.parametrize("trusted", list(TRUSTED_LAYERS), ids=list(TRUSTED_LAYERS))
@pytest.mark.parametrize("rule", list(Narrow), ids=[r.name for r in Narrow])
def test_an_untrusted_layer_never_makes_the_users_valid_config_fail(
    rule: Narrow, trusted: str, toolrig_home: Path
) -> None:
    @settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(untrusted=_layer(rule))
    def run(untrusted: dict[str, Any]) -> None:
        _check(TRUSTED_LAYERS[trusted], untrusted, toolrig_home)

    run()


def test_a_workspace_agent_naming_the_users_agent_narrows_it_by_glob_not_by_spelling(
    toolrig_home: Path, workspace: Path
) -> None:
    # The review's r04: the user's agent may read files; the repository says it may use '*'.
    (toolrig_home / "config.yaml").write_text("agents:\n  rep:\n    tools: [read_files]\n")
    ws_file = workspace / ".toolrig" / "config.yaml"
    ws_file.parent.mkdir()
    ws_file.write_text("agents:\n  rep:\n    tools: ['*']\n")
    with Rig(workspace, agent="rep") as rig:
        assert [t.name for t in rig.tools()] == ["read_files"]
    ws_file.write_text("agents:\n  rep:\n    tools: [write_file]\n")  # shares nothing: nothing, and it says so
    loaded = load_config(workspace)
    assert loaded.config.agents["rep"].tools == [ALLOW_NOTHING]
    assert loaded.warnings[0].startswith(f"{ws_file}:3: 'agents.rep.tools'"), loaded.warnings
    with Rig(workspace, agent="rep") as rig:
        assert rig.tools() == []


def test_a_workspace_list_of_names_under_the_users_glob_keeps_those_names(toolrig_home: Path, workspace: Path) -> None:
    (toolrig_home / "config.yaml").write_text("tools:\n  allow: ['read_*', calculate]\n")
    ws_file = workspace / ".toolrig" / "config.yaml"
    ws_file.parent.mkdir()
    ws_file.write_text("tools:\n  allow: [read_files, write_file]\n")
    assert load_config(workspace).config.tools.allow == ["read_files"]


def test_what_the_untrusted_workspace_names_wrongly_is_a_warning_on_its_line_not_an_error(
    toolrig_home: Path, workspace: Path
) -> None:
    (toolrig_home / "config.yaml").write_text("agents:\n  rep:\n    tools: [read_files]\n")
    ws_file = workspace / ".toolrig" / "config.yaml"
    ws_file.parent.mkdir()
    ws_file.write_text("agents:\n  new:\n    tools: [nosuch]\n    tool_config:\n      nosuch: {a: 1}\n")
    with Rig(workspace) as rig:
        text = "\n".join(rig.loaded.warnings)
    assert f"{ws_file}:3: agents.new.tools[0]: no tool is named 'nosuch'" in text
    assert f"{ws_file}:5: agents.new.tool_config.nosuch: no tool has this name" in text


def test_strict_mode_makes_the_users_typos_errors_not_the_untrusted_workspaces(
    toolrig_home: Path, workspace: Path
) -> None:
    ws_file = workspace / ".toolrig" / "config.yaml"
    ws_file.parent.mkdir()
    ws_file.write_text("tools:\n  deny: [Bsh]\n")
    with Rig(workspace, strict=True) as rig:
        assert [(w.file, w.line) for w in rig.warnings] == [(ws_file, 2)]
    (toolrig_home / "config.yaml").write_text("tools:\n  deny: [Bsh]\n")
    ws_file.unlink()
    with pytest.raises(ConfigError, match="strict mode"):
        Rig(workspace, strict=True)
