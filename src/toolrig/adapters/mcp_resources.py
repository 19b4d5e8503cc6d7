"""What toolrig has, served as MCP resources and prompts: skills, memory files, the capabilities summary, outputs.

Trust model: the client is as trusted as for tools, and no more. Every read is a call of the read-only
tool that already reads that thing (``load_skill``, ``memory_get``, ``capabilities_refresh``,
``read_output``), made through the rig's executor with ``origin="mcp"``: policy rules, per-agent
narrowing, approvals, rate limits, hooks and audit apply exactly as to a ``tools/call``, and a resource
whose tool is not offered is not listed. A URI is parsed strictly; anything else is "not found".

A tool can serve a resource of its own: a read-only tool that sets ``resource_uri`` (a URI, or a
template such as ``notes://{topic}`` whose variables are its arguments) is read by calling it; its
output's one text field, or else its output as JSON, is the resource's text. A result that carries
content parts (``toolrig.content``: an image, audio, an embedded resource) is served as those parts
instead: bytes as ``BlobResourceContents`` with their media type, text as text. One content model for
tool results, resource reads and prompt messages.

URIs: ``skill://NAME``, ``skill://NAME/PATH`` (a file in the skill's folder, read by
``read_skill_resource``), ``memory://PATH`` (MEMORY.md, memory.md, memory/...), ``toolrig://capabilities``
and ``toolrig://outputs/HANDLE``. A skill is also a prompt: its front matter may declare ``arguments``
(names, or ``{name, description, required, values}``); ``$ARGUMENTS`` and ``${name}`` in its body are
filled in, and ``values`` are what ``completion/complete`` offers. Its front matter may also list files of
its own folder under ``embed``: each becomes a message before the text, an image as an image, any other
text file as an embedded resource ``skill://NAME/PATH``. The list is the skill's, never an argument's, and
each file is read by ``read_skill_resource`` through the gate (its no-follow walk, its size and type checks).
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolrig.adapters.mcp_prompts import Argument as Argument  # re-exported: defined here before mcp_prompts
from toolrig.adapters.mcp_prompts import fill as fill
from toolrig.adapters.mcp_prompts import part_size as part_size
from toolrig.adapters.mcp_prompts import prompt_arguments as prompt_arguments
from toolrig.adapters.mcp_prompts import prompt_embeds as prompt_embeds
from toolrig.adapters.served import ServedRig
from toolrig.content import AudioPart, ContentPart, ImagePart, ResourcePart, TextPart
from toolrig.result import ToolResult

SKILL_SCHEME = "skill://"
MEMORY_SCHEME = "memory://"
CAPABILITIES_URI = "toolrig://capabilities"
OUTPUTS_PREFIX = "toolrig://outputs/"
MAX_LISTED_MEMORY_FILES = 500
MAX_EMBEDS = 8  # files one prompt embeds
MAX_EMBEDDED_BYTES = 10_000_000  # all of one prompt's embedded files together
_SKILL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # what skill discovery accepts
_MEMORY_PATH = re.compile(r"^(MEMORY\.md|memory\.md|memory/[^\x00]+)$")
_HANDLE = re.compile(r"^out_[0-9a-f]{16}$")
_NUMBERED = re.compile(r"^\d+: ", re.MULTILINE)

Call = Callable[[Any, str, dict[str, Any]], Awaitable[ToolResult]]  # (the request's context, tool, args)


@dataclass(frozen=True, slots=True)
class Read:
    """How one URI is read: the tool, its arguments, and how its output becomes the resource's text."""

    tool: str
    args: dict[str, Any]
    text: Callable[[Any], str]
    mime: str | Callable[[Any], str] = "text/markdown"

    def media_type(self, output: Any) -> str:
        return self.mime if isinstance(self.mime, str) else self.mime(output)


def route(uri: str) -> Read | None:
    """The read a URI stands for, or None (not one of ours, or malformed: both are "not found")."""
    if uri.startswith(SKILL_SCHEME):
        name, slash, path = uri.removeprefix(SKILL_SCHEME).partition("/")
        if not _SKILL_NAME.match(name):
            return None
        if not slash:
            return Read("load_skill", {"name": name}, _instructions)
        return Read("read_skill_resource", {"name": name, "path": path}, _whole_file, _file_type) if path else None
    if uri.startswith(MEMORY_SCHEME):
        path = uri.removeprefix(MEMORY_SCHEME)
        if not _MEMORY_PATH.match(path) or ".." in Path(path).parts or "\\" in path:
            return None
        return Read("memory_get", {"file_path": path}, _unnumbered)
    if uri == CAPABILITIES_URI:
        return Read("capabilities_refresh", {}, _summary)
    if uri.startswith(OUTPUTS_PREFIX):
        handle = uri.removeprefix(OUTPUTS_PREFIX)
        return (
            Read("read_output", {"handle": handle, "limit": 50_000}, _page, "application/json")
            if _HANDLE.match(handle)
            else None
        )
    return None


def _instructions(output: Any) -> str:
    return str(output.get("instructions", "")) if isinstance(output, dict) else ""


def _whole_file(output: Any) -> str:
    """A skill file's text; a served file is whole or refused, never silently cut."""
    if not isinstance(output, dict):
        return ""
    if output.get("truncated"):
        message = f"{output.get('path')!r} is too large to serve whole."
        raise _error(-32602, message, {"error_type": "too_large"})
    return str(output.get("content", ""))


def _file_type(output: Any) -> str:
    return str(output.get("media_type") or "text/plain") if isinstance(output, dict) else "text/plain"


def _unnumbered(output: Any) -> str:
    return _NUMBERED.sub("", str(output.get("content", ""))) if isinstance(output, dict) else ""


def _summary(output: Any) -> str:
    if isinstance(output, dict):
        for key in ("summary", "text", "content"):
            if isinstance(output.get(key), str):
                return str(output[key])
    return str(output)


def _page(output: Any) -> str:
    return str(output.get("content", "")) if isinstance(output, dict) else ""


def memory_files(root: Path) -> list[str]:
    """The workspace's memory files, relative and '/'-separated; links are not followed."""
    found = [name for name in ("MEMORY.md", "memory.md") if _regular(root / name)]
    base = root / "memory"
    if base.is_dir() and not base.is_symlink():
        for directory, dirs, files in os.walk(base, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                path = Path(directory, name)
                if name.endswith(".md") and _regular(path):
                    found.append(path.relative_to(root).as_posix())
                    if len(found) >= MAX_LISTED_MEMORY_FILES:
                        return found
    return found


def _regular(path: Path) -> bool:
    return not path.is_symlink() and path.is_file()


def signature(root: Path, uri: str, capabilities: Path) -> tuple[int, int] | None:
    """What changes when the resource does (mtime and size of its file); None: it has no file to watch."""
    if uri.startswith(MEMORY_SCHEME) and route(uri) is not None:
        path = root / uri.removeprefix(MEMORY_SCHEME)
    elif uri == CAPABILITIES_URI:
        path = capabilities
    else:
        return None
    try:
        stat = path.lstat()
    except OSError:
        return (0, -1)
    return (stat.st_mtime_ns, stat.st_size)


_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class ToolResource:
    """A resource a read-only tool declares (``resource_uri``): reading it calls the tool."""

    uri: str
    tool: str
    description: str
    pattern: re.Pattern[str]

    @property
    def is_template(self) -> bool:
        return bool(_VARIABLE.search(self.uri))

    def read(self, uri: str) -> Read | None:
        match = self.pattern.fullmatch(uri)
        return Read(self.tool, dict(match.groupdict()), _tool_text, "text/plain") if match else None


def tool_resource(tool: Any) -> ToolResource | None:
    """The resource a tool declares, if it is read-only and declares one (anything else is ignored)."""
    uri = getattr(tool, "resource_uri", None)
    if not isinstance(uri, str) or not uri or not tool.read_only or len(uri) > 500:
        return None
    parts, last = [], 0
    for match in _VARIABLE.finditer(uri):
        parts += [re.escape(uri[last : match.start()]), f"(?P<{match.group(1)}>[^/?#]+)"]
        last = match.end()
    parts.append(re.escape(uri[last:]))
    try:
        pattern = re.compile("".join(parts))
    except re.error:  # a variable named twice
        return None
    return ToolResource(uri, tool.name, tool.description, pattern)


def _tool_text(output: Any) -> str:
    import json

    if isinstance(output, dict):
        texts = [value for value in output.values() if isinstance(value, str)]
        if len(output) == 1 and texts:
            return texts[0]
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"))


def resource_contents(uri: str, parts: list[ContentPart]) -> list[Any]:
    """A result's content parts as a resource's contents: bytes as blobs with their media type, text as text.

    An image or audio part is the resource itself (its URI is the one read); an embedded resource part
    names itself, so it keeps its own URI.
    """
    from mcp.types import BlobResourceContents, TextResourceContents

    from toolrig.adapters.mcp_content import mcp_content

    contents: list[Any] = []
    for part in parts:
        if isinstance(part, TextPart):
            contents.append(TextResourceContents(uri=uri, mime_type="text/plain", text=part.text))
        elif isinstance(part, ImagePart | AudioPart):
            contents.append(BlobResourceContents(uri=uri, mime_type=part.media_type, blob=part.data))
        else:
            (block,) = mcp_content([part])
            contents.append(block.resource)  # type: ignore[union-attr]
    return contents


def embedded_part(name: str, result: ToolResult) -> ContentPart:
    """One file ``read_skill_resource`` read, as a prompt message's part: its image, or an embedded resource."""
    output = result.output if isinstance(result.output, dict) else {}
    uri = f"{SKILL_SCHEME}{name}/{output.get('path', '')}"
    images = [part for part in result.content if isinstance(part, ImagePart)]
    if images:
        return images[0]
    return ResourcePart(uri=uri, media_type=_file_type(output), text=_whole_file(output))


@dataclass
class Subscriptions:
    """Who subscribed to which URI, and what each resource looked like when they did."""

    by_uri: dict[str, dict[str, Any]] = field(default_factory=dict)  # uri -> {connection: its session}
    seen: dict[str, tuple[int, int] | None] = field(default_factory=dict)

    MAX_URIS = 1000

    def add(self, uri: str, connection: str, session: Any, now: tuple[int, int] | None) -> None:
        if uri not in self.by_uri and len(self.by_uri) >= self.MAX_URIS:
            raise ValueError("too many subscriptions")
        self.by_uri.setdefault(uri, {})[connection] = session
        self.seen.setdefault(uri, now)

    def remove(self, uri: str, connection: str) -> None:
        sessions = self.by_uri.get(uri)
        if sessions is not None:
            sessions.pop(connection, None)
            if not sessions:
                del self.by_uri[uri]
                self.seen.pop(uri, None)


# ------------------------------------------------------------------------------------------ handlers


class ServedResources:
    """The MCP handlers for resources, prompts and completion, over one rig; ``call`` is its gated tool call."""

    def __init__(self, rig: ServedRig, call: Call) -> None:
        self.rig = rig
        self.call = call
        self.subscriptions = Subscriptions()

    def _offered(self) -> set[str]:
        return {tool.name for tool in self.rig.tools()}

    def _tool_resources(self) -> list[ToolResource]:
        return [found for tool in self.rig.tools() if (found := tool_resource(tool)) is not None]

    def route(self, uri: str) -> Read | None:
        """Ours first (a tool cannot take over ``skill://``), then the tools' own."""
        read = route(uri)
        if read is not None or len(uri) > 2000:
            return read
        for resource in self._tool_resources():
            if (read := resource.read(uri)) is not None:
                return read
        return None

    def _skills(self) -> list[Any]:
        from toolrig.skills.discovery import workspace_skills

        found = workspace_skills(self.rig.workspace.root, self.rig.config.skills.paths)
        return [skill for name in found.names() if (skill := found.get(name)) is not None]

    def _capabilities_path(self) -> Path:
        from toolrig.skills import CAPABILITIES_FILE

        return Path(self.rig.workspace.state_dir) / CAPABILITIES_FILE

    async def list_resources(self, ctx: Any, params: Any) -> Any:
        from mcp.types import ListResourcesResult, Resource

        offered = self._offered()
        resources: list[Resource] = []
        if "load_skill" in offered:
            resources += [
                Resource(
                    uri=f"{SKILL_SCHEME}{s.name}", name=s.name, description=s.description, mime_type="text/markdown"
                )
                for s in self._skills()
            ]
        if "memory_get" in offered:
            resources += [
                Resource(uri=f"{MEMORY_SCHEME}{p}", name=p, description="A memory file.", mime_type="text/markdown")
                for p in await self._readable_memory()
            ]
        if "capabilities_refresh" in offered:
            description = "What the tools here can do, and what the policy in force says of each."
            resources.append(
                Resource(uri=CAPABILITIES_URI, name="capabilities", description=description, mime_type="text/markdown")
            )
        resources += [
            # No media type: a tool's resource is text or, when its result carries parts, whatever they are.
            Resource(uri=r.uri, name=r.tool, description=r.description)
            for r in self._tool_resources()
            if not r.is_template
        ]
        return ListResourcesResult(resources=resources)

    async def list_templates(self, ctx: Any, params: Any) -> Any:
        from mcp.types import ListResourceTemplatesResult, ResourceTemplate

        templates = [
            ("load_skill", f"{SKILL_SCHEME}{{name}}", "skill", "An Agent Skill's instructions, by name."),
            ("memory_get", f"{MEMORY_SCHEME}{{path}}", "memory", "A memory file: MEMORY.md or memory/...."),
            ("read_output", f"{OUTPUTS_PREFIX}{{handle}}", "output", "A tool output too large to show whole."),
        ]
        offered = self._offered()
        templates += [(r.tool, r.uri, r.tool, r.description) for r in self._tool_resources() if r.is_template]
        return ListResourceTemplatesResult(
            resource_templates=[
                ResourceTemplate(uri_template=uri, name=name, description=text)
                for tool, uri, name, text in templates
                if tool in offered
            ]
        )

    async def read(self, ctx: Any, params: Any) -> Any:
        from mcp.types import ReadResourceResult, TextResourceContents

        uri = str(params.uri)
        read = self.route(uri)
        if read is None:
            raise _not_found(uri)
        result = await self.call(ctx, read.tool, read.args)
        if result.is_error:
            raise _refused(uri, result)
        if result.content:
            return ReadResourceResult(contents=resource_contents(uri, result.content))
        text = read.text(result.output)
        return ReadResourceResult(
            contents=[TextResourceContents(uri=uri, mime_type=read.media_type(result.output), text=text)]
        )

    async def subscribe(self, ctx: Any, params: Any) -> Any:
        from mcp.types import EmptyResult

        from toolrig.adapters.mcp_logging import connection_key

        uri = str(params.uri)
        if self.route(uri) is None or not await self._readable(uri):
            raise _not_found(uri)  # what a read would refuse is not watched either (nor said to exist)
        try:
            self.subscriptions.add(uri, connection_key(ctx), ctx.session, self._signature(uri))
        except ValueError as exc:
            raise _error(-32602, f"Cannot subscribe to {uri}: {exc}.") from None
        return EmptyResult()

    async def unsubscribe(self, ctx: Any, params: Any) -> Any:
        from mcp.types import EmptyResult

        from toolrig.adapters.mcp_logging import connection_key

        self.subscriptions.remove(str(params.uri), connection_key(ctx))
        return EmptyResult()

    async def _readable(self, uri: str) -> bool:
        """Whether a read of ``uri`` would pass the checks a read meets, without reading or asking anyone.

        Listing, completion and subscription answer with names; a name a read would refuse (``deny_globs``,
        a deny rule on the tool or the path) must not be revealed or watched through them either.
        """
        read = self.route(uri)
        if read is None:
            return False
        if uri.startswith(MEMORY_SCHEME):
            from toolrig.errors import ToolError

            try:
                self.rig.workspace.resolve(uri.removeprefix(MEMORY_SCHEME))
            except (ToolError, OSError, ValueError):
                return False
        _, refused = await self.rig.decide(read.tool, read.args)
        return refused is None

    async def _readable_memory(self) -> list[str]:
        return [p for p in memory_files(self.rig.workspace.root) if await self._readable(f"{MEMORY_SCHEME}{p}")]

    def _signature(self, uri: str) -> tuple[int, int] | None:
        return signature(self.rig.workspace.root, uri, self._capabilities_path())

    async def notify_changes(self) -> None:
        """After a call: tell each subscriber about the resources it watches that changed."""
        for uri, sessions in list(self.subscriptions.by_uri.items()):
            now = self._signature(uri)
            if now == self.subscriptions.seen.get(uri):
                continue
            self.subscriptions.seen[uri] = now
            for key, session in list(sessions.items()):
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # a client gone away: it hears nothing more
                    sessions.pop(key, None)

    async def list_prompts(self, ctx: Any, params: Any) -> Any:
        from mcp.types import ListPromptsResult, Prompt, PromptArgument

        if "load_skill" not in self._offered():
            return ListPromptsResult(prompts=[])
        prompts = []
        for skill in self._skills():
            arguments = [
                PromptArgument(name=a.name, description=a.description, required=a.required)
                for a in prompt_arguments(skill.extra, skill.body)
            ]
            prompts.append(Prompt(name=skill.name, description=skill.description, arguments=arguments or None))
        return ListPromptsResult(prompts=prompts)

    async def get_prompt(self, ctx: Any, params: Any) -> Any:
        from mcp.types import GetPromptResult, PromptMessage, TextContent

        skill = self._skill(params.name)
        given = {str(k): str(v) for k, v in (params.arguments or {}).items()}
        arguments = prompt_arguments(skill.extra, skill.body)
        missing = [a.name for a in arguments if a.required and not given.get(a.name)]
        if missing:
            raise _error(-32602, f"The prompt {params.name!r} needs the argument(s): {', '.join(missing)}.")
        # The files first: a prompt refused for one of them has not loaded the skill (nor granted its tools).
        messages = [PromptMessage(role="user", content=block) for block in await self._embedded(ctx, skill)]
        result = await self.call(ctx, "load_skill", {"name": skill.name})
        if result.is_error:
            raise _refused(f"{SKILL_SCHEME}{skill.name}", result)
        text = fill(_instructions(result.output) or skill.body, arguments, given)
        messages.append(PromptMessage(role="user", content=TextContent(text=text)))
        return GetPromptResult(description=skill.description, messages=messages)

    async def _embedded(self, ctx: Any, skill: Any) -> list[Any]:
        """The files the skill embeds, each read through the gate as ``read_skill_resource``, as MCP blocks."""
        from toolrig.adapters.mcp_content import mcp_content

        paths = prompt_embeds(skill.extra)
        if len(paths) > MAX_EMBEDS:
            raise _error(-32602, f"The prompt {skill.name!r} embeds {len(paths)} files; at most {MAX_EMBEDS}.")
        parts: list[ContentPart] = []
        left = MAX_EMBEDDED_BYTES
        for path in paths:
            result = await self.call(ctx, "read_skill_resource", {"name": skill.name, "path": path})
            if result.is_error:
                raise _refused(f"{SKILL_SCHEME}{skill.name}/{path}", result)
            part = embedded_part(skill.name, result)
            left -= part_size(part)
            if left < 0:
                message = f"The prompt {skill.name!r} embeds more than {MAX_EMBEDDED_BYTES:,} bytes of files."
                raise _error(-32602, message)
            parts.append(part)
        return mcp_content(parts)

    def _skill(self, name: str) -> Any:
        if "load_skill" in self._offered():
            for skill in self._skills():
                if skill.name == name:
                    return skill
        raise _error(-32602, f"There is no prompt called {name!r}.")

    async def complete(self, ctx: Any, params: Any) -> Any:
        from mcp.types import CompleteResult, Completion

        ref, argument = params.ref, params.argument
        prefix = argument.value or ""
        values: list[str] = []
        if getattr(ref, "type", None) == "ref/prompt":
            skill = self._skill(ref.name)
            for declared in prompt_arguments(skill.extra, skill.body):
                if declared.name == argument.name:
                    values = list(declared.values)
        elif getattr(ref, "type", None) == "ref/resource":
            if ref.uri == f"{SKILL_SCHEME}{{name}}" and argument.name == "name" and "load_skill" in self._offered():
                values = [skill.name for skill in self._skills()]
            elif ref.uri == f"{MEMORY_SCHEME}{{path}}" and argument.name == "path" and "memory_get" in self._offered():
                values = await self._readable_memory()
        matching = [v for v in values if v.startswith(prefix)]
        return CompleteResult(
            completion=Completion(values=matching[:100], total=len(matching), has_more=len(matching) > 100)
        )


def _error(code: int, message: str, data: Any = None) -> Exception:
    from mcp.shared.exceptions import MCPError

    return MCPError(code, message, data)


def _not_found(uri: str) -> Exception:
    return _error(-32002, f"Resource not found: {uri}", {"uri": uri})


def _refused(uri: str, result: ToolResult) -> Exception:
    """A read the gate refused (or that failed): the tool's error, as the client's error."""
    from toolrig.errors import ErrorType

    code = -32002 if result.error_type == ErrorType.NOT_FOUND else -32602
    data: dict[str, Any] = {"uri": uri, "error_type": str(result.error_type)}
    if result.next_action_hint:
        data["next_action_hint"] = result.next_action_hint
    return _error(code, f"Cannot read {uri}: {result.message or 'the read failed'}", data)
