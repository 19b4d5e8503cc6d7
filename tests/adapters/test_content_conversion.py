"""Content parts as each consumer takes them: Anthropic blocks, OpenAI messages, MCP content (issue 20)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from tests.support.media_tools import PDF, WAV, Snapshot, tiny_png
from toolrig.adapters.anthropic import tool_result_block
from toolrig.adapters.mcp_server import call_tool_result, content_json
from toolrig.adapters.openai import tool_messages
from toolrig.content import AudioPart, ImagePart, ResourcePart, TextPart
from toolrig.registry import Registry
from toolrig.result import ToolResult
from toolrig.rig import Rig

PNG = ImagePart.of(tiny_png(), "image/png")
BMP = ImagePart.of(b"BM", "image/bmp")
AUDIO = AudioPart.of(WAV, "audio/wav")
NOTE = ResourcePart(uri="file:///notes.txt", media_type="text/plain", text="hello")
BOOK = ResourcePart(uri="file:///a.pdf", media_type="application/pdf", blob=base64.b64encode(PDF).decode())
MIXED = ToolResult.ok({"attached": ["all"]}, content=[PNG, AUDIO, NOTE, BOOK, BMP, TextPart(text="caption")])


def test_anthropic_puts_images_and_pdfs_in_the_tool_result_and_names_what_it_cannot_carry() -> None:
    block = tool_result_block("toolu_1", MIXED)
    content = block["content"]
    assert json.loads(content[0]["text"]) == {"is_error": False, "output": {"attached": ["all"]}}
    kinds = [b["type"] for b in content[1:]]
    assert kinds == ["image", "text", "text", "document", "text", "text"]
    assert content[1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG.data}
    assert "audio (audio/wav" in content[2]["text"] and "left out" in content[2]["text"]
    assert content[3]["text"] == "[resource file:///notes.txt]\nhello"
    assert "image (image/bmp" in content[5]["text"]
    TypeAdapter(MessageParam).validate_python({"role": "user", "content": [block]})  # the SDK's own shape


def test_anthropic_without_parts_keeps_the_plain_string() -> None:
    assert tool_result_block("t", ToolResult.ok({"a": 1}))["content"] == '{"is_error":false,"output":{"a":1}}'


def test_openai_sends_tool_messages_first_then_one_user_message_with_the_images() -> None:
    plain = ToolResult.ok({"n": 1})
    messages = tool_messages([("call_a", "snapshot", MIXED), ("call_b", "calculate", plain)])
    assert [m["role"] for m in messages] == ["tool", "tool", "user"]
    assert all(isinstance(m["content"], str) for m in messages[:2])
    parts = messages[2]["content"]
    assert parts[0]["type"] == "text" and "snapshot call call_a" in parts[0]["text"]
    assert parts[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG.data}"}}
    assert [p["type"] for p in parts[2:]] == ["text", "text", "file", "image_url", "text"]
    assert parts[4]["file"]["file_data"].startswith("data:application/pdf;base64,")
    adapter: TypeAdapter[Any] = TypeAdapter(ChatCompletionMessageParam)
    for message in messages:
        adapter.validate_python(message)
    assert tool_messages([("c", "calculate", plain)]) == [
        {"role": "tool", "tool_call_id": "c", "content": plain.to_json()}
    ]


def test_mcp_mixes_image_audio_and_embedded_resources_in_one_result() -> None:
    result = call_tool_result(MIXED, structured=True)
    kinds = [type(block).__name__ for block in result.content]
    assert kinds == [
        "TextContent", "ImageContent", "AudioContent", "EmbeddedResource", "EmbeddedResource", "ImageContent",
        "TextContent",
    ]  # fmt: skip
    assert result.content[1].data == PNG.data and result.content[1].mime_type == "image/png"  # type: ignore[union-attr]
    wire = content_json(MIXED.content)
    assert wire[0] == {"type": "image", "data": PNG.data, "mimeType": "image/png"}
    assert wire[2]["resource"] == {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "hello"}
    assert wire == [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content[1:]]


@pytest.mark.anyio
async def test_the_official_mcp_client_receives_the_parts(workspace: Path) -> None:
    from mcp import Client
    from mcp.types import AudioContent, EmbeddedResource, ImageContent

    from toolrig.adapters.mcp_server import McpToolServer

    server = McpToolServer(Rig(workspace, registry=Registry([Snapshot()])))
    async with server.running(), Client(server.server) as client:
        result = await client.call_tool("snapshot", {"kinds": ["image", "audio", "text"]})
    assert result.is_error is False and result.structured_content == {"attached": ["image", "audio", "text"]}
    image, audio, resource = result.content[1:]
    assert isinstance(image, ImageContent) and base64.b64decode(image.data) == tiny_png()
    assert isinstance(audio, AudioContent) and audio.mime_type == "audio/wav"
    assert isinstance(resource, EmbeddedResource) and str(resource.resource.uri) == "file:///notes.txt"


@pytest.mark.anyio
async def test_toolrig_mcp_serve_sends_an_image_read_from_disk_as_image_content(
    workspace: Path, toolrig_home: Path, tmp_path: Path
) -> None:
    from mcp.types import ImageContent

    from tests.support.mcp_peers import serve_params, stdio_session

    (workspace / "shot.png").write_bytes(tiny_png(3, 3))
    for mode in ("auto", "legacy"):  # the 2026 fast path writes responses itself; the 2025 path goes the SDK's way
        async with stdio_session(serve_params(workspace, toolrig_home), tmp_path / "server.log", mode=mode) as client:
            result = await client.call_tool("read_files", {"paths": ["shot.png"]})
        assert result.is_error is False
        assert json.loads(result.content[0].text)["files"]["shot.png"].startswith("[IMAGE]")  # type: ignore[union-attr]
        [image] = result.content[1:]
        assert isinstance(image, ImageContent) and base64.b64decode(image.data) == tiny_png(3, 3)


def test_the_cli_prints_the_contract_json_and_names_attached_parts_on_stderr(workspace: Path) -> None:
    from click.testing import CliRunner

    from toolrig.cli import app

    (workspace / "shot.png").write_bytes(tiny_png())
    runner = CliRunner()
    result = runner.invoke(app, ["call", "read_files", "--json", '{"paths": ["shot.png"]}', "--root", str(workspace)])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["output"]["files"]["shot.png"].startswith("[IMAGE]")
    assert "[attached image (image/png, " in result.stderr
