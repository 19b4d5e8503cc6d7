"""The MCP conformance suite's fixture tools, as an ordinary toolrig tool plugin.

The suite (``@modelcontextprotocol/conformance``) calls tools by fixed names and checks what comes back.
These are plain toolrig tools: the test installs them the way a user installs a plugin (an entry point
in the ``toolrig.tools`` group), and they reach the client only through their ToolContext (progress,
log lines), so what the suite checks is toolrig's own path from a tool to an MCP client.

The suite's resources are served by read-only tools that declare a ``resource_uri`` (the binary one
attaches its PNG as an image part, as a tool reading an image does), and its prompts are Agent Skills
(``SKILLS``, with the files their ``embed`` lists in ``SKILL_FILES``), so they too are what a user would write.

Results beyond text (image, audio, an embedded resource, all three mixed) attach content parts to an
ordinary output, as a tool reading an image file does.

A tool asks the client's model through ``ctx.sample`` (``test_sampling``) and its user with a form of its
own through ``ask_user`` (the SEP-1034 defaults and SEP-1330 enum fixtures): the form travels unchanged.
"""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
from pydantic import BaseModel

from tests.support.media_tools import WAV, tiny_png
from toolrig import Tool, ToolContext, ToolError, ToolInput, ToolOutput
from toolrig.content import AudioPart, ImagePart, ResourcePart
from toolrig.errors import ErrorType

SIMPLE_TEXT = "This is a simple text response for testing."


class NoInput(ToolInput):
    pass


class Text(ToolOutput):
    text: str


class SimpleText(Tool[NoInput, Text]):
    name = "test_simple_text"
    group = "conformance"
    description = "Returns a simple text response (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        return Text(text=SIMPLE_TEXT)


class ErrorHandling(Tool[NoInput, Text]):
    name = "test_error_handling"
    group = "conformance"
    description = "Always fails (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        raise ToolError(ErrorType.INVALID_INPUT, "This tool intentionally returns an error for testing")


class WithProgress(Tool[NoInput, Text]):
    name = "test_tool_with_progress"
    group = "conformance"
    description = "Reports progress 0, 50 and 100 of 100 (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        for step in (0, 50, 100):
            ctx.progress(step, 100)
            await anyio.sleep(0.05)
        return Text(text="Progress reported.")


class WithLogging(Tool[NoInput, Text]):
    name = "test_tool_with_logging"
    group = "conformance"
    description = "Logs three lines at info level while it runs (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        ctx.log("info", "Tool execution started")
        await anyio.sleep(0.05)
        ctx.log("info", "Tool processing data")
        await anyio.sleep(0.05)
        ctx.log("info", "Tool execution completed")
        return Text(text="Logged three lines.")


class Reconnection(Tool[NoInput, Text]):
    """A call long enough for the server to close its SSE stream (``--sse-poll-after 0``) and be resumed."""

    name = "test_reconnection"
    group = "conformance"
    description = "Takes a moment, so the client has to resume the stream for the result (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        await anyio.sleep(0.1)
        return Text(text="Reconnection test completed.")


class MessageIn(ToolInput):
    message: str


class Elicitation(Tool[MessageIn, Text]):
    """Asks its user through ``ctx.approvals.ask_user``; over MCP that is an ``elicitation/create`` form."""

    name = "test_elicitation"
    group = "conformance"
    description = "Asks the user a question and returns the answer (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: MessageIn, ctx: ToolContext) -> Text:
        question = {"question": input.message, "header": "Your details", "allow_other_text": True}
        answers = await ctx.approvals.ask_user(
            [question], call_id=ctx.call_id, session_id=ctx.session_id, agent_id=ctx.agent_id
        )
        return Text(text=f"User response: {answers!r}")


class PromptIn(ToolInput):
    prompt: str


class Sampling(Tool[PromptIn, Text]):
    """Asks the model through ``ctx.sample``: under ``toolrig mcp serve`` the client's (sampling/createMessage)."""

    name = "test_sampling"
    group = "conformance"
    description = "Asks the model to answer a prompt and returns its answer (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: PromptIn, ctx: ToolContext) -> Text:
        answer = await ctx.sample(input.prompt, max_tokens=100)
        return Text(text=f"LLM response: {answer.text}")


SEP1034_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}

SEP1330_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


class FormTool(Tool[NoInput, Text]):
    """Asks the user to fill in the tool's own form through ``ctx.approvals.ask_user`` (MCP: elicitation)."""

    group = "conformance"
    read_only = True
    message = ""
    form: ClassVar[dict[str, Any]] = {}

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        question = {"question": self.message, "form": self.form}
        answers = await ctx.approvals.ask_user(
            [question], call_id=ctx.call_id, session_id=ctx.session_id, agent_id=ctx.agent_id
        )
        if answers is None:
            return Text(text="Elicitation completed: action=decline, content={}")
        return Text(text=f"Elicitation completed: action=accept, content={answers[0].get('values')}")


class Sep1034Defaults(FormTool):
    name = "test_elicitation_sep1034_defaults"
    description = "Asks for a form whose fields all have defaults (SEP-1034; MCP conformance fixture)."
    message = "Please review and update the form fields with defaults"
    form = SEP1034_FORM


class Sep1330Enums(FormTool):
    name = "test_elicitation_sep1330_enums"
    description = "Asks for a form with the five enum shapes (SEP-1330; MCP conformance fixture)."
    message = "Please select options from the enum fields"
    form = SEP1330_FORM


class Address(BaseModel):
    street: str | None = None
    city: str | None = None


class Person(ToolInput):
    name: str | None = None
    address: Address | None = None


SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


class JsonSchema202012(Tool[Person, Text]):
    """A tool whose published schema uses 2020-12 keywords ($schema, $defs, $ref) that must reach the client."""

    name = "json_schema_2020_12_tool"
    group = "conformance"
    description = "Tool with JSON Schema 2020-12 features (MCP conformance fixture)."
    read_only = True

    def input_schema(self) -> dict[str, Any]:
        return SCHEMA_2020_12

    async def execute(self, input: Person, ctx: ToolContext) -> Text:
        return Text(text=f"Hello {input.name or 'nobody'}.")


class StaticText(Tool[NoInput, Text]):
    """A resource the plugin serves: ``resource_uri`` makes the MCP server read it by calling the tool."""

    name = "test_static_text"
    group = "conformance"
    description = "The static text resource (MCP conformance fixture)."
    read_only = True
    resource_uri = "test://static-text"

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        return Text(text="This is the content of the static text resource.")


class Watched(Tool[NoInput, Text]):
    name = "test_watched_resource"
    group = "conformance"
    description = "A resource clients subscribe to (MCP conformance fixture)."
    read_only = True
    resource_uri = "test://watched-resource"

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        return Text(text="Watched resource content.")


class StaticBinary(Tool[NoInput, Text]):
    """A binary resource: its result's image part is what a resource read serves, as a base64 blob."""

    name = "test_static_binary"
    group = "conformance"
    description = "The static binary resource, a PNG (MCP conformance fixture)."
    read_only = True
    resource_uri = "test://static-binary"

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        return Text(text="A red square.").attach_content(ImagePart.of(tiny_png(), "image/png"))


class TemplateIn(ToolInput):
    id: str


class TemplateData(ToolOutput):
    id: str
    templateTest: bool  # the suite's field name
    data: str


class Template(Tool[TemplateIn, TemplateData]):
    name = "test_template_data"
    group = "conformance"
    description = "Data for an id, as the resource template test://template/{id}/data (MCP conformance fixture)."
    read_only = True
    resource_uri = "test://template/{id}/data"

    async def execute(self, input: TemplateIn, ctx: ToolContext) -> TemplateData:
        return TemplateData(id=input.id, templateTest=True, data=f"Data for ID: {input.id}")


class ImageContent(Tool[NoInput, Text]):
    name = "test_image_content"
    group = "conformance"
    description = "Returns a small PNG as image content (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        return Text(text="A red square.").attach_content(ImagePart.of(tiny_png(), "image/png"))


class AudioContent(Tool[NoInput, Text]):
    name = "test_audio_content"
    group = "conformance"
    description = "Returns a silent WAV as audio content (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        return Text(text="Silence.").attach_content(AudioPart.of(WAV, "audio/wav"))


EMBEDDED = ResourcePart(
    uri="test://embedded-resource", media_type="text/plain", text="This is an embedded resource content."
)


class EmbeddedResource(Tool[NoInput, Text]):
    name = "test_embedded_resource"
    group = "conformance"
    description = "Returns an embedded text resource (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        return Text(text="An embedded resource.").attach_content(EMBEDDED)


class MixedContent(Tool[NoInput, Text]):
    name = "test_multiple_content_types"
    group = "conformance"
    description = "Returns text, an image and a resource in one result (MCP conformance fixture)."
    read_only = True

    async def execute(self, input: NoInput, ctx: ToolContext) -> Text:
        return Text(text="Multiple content types test.").attach_content(ImagePart.of(tiny_png(), "image/png"), EMBEDDED)


TOOLS = [
    ImageContent,
    AudioContent,
    EmbeddedResource,
    MixedContent,
    SimpleText,
    ErrorHandling,
    WithProgress,
    WithLogging,
    Reconnection,
    JsonSchema202012,
    Elicitation,
    Sampling,
    Sep1034Defaults,
    Sep1330Enums,
    StaticText,
    StaticBinary,
    Watched,
    Template,
]

# The suite's prompts are skills in the user's skill folder (see conformance_peers.install_skills).
SKILLS = {
    "test_simple_prompt": """---
name: test_simple_prompt
description: A simple prompt without arguments (MCP conformance fixture).
---
This is a simple prompt for testing.
""",
    "test_prompt_with_arguments": """---
name: test_prompt_with_arguments
description: A prompt with two arguments (MCP conformance fixture).
arguments:
  - {name: arg1, description: First test argument, required: true, values: [paris, park, party]}
  - {name: arg2, description: Second test argument, required: true}
---
Prompt with arguments: arg1='${arg1}', arg2='${arg2}'
""",
    "test_prompt_with_image": """---
name: test_prompt_with_image
description: A prompt with an image from its own folder (MCP conformance fixture).
embed: [image.png]
---
Please analyze the image above.
""",
    "test_prompt_with_embedded_resource": """---
name: test_prompt_with_embedded_resource
description: A prompt embedding a text file from its own folder (MCP conformance fixture).
arguments:
  - {name: resourceUri, description: URI of the resource to embed, required: true}
embed: [example.txt]
---
Please process the embedded resource above (asked for: ${resourceUri}).
""",
}

# Files in the prompts' skill folders. The embedded resource is the skill's own file, never the URI an
# argument names: a prompt that embedded whatever a client asked for would read anything for anyone.
SKILL_FILES: dict[str, dict[str, bytes]] = {
    "test_prompt_with_image": {"image.png": tiny_png()},
    "test_prompt_with_embedded_resource": {"example.txt": b"Embedded resource content for testing.\n"},
}
