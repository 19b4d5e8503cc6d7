"""The seed's organism.yaml: each listener an agent type whose tool_config binds its children (issue 18 item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agent.subagents.test_hub import spawn
from tests.support.fake_llm import Call, Text, reply
from toolrig.agent import RunOptions, run_agent
from toolrig.agent.subagents.loading import load_agent_types
from toolrig.agent.subagents.organism import load_organism
from toolrig.config import config_from, set_trust
from toolrig.errors import ConfigError
from toolrig.policy.audit import AuditLog
from toolrig.tools.edit import WriteFile
from toolrig.tools.files import ReadFiles
from toolrig.tools.notify import SendEmail
from toolrig.tools.web import FetchUrl

ORGANISM = """\
# The seed's shape: an organism, a code handler and two LLM listeners with their tool_config.
organism:
  name: research-org
  port: 8765
listeners:
  - name: calculator.add
    payload_class: handlers.calc.AddPayload
    handler: handlers.calc.add_handler
    description: Adds two numbers
  - name: researcher
    agent: true
    description: Reads the research notes and fetches sources
    prompt: |
      You are a research assistant.
    peers: [writer, web_search]
    tools: [read_files, fetch_url]
    tool_config:
      read_files: {allowed_paths: ["data/research/**"]}
      fetch_url: {allowed_domains: ["docs.example.com"]}
  - name: writer
    agent: true
    description: Writes reports and mails the team
    tools: [write_file, send_email]
    tool_config:
      write_file: {allowed_paths: ["output/**"]}
      send_email: {host: 127.0.0.1, port: 1, allowed_recipients: ["team@example.com"]}
"""

pytestmark = pytest.mark.anyio


def organism(workspace: Path, text: str = ORGANISM) -> Path:
    (workspace / "organism.yaml").write_text(text, encoding="utf-8")
    for rel, body in {"data/research/r.txt": "research\n", "src/app.py": "code\n"}.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(body, encoding="utf-8")
    return workspace


def test_each_llm_listener_is_an_agent_type_that_says_where_it_came_from(workspace: Path) -> None:
    set_trust(organism(workspace))
    found = load_agent_types(workspace, config_from({}), log_warnings=False)
    researcher, writer = found.get("researcher"), found.get("writer")
    assert researcher is not None and writer is not None and found.get("calculator.add") is None
    assert researcher.source == "organism" and researcher.location.endswith("organism.yaml (listeners[1])")
    assert researcher.description == "Reads the research notes and fetches sources"
    assert researcher.profile.system_prompt == "You are a research assistant.\n"
    assert researcher.profile.spawns == ["writer"]  # a peer that is an agent is a type it may spawn
    assert researcher.profile.tools is not None and "web_search" in researcher.profile.tools  # a peer tool
    assert researcher.profile.tool_config["read_files"] == {"allowed_paths": ["data/research/**"]}
    assert writer.profile.tool_config["send_email"]["allowed_recipients"] == ["team@example.com"]
    assert any("calculator.add" in w and "code handler" in w for w in found.warnings)


def test_an_untrusted_workspace_ignores_the_organism_with_a_warning(workspace: Path) -> None:
    found = load_agent_types(organism(workspace), config_from({}), log_warnings=False)
    assert found.get("researcher") is None and found.get("writer") is None
    assert any("organism.yaml" in w and "not trusted" in w for w in found.warnings)


def test_a_symlinked_organism_is_refused_even_when_trusted(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(ORGANISM, encoding="utf-8")
    (workspace / "organism.yaml").symlink_to(elsewhere)
    set_trust(workspace)
    found = load_agent_types(workspace, config_from({}), log_warnings=False)
    assert found.get("researcher") is None and any("symlink" in w for w in found.warnings)


def test_config_agents_win_over_a_listener_of_the_same_name(workspace: Path) -> None:
    set_trust(organism(workspace))
    found = load_agent_types(workspace, config_from({"agents": {"writer": {"description": "mine"}}}))
    writer = found.get("writer")
    assert writer is not None and writer.source == "config" and writer.description == "mine"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("listeners: 3\n", "listeners"),
        ("listeners:\n  - just a string\n", "listeners[0]"),
        ("listeners:\n  - {name: 'bad name!', tools: [x]}\n", "listeners[0].name"),
        ("listeners:\n  - {name: a, max_turns: -1}\n", "listeners[0].max_turns"),
        ("listeners:\n  - {name: a, tool_config: [1]}\n", "listeners[0].tool_config"),
        ("listeners:\n  - {name: a}\n  - {name: a}\n", "listeners[1].name"),
        ("listeners: [\n", None),
    ],
)
def test_a_malformed_organism_is_a_config_error_naming_the_file_and_key(
    workspace: Path, text: str, key: str | None
) -> None:
    set_trust(organism(workspace, text))
    with pytest.raises(ConfigError) as caught:
        load_agent_types(workspace, config_from({}))
    assert caught.value.file == workspace / "organism.yaml" and caught.value.key == key


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["name", "agent", "handler", "tools", "tool_config", "peers", "prompt", "listeners", "x"])
            | st.text(max_size=6),
            inner,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=yaml_values | st.fixed_dictionaries({"listeners": yaml_values}))
def test_any_yaml_shape_gives_types_or_a_config_error_never_a_traceback(tmp_path: Path, data: Any) -> None:
    path = tmp_path / "organism.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    try:
        types, notes = load_organism(path)
    except ConfigError as exc:
        assert str(exc).startswith(str(path))
        return
    assert all(t.source == "organism" for t in types) and all(isinstance(n, str) for n in notes)


def row(audit: AuditLog, tool: str, subject: str) -> Any:
    [found] = [r for r in audit.query(tool=tool) if any(subject in s for s in r.subjects)]
    return found


def refused_by_its_settings(audit: AuditLog, tool: str, subject: str) -> bool:
    """The gate let the call through (the tool is the type's) and the tool's own settings refused it."""
    found = row(audit, tool, subject)
    return bool(found.decision == "allow" and found.error_type == "denied")


async def test_children_of_organism_types_are_held_to_their_listeners_tool_config(
    agent_tools_rig: Any, converse: Any, workspace: Path
) -> None:
    set_trust(organism(workspace))
    write = {"path": "output/report.md", "content": "ok"}
    converse(
        {
            "PARENT": [reply(spawn("p1", ("researcher", "go RESEARCH"), ("writer", "go WRITE"))), reply(Text("done"))],
            "RESEARCH": [
                reply(
                    Call("r1", "read_files", json.dumps({"paths": ["data/research/r.txt"]})),
                    Call("r2", "read_files", json.dumps({"paths": ["src/app.py"]})),
                    Call("r3", "fetch_url", json.dumps({"url": "http://127.0.0.1:9/x"})),
                ),
                reply(Text("researched")),
            ],
            "WRITE": [
                reply(
                    Call("w1", "write_file", json.dumps(write)),
                    Call("w2", "write_file", json.dumps({"path": "src/app.py", "content": "pwned"})),
                    Call("w3", "send_email", json.dumps({"to": ["boss@elsewhere.test"], "subject": "s", "body": "b"})),
                ),
                reply(Text("written")),
            ],
        }
    )
    tools = [ReadFiles(), WriteFile(), FetchUrl(), SendEmail()]
    rig = agent_tools_rig(config={"tool_config": {"fetch_url": {"allow_loopback": True}}}, tools=tools)
    result = await run_agent("PARENT", RunOptions(), rig=rig)
    assert result.response == "done"
    audit = AuditLog(workspace / ".toolrig")
    try:
        assert not row(audit, "read_files", "data/research/r.txt").is_error
        assert refused_by_its_settings(audit, "read_files", "src/app.py")  # allowed_paths
        assert refused_by_its_settings(audit, "fetch_url", "127.0.0.1")  # allowed_domains
        assert not row(audit, "write_file", "output/report.md").is_error
        assert refused_by_its_settings(audit, "write_file", "src/app.py")  # allowed_paths
        assert refused_by_its_settings(audit, "send_email", "boss@elsewhere.test")  # allowed_recipients
    finally:
        audit.close()
        rig.close()
    assert (workspace / "src/app.py").read_text() == "code\n" and (workspace / "output/report.md").exists()


async def test_a_run_in_a_workspace_with_a_malformed_organism_stops_at_start_with_the_config_error(
    agent_tools_rig: Any, converse: Any, workspace: Path
) -> None:
    set_trust(organism(workspace, "listeners: 3\n"))
    converse({"PARENT": [reply(Text("never asked"))]})
    rig = agent_tools_rig()
    try:
        with pytest.raises(ConfigError, match=r"organism\.yaml: listeners: must be a list"):
            await run_agent("PARENT", RunOptions(), rig=rig)
    finally:
        rig.close()
