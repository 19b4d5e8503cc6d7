"""An untrusted workspace's config never makes the user's valid config fail (hostile review N4).

The class: narrowing an untrusted layer produced a value (the ``!nothing`` sentinel) that later validation
rejected as the user's own error. For every ``Narrow`` rule, an untrusted layer that sets the fields carrying
that rule is merged over valid trusted layers: the Rig must build, and every warning must name the
workspace's file, never the user's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from toolrig import Rig
from toolrig.config import ALLOW_NOTHING, UNTRUSTED, Config, load_config, narrow_settings
from toolrig.config.base import per_second
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
GRANTS = st.sampled_from(["/", "/var/tmp/x", "~/.cache/pip", "~"])
RATES = st.sampled_from(["1/second", "5/minute", "100/hour", "1000/day", "50/10m"])


def _value_for(rule: Narrow, name: str, field_type: Any) -> st.SearchStrategy[Any]:
    """Values of the type a field with ``rule`` holds, in and out of what the user allows."""
    if rule is Narrow.GRANT:
        return st.lists(GRANTS, max_size=3)
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


# ------------------------------------------------------------------ an untrusted layer never widens (review F1)
#
# What each ruled field *means*, written here apart from its ``Narrow`` rule so that a rule that does not fit the
# meaning fails (F1: ``write_paths`` grants, empty = nothing, but narrowed as an allow list, empty = all). A new
# ruled field must be added here, which is the audit: say what its value admits before choosing its rule.
ADMIT = "admit"  # admits what its entries match; empty admits everything (allow lists)
ADMIT_OR_NONE = "admit_or_none"  # None admits everything, [] nothing (an agent's tools)
GRANT = "grant"  # grants what its entries name; empty grants nothing
RESTRICT = "restrict"  # refuses what its entries name (deny lists)
DENY_GLOBS = "deny_globs"  # gitignore patterns that refuse; a '!' entry would lift one
RULES = "rules"  # verdict rules: allow widens, deny/ask narrow
LEVEL = "level"  # a choice among levels, least strict first
BOUND = "bound"  # a number bounding something (None = no bound)
RATE = "rate"  # one rate limit (None = unlimited)
RATE_MAP = "rates"  # rate limits by tool glob
SWITCH_ON = "on"  # a switch that restricts when on

MEANINGS: dict[str, str] = {
    "allow": ADMIT,
    "allowed_paths": ADMIT,
    "allowed_domains": ADMIT,
    "tools": ADMIT_OR_NONE,
    "allowed_templates": ADMIT_OR_NONE,  # send_email: the templates an agent may send (None: every one)
    "write_paths": GRANT,
    "deny": RESTRICT,
    "blocked_domains": RESTRICT,
    "hidden_paths": RESTRICT,
    "deny_globs": DENY_GLOBS,
    "read_only_globs": DENY_GLOBS,
    "rules": RULES,
    "mode": LEVEL,
    "fallback": LEVEL,
    "sandbox": LEVEL,
    "network": LEVEL,
    "rate_limit": RATE,
    "rate_limits": RATE_MAP,
    "read_only": SWITCH_ON,
    "templates_only": SWITCH_ON,  # send_email: only template mail
    **dict.fromkeys(
        [
            "max_depth",
            "max_parallel",
            "timeout_seconds",
            "max_turns",
            "max_children",
            "max_chars",
            "max_budget_usd",
            "max_tokens",
            "request_timeout_seconds",
            "max_value_bytes",
            "query_timeout_seconds",
            "max_file_bytes",
            "max_image_bytes",
            "max_images",
            "max_document_bytes",
            "max_pdf_pages",
            "max_bytes",
            "max_timeout_seconds",
            "run_timeout_seconds",
            "model_max_jobs",
        ],
        BOUND,
    ),
}
LEVELS = {
    "mode": ["off", "smart", "always"],
    "fallback": ["allow", "deny"],
    "sandbox": ["off", "auto", "required"],
    "network": ["guarded", "none"],
}


def _ruled(model: type[BaseModel], key: str) -> Iterator[tuple[type[BaseModel], str, str, Narrow, Any]]:
    """(model, its config key, field, rule, type) for every ruled field below ``model``, nested sections too."""
    for name, info in model.model_fields.items():
        rule = next((m for m in info.metadata if isinstance(m, Narrow)), None)
        factory = info.default_factory
        if rule is not None:
            yield model, key, name, rule, info.annotation
        elif isinstance(factory, type) and issubclass(factory, BaseModel):
            yield from _ruled(factory, f"{key}.{name}" if key else name)


def _every_ruled_field() -> list[tuple[type[BaseModel], str, str, Narrow, Any]]:
    found = [*_ruled(Config, ""), *_ruled(AgentConfig, "agents.rep")]
    for tool in Registry.default(entry_points=False).list():
        if tool.config_model is not None:
            found += _ruled(tool.config_model, f"tool_config.{tool.name}")
    return found


RULED = _every_ruled_field()


def _admitted_by(entry: str, base: list[str]) -> bool:
    if entry == ALLOW_NOTHING or entry in base:
        return True
    return any(fnmatchcase(entry, b) for b in base if b != ALLOW_NOTHING and "[" not in b)


def _never_wider(meaning: str, name: str, base: Any, narrowed: Any) -> bool:
    if meaning == ADMIT:
        return not base or (all(_admitted_by(e, base) for e in narrowed) and bool(narrowed))
    if meaning == ADMIT_OR_NONE:  # here [] admits nothing
        return base is None or (narrowed is not None and all(_admitted_by(e, base) for e in narrowed))
    if meaning == GRANT:
        return set(narrowed) <= set(base)
    if meaning == RESTRICT:
        return set(narrowed) >= set(base)
    if meaning == DENY_GLOBS:
        return set(narrowed) >= set(base) and all(e in base for e in narrowed if e.lstrip().startswith("!"))
    if meaning == RULES:
        return all(r in narrowed for r in base) and all(r in base or r.verdict != "allow" for r in narrowed)
    if meaning == LEVEL:
        return base is None or LEVELS[name].index(narrowed) >= LEVELS[name].index(base)
    if meaning == BOUND:
        return base is None or (narrowed is not None and narrowed <= base)
    if meaning == RATE:
        return base is None or (narrowed is not None and per_second(narrowed) <= per_second(base))
    if meaning == RATE_MAP:
        return all(k in narrowed and per_second(narrowed[k]) <= per_second(v) for k, v in base.items())
    assert meaning == SWITCH_ON, meaning
    return bool(narrowed) or not base


def test_every_ruled_setting_says_what_it_means() -> None:
    """The audit: each field carrying a ``Narrow`` rule, of the config and of every tool, has a meaning here."""
    assert {name for _, _, name, _, _ in RULED} <= set(MEANINGS), {n for _, _, n, _, _ in RULED} - set(MEANINGS)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_untrusted_layer_never_widens_what_any_setting_admits(data: st.DataObject) -> None:
    """For every ruled field (config, agents, every tool's settings): the narrowed value admits no more."""
    model, key, name, rule, field_type = data.draw(st.sampled_from(RULED), label="field")
    values = _value_for(rule, name, field_type)
    try:
        base = model.model_validate({name: data.draw(values, label="user's")})
    except ValueError:
        assume(False)
        raise
    proposed = data.draw(values, label="workspace's")
    narrowed = narrow_settings(base, {name: proposed}, key, [])
    meaning = MEANINGS[name]
    assert _never_wider(meaning, name, getattr(base, name), getattr(narrowed, name)), (key, name, narrowed)


@pytest.mark.parametrize("via", ["workspace", "agent"])
def test_write_paths_from_a_layer_that_may_only_narrow_grant_nothing_new(via: str) -> None:
    """F1 by example: over the default (no write_paths) a layer's ``['/']`` is dropped with a warning."""
    from toolrig.tools.shell import RunCommandConfig

    warnings: list[str] = []
    why = "an agent type may not widen its parent's settings" if via == "agent" else UNTRUSTED
    narrowed = narrow_settings(RunCommandConfig(), {"write_paths": ["/"]}, "tool_config.run_command", warnings, why)
    assert narrowed.write_paths == []  # type: ignore[attr-defined]
    assert "'tool_config.run_command.write_paths': '/' ignored" in warnings[0]
    user = RunCommandConfig(write_paths=["~/.cache/pip", "/var/tmp/x"])
    assert narrow_settings(user, {"write_paths": ["/var/tmp/x", "/"]}, "k", []).write_paths == ["/var/tmp/x"]  # type: ignore[attr-defined]
