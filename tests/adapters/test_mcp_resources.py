"""Skills, memory files, the capabilities summary and large outputs, served as MCP resources and prompts.

Driven by the official ``mcp`` client, in process. Every read is the read-only tool that reads the thing,
through the same gate as a tool call: what the policy refuses to a tool, it refuses to a resource read.
"""

from __future__ import annotations

import base64
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
from mcp.types import BlobResourceContents, EmbeddedResource, ImageContent, TextContent, TextResourceContents

from tests.support.media_tools import tiny_png
from tests.support.skill_helpers import isolate_home
from toolrig import Tool, ToolContext, ToolInput, ToolOutput
from toolrig.adapters import mcp_resources
from toolrig.adapters.mcp_resources import fill, prompt_arguments, prompt_embeds, route, tool_resource
from toolrig.adapters.mcp_server import McpToolServer
from toolrig.config import set_trust
from toolrig.content import ImagePart
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
def test_route_only_ever_reads_through_the_five_reading_tools(uri: str) -> None:
    read = route(uri)
    assert read is None or read.tool in {
        "load_skill",
        "read_skill_resource",
        "memory_get",
        "capabilities_refresh",
        "read_output",
    }
    if read is not None and read.tool in {"load_skill", "read_skill_resource"}:
        assert "/" not in read.args["name"] and not read.args["name"].startswith(".")
    if read is not None and read.tool == "memory_get":
        assert ".." not in read.args["file_path"].split("/") and not read.args["file_path"].startswith("/")


async def test_a_large_output_is_a_resource_by_its_handle(served: Path) -> None:
    (served / "big.txt").write_text("line of text\n" * 2_000)
    async with client_of(served, {"output": {"max_chars": 5_000}}) as client:
        cut = await client.call_tool("read_files", {"paths": ["big.txt"]})
        texts = " ".join(getattr(block, "text", "") for block in cut.content)  # the handle is in a note
        handle = (cut.structured_content or {}).get("handle") or _handle_in(texts)
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


class NoIn(ToolInput):
    pass


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


# ------------------------------------------------------------------------------ content: bytes, images, embeds


def _skill(workspace: Path, name: str, front: str, body: str = "Look at it.\n") -> Path:
    folder = workspace / ".agents" / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: A skill with files.\n{front}---\n{body}")
    return folder


async def test_a_skill_image_is_read_as_a_binary_resource_with_its_media_type(served: Path) -> None:
    png = tiny_png(3, 2)
    (_skill(served, "pictures", "") / "diagram.png").write_bytes(png)
    async with client_of(served) as client:
        (content,) = (await client.read_resource("skill://pictures/diagram.png")).contents
    assert isinstance(content, BlobResourceContents)
    assert (str(content.uri), content.mime_type) == ("skill://pictures/diagram.png", "image/png")
    assert base64.b64decode(content.blob) == png


async def test_a_skill_text_file_is_read_as_text_and_a_tool_resource_with_an_image_part_as_a_blob(
    served: Path,
) -> None:
    (_skill(served, "pictures", "") / "notes.md").write_text("# Notes\n")
    with Rig(served, tools=[Picture()]) as rig:
        server = McpToolServer(rig)
        async with server.running(), Client(server.server) as client:
            (notes,) = (await client.read_resource("skill://pictures/notes.md")).contents
            (picture,) = (await client.read_resource("pictures://red")).contents
    assert isinstance(notes, TextResourceContents) and (notes.mime_type, notes.text) == ("text/markdown", "# Notes\n")
    assert isinstance(picture, BlobResourceContents) and picture.mime_type == "image/png"
    assert base64.b64decode(picture.blob) == tiny_png()


class Picture(Tool[NoIn, NoteOut]):
    name = "red_picture"
    group = "sample"
    description = "A red square."
    read_only = True
    resource_uri = "pictures://red"

    async def execute(self, input: NoIn, ctx: ToolContext) -> NoteOut:
        return NoteOut(text="A red square.").attach_content(ImagePart.of(tiny_png(), "image/png"))


async def test_a_prompt_embeds_an_image_and_a_text_file_of_its_own_folder_before_its_text(served: Path) -> None:
    folder = _skill(served, "explain", "embed: [chart.png, data/table.csv]\n", "Explain ${what}. $ARGUMENTS\n")
    (folder / "chart.png").write_bytes(tiny_png())
    (folder / "data").mkdir()
    (folder / "data" / "table.csv").write_text("a,b\n1,2\n")
    async with client_of(served) as client:
        got = await client.get_prompt("explain", {"arguments": "the trend"})
    image, table, text = (message.content for message in got.messages)
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == tiny_png()
    assert isinstance(table, EmbeddedResource) and isinstance(table.resource, TextResourceContents)
    assert str(table.resource.uri) == "skill://explain/data/table.csv"
    assert (table.resource.mime_type, table.resource.text) == ("text/csv", "a,b\n1,2\n")
    assert isinstance(text, TextContent) and text.text.startswith("Explain ${what}. the trend")


async def test_what_a_prompt_embeds_is_judged_by_content_not_by_file_name(served: Path) -> None:
    folder = _skill(served, "disguised", "embed: [photo.png, notes.txt]\n")
    (folder / "photo.png").write_text("not an image at all\n")
    (folder / "notes.txt").write_bytes(tiny_png())
    async with client_of(served) as client:
        got = await client.get_prompt("disguised", {})
    first, second, _ = (message.content for message in got.messages)
    assert isinstance(first, EmbeddedResource) and isinstance(first.resource, TextResourceContents)
    assert first.resource.mime_type == "text/plain" and first.resource.text == "not an image at all\n"
    assert isinstance(second, ImageContent) and second.mime_type == "image/png"


async def test_an_argument_can_never_choose_what_a_prompt_embeds(served: Path) -> None:
    folder = _skill(served, "fixed", "arguments: [embed]\nembed: [own.txt]\n", "Use ${embed}.\n")
    (folder / "own.txt").write_text("mine\n")
    (served / "secret.txt").write_text("the vault code\n")
    async with client_of(served) as client:
        got = await client.get_prompt("fixed", {"embed": "../../../secret.txt"})
    assert "vault" not in got.model_dump_json()
    assert [type(m.content).__name__ for m in got.messages] == ["EmbeddedResource", "TextContent"]


@pytest.mark.parametrize(
    "embed",
    ["../review/SKILL.md", "/etc/passwd", "~/.bashrc", "inner/../../review/SKILL.md", "leak.txt", "linked/secret.txt"],
)
async def test_a_prompt_cannot_embed_anything_outside_its_own_folder(served: Path, tmp_path: Path, embed: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the vault code\n")
    folder = _skill(served, "escape", f"embed: [{embed!r}]\n")
    (folder / "inner").mkdir()
    (folder / "leak.txt").symlink_to(outside / "secret.txt")
    (folder / "linked").symlink_to(outside)
    async with client_of(served) as client:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("escape", {})
        with pytest.raises(MCPError):
            await client.read_resource(f"skill://escape/{embed}")
    assert refused.value.error.code in (-32602, -32002)
    assert isinstance(refused.value.error.data, dict)
    assert refused.value.error.data["error_type"] in ("denied", "invalid_input", "not_found")
    assert "vault" not in str(refused.value.error) and "review the change" not in str(refused.value.error).lower()


async def test_oversized_files_are_refused_whole_never_cut(served: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolrig.tools import skills as skill_tools

    folder = _skill(served, "big", "embed: [huge.md]\n")
    (folder / "huge.md").write_text("x" * (skill_tools.MAX_RESOURCE_BYTES + 1))
    (_skill(served, "big-image", "embed: [huge.png]\n") / "huge.png").write_bytes(
        tiny_png() + b"\0" * skill_tools.MAX_IMAGE_BYTES
    )
    pair = _skill(served, "pair", "embed: [a.png, b.png]\n")
    for name in ("a.png", "b.png"):
        (pair / name).write_bytes(tiny_png() + b"\0" * 600)
    monkeypatch.setattr(mcp_resources, "MAX_EMBEDDED_BYTES", 1000)
    async with client_of(served) as client:
        with pytest.raises(MCPError) as text:
            await client.get_prompt("big", {})
        with pytest.raises(MCPError):
            await client.read_resource("skill://big/huge.md")
        with pytest.raises(MCPError) as image:
            await client.get_prompt("big-image", {})
        with pytest.raises(MCPError) as together:
            await client.get_prompt("pair", {})
    assert "too large" in text.value.error.message
    assert isinstance(image.value.error.data, dict) and image.value.error.data["error_type"] == "too_large"
    assert "more than 1,000 bytes" in together.value.error.message


async def test_too_many_embeds_and_binary_files_that_are_not_images_are_refused(served: Path) -> None:
    many = _skill(served, "many", f"embed: {[f'f{i}.txt' for i in range(mcp_resources.MAX_EMBEDS + 1)]}\n")
    for i in range(mcp_resources.MAX_EMBEDS + 1):
        (many / f"f{i}.txt").write_text("x")
    (_skill(served, "blob", "embed: [data.bin]\n") / "data.bin").write_bytes(b"\x00\x01binary")
    (_skill(served, "broken", "embed: [bad.png]\n") / "bad.png").write_bytes(tiny_png()[:10])
    async with client_of(served) as client:
        for name in ("many", "blob", "broken"):
            with pytest.raises(MCPError) as refused:
                await client.get_prompt(name, {})
            assert refused.value.error.code == -32602, name


async def test_embedded_files_pass_the_same_policy_as_the_read_skill_resource_tool(served: Path) -> None:
    folder = _skill(served, "guarded", "embed: [private/key.txt]\n")
    (folder / "private").mkdir()
    (folder / "private" / "key.txt").write_text("the vault code\n")
    (folder / "open.txt").write_text("fine\n")
    rule = {"tools": {"rules": [{"tool": "read_skill_resource", "subject": "guarded/private/*", "verdict": "deny"}]}}
    async with client_of(served, rule) as client:
        assert (await client.read_resource("skill://guarded/open.txt")).contents
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("guarded", {})
        with pytest.raises(MCPError) as read:
            await client.read_resource("skill://guarded/private/key.txt")
    for refused in (prompt, read):
        assert isinstance(refused.value.error.data, dict) and refused.value.error.data["error_type"] == "denied"
        assert "vault" not in str(refused.value.error)
    async with client_of(served, {"tools": {"deny": ["read_skill_resource"]}}) as client:
        with pytest.raises(MCPError):
            await client.get_prompt("guarded", {})
        assert (await client.get_prompt("review", {"focus": "bugs"})).messages  # no embeds: unaffected


@given(
    st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.one_of(st.text(max_size=5), st.integers())))
)
def test_embed_declarations_yield_only_nonempty_strings(declared: object) -> None:
    embeds = prompt_embeds({"embed": declared})
    assert all(isinstance(e, str) and e for e in embeds)
    if isinstance(declared, list):
        assert embeds == [e for e in declared if isinstance(e, str) and e]


async def test_a_prompt_refused_for_a_file_never_loads_the_skill_or_grants_its_allowed_tools(served: Path) -> None:
    _skill(served, "greedy", "allowed-tools: read_files\nembed: [missing.png]\n")
    with Rig(served, {"audit": {"enabled": True}}) as rig:
        server = McpToolServer(rig)
        async with server.running(), Client(server.server) as client:
            with pytest.raises(MCPError) as refused:
                await client.get_prompt("greedy", {})
        assert rig.governance.audit is not None
        assert rig.governance.audit.query(tool="load_skill") == []
        assert [row.tool for row in rig.governance.audit.query(tool="read_skill_resource")] == ["read_skill_resource"]
    assert refused.value.error.code == -32002


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
