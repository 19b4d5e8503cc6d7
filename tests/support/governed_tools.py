"""Real tools whose subjects are a command, paths, a URL and recipients, to govern in tests.

They do their work inside the workspace or in memory (no process is started and nothing leaves the
machine), so a test can see whether a call ran: ``Shell`` and ``Fetch`` record what they were asked to do.
"""

from __future__ import annotations

import fnmatch
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from toolrig import Tool, ToolContext, ToolError, ToolInput, ToolOutput
from toolrig.errors import ErrorType
from toolrig.registry import Registry
from toolrig.sandbox.atomic import atomic_write_text


class CommandIn(ToolInput):
    command: str


class Ran(ToolOutput):
    ran: str


class Shell(Tool[CommandIn, Ran]):
    """Stands in for run_command: records the command line instead of starting a process."""

    name = "shell"
    group = "governed"
    description = "Run a shell command."
    subject_kind = "command"
    log: ClassVar[list[str]] = []

    async def execute(self, input: CommandIn, ctx: ToolContext) -> Ran:
        Shell.log.append(input.command)
        return Ran(ran=input.command)

    def subjects(self, input: CommandIn) -> list[str]:
        return [input.command]


class NoteIn(ToolInput):
    path: str
    text: str = "note"
    mode: str = "overwrite"


class Written(ToolOutput):
    path: str


class WriteNote(Tool[NoteIn, Written]):
    name = "write_note"
    group = "governed"
    description = "Write a note file in the workspace."
    subject_kind = "path"

    def execute(self, input: NoteIn, ctx: ToolContext) -> Written:
        target = ctx.workspace.resolve(input.path, write=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, input.text)
        return Written(path=ctx.workspace.display(target))

    def subjects(self, input: NoteIn) -> list[str]:
        return [input.path]


class PathsIn(ToolInput):
    paths: list[str]


class Sizes(ToolOutput):
    sizes: dict[str, int]


class Peek(Tool[PathsIn, Sizes]):
    name = "peek"
    group = "governed"
    description = "Report the size of files."
    subject_kind = "path"
    read_only = True

    async def execute(self, input: PathsIn, ctx: ToolContext) -> Sizes:
        return Sizes(sizes={p: ctx.workspace.resolve(p).stat().st_size for p in input.paths})

    def subjects(self, input: PathsIn) -> list[str]:
        return list(input.paths)


class UrlIn(ToolInput):
    url: str


class Fetched(ToolOutput):
    url: str


class Fetch(Tool[UrlIn, Fetched]):
    """Stands in for fetch_url: records the URL, opens no connection."""

    name = "fetch"
    group = "governed"
    description = "Fetch a URL."
    subject_kind = "url"
    open_world = True

    async def execute(self, input: UrlIn, ctx: ToolContext) -> Fetched:
        return Fetched(url=input.url)

    def subjects(self, input: UrlIn) -> list[str]:
        return [input.url]


class MailIn(ToolInput):
    to: list[str]
    subject: str = Field(default="hello")
    api_key: str | None = None


class Sent(ToolOutput):
    count: int


class Mail(Tool[MailIn, Sent]):
    name = "mail"
    group = "governed"
    description = "Send an email."
    subject_kind = "recipient"

    async def execute(self, input: MailIn, ctx: ToolContext) -> Sent:
        return Sent(count=len(input.to))

    def subjects(self, input: MailIn) -> list[str]:
        return list(input.to)


class GreetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "hello"
    allowed_names: list[str] = Field(default_factory=lambda: ["*"])


class NameIn(ToolInput):
    name: str


class Greeting(ToolOutput):
    text: str


class Greet(Tool[NameIn, Greeting]):
    """A tool with settings, to show which settings an agent gets."""

    name = "greet"
    group = "governed"
    description = "Greet someone."
    read_only = True
    config_model = GreetConfig

    async def execute(self, input: NameIn, ctx: ToolContext) -> Greeting:
        settings = ctx.config if isinstance(ctx.config, GreetConfig) else GreetConfig()
        if not any(fnmatch.fnmatchcase(input.name, p) for p in settings.allowed_names):
            raise ToolError(ErrorType.DENIED, f"'{input.name}' may not be greeted here.")
        return Greeting(text=f"{settings.greeting}, {input.name}")


def governed_tools() -> list[Tool]:  # type: ignore[type-arg]
    return [Shell(), WriteNote(), Peek(), Fetch(), Mail(), Greet()]


_builtin_catalog = Registry.default  # kept before any test swaps it


def catalog() -> Registry:
    """The built-in catalog plus the governed tools, as ``Registry.default()`` would give it."""
    registry = _builtin_catalog(entry_points=False)
    for item in governed_tools():
        registry.add(item)
    return registry
