"""Skills, memory files, the capabilities summary and large outputs, served as MCP resources and prompts.

Driven by the official ``mcp`` client, in process. Every read is the read-only tool that reads the thing,
through the same gate as a tool call: what the policy refuses to a tool, it refuses to a resource read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.skills.helpers import isolate_home
from toolrig import Tool, ToolContext, ToolInput, ToolOutput
from toolrig.adapters.mcp_resources import fill, prompt_arguments, route, tool_resource
from toolrig.adapters.mcp_server import McpToolServer
from toolrig.config import set_trust
from toolrig.definition import Subject
from toolrig.rig import Rig

pytestmark = pytest.mark.anyio

REVIEW = """---
name: review
description: Review a change for bugs and style.
arguments:
  - {name: focus, description: What to look at first., required: true, values: [bugs, style, tests]}
  - name: depth
---
Review the change. Focus on ${focus}, depth ${depth}. Leave ${unknown} alone. All: $ARGUMENTS
"""


@pytest.fixture
def served(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_home(tmp_path, monkeypatch)
    skill = workspace / ".agents" / "skills" / "review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(REVIEW)
    (workspace / "MEMORY.md").write_text("# Memory\nThe build uses uv.\n")
    (workspace / "memory").mkdir()
    (workspace / "memory" / "people.md").write_text("Ada reviews the parser.\n")
    (workspace / "memory" / "secret.md").write_text("the vault code\n")
    set_trust(workspace)
    return workspace


@asynccontextmanager
async def client_of(workspace: Path, config: dict[str, Any] | None = None, **options: Any) -> AsyncIterator[Client]:
    with Rig(workspace, config) as rig:
        server = McpToolServer(rig)
        async with server.running(), Client(server.server, **options) as client:
            yield client


async def test_resources_list_skills_memory_files_and_the_capabilities_summary(served: Path) -> None:
    async with client_of(served) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert {"skill://review", "memory://MEMORY.md", "memory://memory/people.md", "toolrig://capabilities"} <= set(
        listed
    )
    assert listed["skill://review"].description == "Review a change for bugs and style."
    assert templates == {"skill://{name}", "memory://{path}", "toolrig://outputs/{handle}"}


async def test_reading_a_resource_gives_its_text(served: Path) -> None:
    async with client_of(served) as client:
        skill = (await client.read_resource("skill://review")).contents[0]
        memory = (await client.read_resource("memory://memory/people.md")).contents[0]
        summary = (await client.read_resource("toolrig://capabilities")).contents[0]
    assert getattr(skill, "text", "").startswith("Review the change.")
    assert getattr(memory, "text", "") == "Ada reviews the parser."
    assert getattr(summary, "text", "")


async def test_a_resource_read_the_policy_denies_is_refused(served: Path) -> None:
    config = {"tools": {"rules": [{"tool": "memory_get", "subject": "memory/secret*", "verdict": "deny"}]}}
    async with client_of(served, config) as client:
        assert (await client.read_resource("memory://memory/people.md")).contents
        with pytest.raises(MCPError) as refused:
            await client.read_resource("memory://memory/secret.md")
    assert refused.value.error.code == -32602
    assert "vault" not in str(refused.value.error)
    assert isinstance(refused.value.error.data, dict) and refused.value.error.data["error_type"] == "denied"


async def test_a_tool_the_policy_denies_takes_its_resources_and_prompts_with_it(served: Path) -> None:
    async with client_of(served, {"tools": {"deny": ["load_skill"]}}) as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        prompts = (await client.list_prompts()).prompts
        with pytest.raises(MCPError):
            await client.read_resource("skill://review")
        with pytest.raises(MCPError):
            await client.get_prompt("review", {"focus": "bugs"})
    assert not any(uri.startswith("skill://") for uri in uris) and prompts == []


@pytest.mark.parametrize(
    "uri",
    [
        "memory://../secrets.md",
        "memory://memory/../../etc/passwd",
        "memory:///etc/passwd",
        "memory://notes.txt",
        "skill://../../x",
        "skill://Has Space",
        "toolrig://outputs/out_../../x",
        "file:///etc/passwd",
        "toolrig://capabilities/../x",
    ],
)
async def test_a_uri_outside_what_is_served_is_not_found(served: Path, uri: str) -> None:
    async with client_of(served) as client:
        with pytest.raises(MCPError) as missing:
            await client.read_resource(uri)
    assert missing.value.error.code == -32002


@given(st.text(max_size=80))
def test_route_only_ever_reads_through_the_four_reading_tools(uri: str) -> None:
    read = route(uri)
    assert read is None or read.tool in {"load_skill", "memory_get", "capabilities_refresh", "read_output"}
    if read is not None and read.tool == "memory_get":
        assert ".." not in read.args["file_path"].split("/") and not read.args["file_path"].startswith("/")


async def test_a_large_output_is_a_resource_by_its_handle(served: Path) -> None:
    (served / "big.txt").write_text("line of text\n" * 2_000)
    async with client_of(served, {"output": {"max_chars": 5_000}}) as client:
        cut = await client.call_tool("read_files", {"paths": ["big.txt"]})
        handle = (cut.structured_content or {}).get("handle") or _handle_in(cut.content[0].text)  # type: ignore[union-attr]
        page = (await client.read_resource(f"toolrig://outputs/{handle}")).contents[0]
    assert "line of text" in getattr(page, "text", "")


def _handle_in(text: str) -> str:
    import re

    found = re.search(r"out_[0-9a-f]{16}", text)
    assert found, text[:500]
    return found.group(0)


async def test_a_skill_is_a_prompt_with_its_declared_arguments_filled_in(served: Path) -> None:
    async with client_of(served) as client:
        (prompt,) = [p for p in (await client.list_prompts()).prompts if p.name == "review"]
        got = await client.get_prompt("review", {"focus": "tests", "depth": "${focus}"})
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("review", {"depth": "deep"})
        with pytest.raises(MCPError):
            await client.get_prompt("no-such-skill", {})
    assert [(a.name, a.required) for a in prompt.arguments or []] == [("focus", True), ("depth", False)]
    text = getattr(got.messages[0].content, "text", "")
    assert text.startswith("Review the change. Focus on tests, depth ${focus}. Leave ${unknown} alone.")
    assert text.endswith("All: tests ${focus}\n")
    assert "focus" in missing.value.error.message


async def test_completion_offers_a_prompt_arguments_declared_values_and_resource_names(served: Path) -> None:
    from mcp.types import PromptReference, ResourceTemplateReference

    async with client_of(served) as client:
        focus = await client.complete(PromptReference(name="review"), {"name": "focus", "value": "b"})
        names = await client.complete(ResourceTemplateReference(uri="skill://{name}"), {"name": "name", "value": ""})
        paths = await client.complete(
            ResourceTemplateReference(uri="memory://{path}"), {"name": "path", "value": "mem"}
        )
    assert focus.completion.values == ["bugs"]
    assert names.completion.values == ["review"]
    assert paths.completion.values == ["memory/people.md", "memory/secret.md"]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # 2026 replaced subscribe
async def test_a_subscriber_hears_when_a_memory_file_it_watches_changes(served: Path) -> None:
    updated: list[str] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        uri = getattr(getattr(getattr(message, "params", None), "uri", None), "__str__", lambda: None)()
        if uri is not None:
            updated.append(uri)
            changed.set()

    async with client_of(served, message_handler=on_message, mode="legacy") as client:
        await client.subscribe_resource("memory://memory/people.md")
        await client.subscribe_resource("memory://MEMORY.md")
        await client.unsubscribe_resource("memory://MEMORY.md")
        await client.call_tool("memory_write", {"file_path": "memory/people.md", "content": "Grace owns CI."})
        await client.call_tool("memory_write", {"file_path": "MEMORY.md", "content": "more"})
        with anyio.fail_after(10):
            await changed.wait()
    assert updated == ["memory://memory/people.md"]


def test_prompt_arguments_ignore_malformed_declarations() -> None:
    extra = {"arguments": ["ok", {"name": "bad name"}, {"nope": 1}, 7, {"name": "x", "values": "notalist"}]}
    assert [a.name for a in prompt_arguments(extra, "")] == ["ok", "x"]
    assert [a.name for a in prompt_arguments({}, "do $ARGUMENTS")] == ["arguments"]
    assert fill("$ARGUMENTS", prompt_arguments({}, "$ARGUMENTS"), {"arguments": "$ARGUMENTS"}) == "$ARGUMENTS"


# ------------------------------------------------------------------------------ a tool's own resource


class NoteIn(ToolInput):
    topic: Annotated[str, Subject("text")]


class NoteOut(ToolOutput):
    text: str


class Note(Tool[NoteIn, NoteOut]):
    name = "note_of"
    group = "sample"
    description = "A note on a topic."
    read_only = True
    resource_uri = "notes://{topic}/latest"

    async def execute(self, input: NoteIn, ctx: ToolContext) -> NoteOut:
        return NoteOut(text=f"about {input.topic}")


class WritingNote(Note):
    name = "write_note"
    read_only = False
    resource_uri = "notes://written"


async def test_a_read_only_tool_serves_the_resource_it_declares_through_the_gate(served: Path) -> None:
    tools = [Note(), WritingNote()]
    deny = {"tools": {"rules": [{"tool": "note_of", "subject": "secret*", "verdict": "deny"}]}}
    with Rig(served, tools=tools) as rig:
        server = McpToolServer(rig)
        async with server.running(), Client(server.server) as client:
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            text = (await client.read_resource("notes://parsing/latest")).contents[0]
            for bad in ("notes://a/b/latest", "notes:///latest", "notes://written"):
                with pytest.raises(MCPError):
                    await client.read_resource(bad)
    assert "notes://{topic}/latest" in templates and "notes://written" not in templates
    assert getattr(text, "text", "") == "about parsing"
    with Rig(served, deny, tools=tools) as rig:
        server = McpToolServer(rig)
        async with server.running(), Client(server.server) as client:
            assert (await client.read_resource("notes://parsing/latest")).contents
            with pytest.raises(MCPError) as refused:
                await client.read_resource("notes://secret-plans/latest")
    assert isinstance(refused.value.error.data, dict) and refused.value.error.data["error_type"] == "denied"


def test_a_declared_uri_is_matched_whole_and_its_variables_never_span_a_slash() -> None:
    declared = tool_resource(Note())
    assert declared is not None and declared.is_template
    assert declared.read("notes://x/latest") is not None
    assert declared.read("notes://x/latest/more") is None
    assert declared.read("notes://x/y/latest") is None
    assert declared.read("xnotes://x/latest") is None
    assert tool_resource(WritingNote()) is None


# ------------------------------------------------------------------ names obey the read checks (F10)

MEMORY_NAMES = ["MEMORY.md", "memory/people.md", "memory/private/hr.md", "memory/private/deep/plan.md", "memory/a/b.md"]
DENY_GLOBS = ["memory/private/", "memory/private/**", "*.md", "memory/a/", "hr.md", "MEMORY.md", "memory/**/plan.md"]


async def names_and_reads(workspace: Path, config: dict[str, Any]) -> tuple[set[str], set[str], set[str], set[str]]:
    """(listed, completed, subscribable, readable) memory paths, through the official client."""
    from mcp.types import ResourceTemplateReference

    async with client_of(workspace, config, mode="legacy") as client:
        listed = {
            str(r.uri).removeprefix("memory://")
            for r in (await client.list_resources()).resources
            if str(r.uri).startswith("memory://")
        }
        reference = ResourceTemplateReference(uri="memory://{path}")
        completed = set((await client.complete(reference, {"name": "path", "value": ""})).completion.values)
        readable, subscribable = set(), set()
        for name in MEMORY_NAMES:
            try:
                await client.read_resource(f"memory://{name}")
                readable.add(name)
            except MCPError:
                pass
            try:
                await client.subscribe_resource(f"memory://{name}")
                subscribable.add(name)
            except MCPError as exc:
                assert exc.error.code == -32002 and "layoffs" not in str(exc.error)  # not found: nothing revealed
    return listed, completed, subscribable, readable


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # 2026 replaced subscribe
async def test_the_reported_case_a_deny_globbed_memory_file_is_neither_listed_completed_nor_subscribable(
    served: Path,
) -> None:
    (served / "memory" / "private").mkdir()
    (served / "memory" / "private" / "hr.md").write_text("layoffs\n")
    config = {"workspace": {"deny_globs": ["memory/private/"]}}
    listed, completed, subscribable, readable = await names_and_reads(served, config)
    assert "memory/private/hr.md" not in listed | completed | subscribable | readable
    assert "memory/people.md" in listed & completed & subscribable & readable


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    globs=st.lists(st.sampled_from(DENY_GLOBS), max_size=2, unique=True),
    rule=st.one_of(st.none(), st.sampled_from(["memory/private/*", "memory/**", "MEMORY.md", "memory/a/*"])),
    tool=st.sampled_from(["memory_get", "*"]),
)
def test_any_deny_glob_or_rule_hides_from_listing_completion_and_subscribe_exactly_what_a_read_refuses(
    served: Path, globs: list[str], rule: str | None, tool: str
) -> None:
    for name in MEMORY_NAMES:
        (served / name).parent.mkdir(parents=True, exist_ok=True)
        (served / name).write_text(f"{name}\n")
    (served / "memory" / "secret.md").unlink(missing_ok=True)
    config: dict[str, Any] = {"workspace": {"deny_globs": globs}}
    if rule is not None:
        config["tools"] = {"rules": [{"tool": tool, "subject": rule, "verdict": "deny"}]}
    listed, completed, subscribable, readable = anyio.run(names_and_reads, served, config)
    assert listed == completed == subscribable == readable
