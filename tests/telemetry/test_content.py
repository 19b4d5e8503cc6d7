"""Content stays off spans unless asked for, and is redacted as the audit log redacts it when it is on;
every name a span or metric carries is one the GenAI conventions define or one of toolrig's own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import agent_config
from tests.support.fake_llm import Call, FakeLLM, Text, reply
from tests.support.otlp import Receiver, Span
from tests.support.sample_tools import agent_tools
from toolrig.agent import run_agent
from toolrig.registry import Registry
from toolrig.rig import Rig
from toolrig.telemetry import names

pytestmark = pytest.mark.anyio
DOCS = Path(__file__).resolve().parents[2] / "docs" / "telemetry.md"
SECRET = "ghp_" + "s3cr3t" * 6
CONTENT_KEYS = {names.TOOL_ARGUMENTS, names.TOOL_RESULT, names.INPUT_MESSAGES, names.OUTPUT_MESSAGES}


async def _run(workspace: Path, llm: FakeLLM, otlp: Receiver, **telemetry: Any) -> tuple[Rig, list[Span]]:
    config = {**agent_config(llm, "anthropic"), "telemetry": {"endpoint": otlp.url, **telemetry}}
    rig = Rig(workspace, config=config, registry=Registry(agent_tools()))
    llm.script(reply(Call("c1", "note", f'{{"name": "{SECRET}"}}')), reply(Text(f"the token was {SECRET}")))
    result = await run_agent("remember a token", rig=rig)
    assert rig.telemetry is not None and rig.telemetry.force_flush()
    [run] = [s for s in otlp.named("invoke_agent") if s.attributes.get(names.CONVERSATION_ID) == result.session_id]
    return rig, otlp.in_trace(run.trace_id)


async def test_content_is_not_recorded_by_default(workspace: Path, llm: FakeLLM, otlp: Receiver) -> None:
    rig, spans = await _run(workspace, llm, otlp)
    assert len(spans) >= 4
    for span in spans:
        assert not CONTENT_KEYS & span.attributes.keys(), span.name
        assert all(SECRET not in str(value) for value in span.attributes.values())
    rig.close()


async def test_captured_content_is_redacted_like_the_audit_log(workspace: Path, llm: FakeLLM, otlp: Receiver) -> None:
    rig, spans = await _run(workspace, llm, otlp, capture_content=True)
    [call] = [s for s in spans if s.name == "execute_tool note"]
    assert "[REDACTED]" in call.attributes[names.TOOL_ARGUMENTS]
    assert names.TOOL_RESULT in call.attributes
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert any(names.OUTPUT_MESSAGES in s.attributes for s in chats)
    for span in spans:
        assert all(SECRET not in str(value) for value in span.attributes.values()), span.name
    rig.close()


def _documented_names() -> tuple[str, set[str], set[str]]:
    """The version and the two name tables docs/telemetry.md prints (first column, in backticks)."""
    text = DOCS.read_text(encoding="utf-8")
    version = re.search(r"semantic conventions \*\*v([0-9.]+)\*\*", text)
    assert version is not None
    genai, own = set(), set()
    section = ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line
        found = re.match(r"\| `([a-z_.]+)` \|", line)
        if found and "GenAI" in section:
            genai.add(found.group(1))
        elif found and "toolrig's own" in section:
            own.add(found.group(1))
    return version.group(1), genai, own


def test_the_documented_tables_are_the_names_emitted() -> None:
    version, genai, own = _documented_names()
    assert version == names.SEMCONV
    metrics = {names.TOKEN_USAGE, names.OPERATION_DURATION, names.FIRST_CHUNK_METRIC}
    assert genai == names.GENAI | metrics
    assert own == names.OWN | {names.TOOL_CALLS, names.APPROVAL_WAIT, names.COMMANDS}


async def test_every_span_attribute_and_metric_name_is_in_the_tables(
    workspace: Path, llm: FakeLLM, otlp: Receiver
) -> None:
    rig, spans = await _run(workspace, llm, otlp, capture_content=True)
    ours = [s for s in spans if s.scope == "toolrig"]
    for span in ours:
        assert set(span.attributes) <= names.GENAI | names.OWN, span.name
    operations = {s.attributes.get(names.OPERATION) for s in ours}
    assert {"invoke_agent", "chat", "execute_tool"} <= operations
    rig.close()
    from toolrig.telemetry.setup import telemetry_for

    telemetry_for(rig.config.telemetry).force_flush()
    ours = {name for name in otlp.metrics if name.startswith(("gen_ai.", "toolrig."))}
    assert {names.TOKEN_USAGE, names.OPERATION_DURATION, names.TOOL_CALLS} <= ours
    assert ours <= names.GENAI | {names.TOKEN_USAGE, names.OPERATION_DURATION, names.FIRST_CHUNK_METRIC} | {
        names.TOOL_CALLS,
        names.APPROVAL_WAIT,
        names.COMMANDS,
    }
    token_types = {
        a.value.string_value for p in otlp.metrics[names.TOKEN_USAGE] for a in p.attributes if a.key == names.TOKEN_TYPE
    }
    assert token_types == {"input", "output"}
    decisions = {
        a.value.string_value for p in otlp.metrics[names.TOOL_CALLS] for a in p.attributes if a.key == names.DECISION
    }
    assert "allow" in decisions


async def test_a_commands_containment_is_on_its_span_and_counted(workspace: Path, otlp: Receiver) -> None:
    config = {
        "telemetry": {"endpoint": otlp.url},
        "tools": {"rules": [{"tool": "run_command", "verdict": "allow"}]},
    }
    async with Rig(workspace, config=config) as rig:
        result = await rig.call("run_command", {"command": "echo hi"})
        assert not result.is_error, result
        containment = (result.output or {})["containment"]
        assert rig.telemetry is not None and rig.telemetry.force_flush()
    [span] = [s for s in otlp.spans if s.attributes.get(names.TOOL_CALL_ID) == result.meta.call_id]
    assert span.attributes[names.CONTAINMENT] == containment and span.attributes[names.ORIGIN] == "python"
    points = otlp.metrics.get(names.COMMANDS, [])
    counted = {a.value.string_value for p in points for a in p.attributes if a.key == names.CONTAINMENT}
    assert containment in counted
