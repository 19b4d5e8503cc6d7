"""The ``toolrig`` command.

Start-up stays fast because nothing heavy is imported until a command runs: groups are listed from the
built-in package directory, and tool modules (and their libraries) load only when a group is opened.
Exit codes: 0 success, 1 a tool reported an error, 2 bad usage or bad config.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from toolrig.approvals import ApprovalChannel
    from toolrig.config import LoadedConfig
    from toolrig.profiles import Face
    from toolrig.registry import AnyTool
    from toolrig.result import ToolResult
    from toolrig.rig import Rig

F = TypeVar("F", bound=Callable[..., Any])

EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2


_ROOT: dict[str, Any] = {
    "type": click.Path(file_okay=False, path_type=Path),
    "default": Path("."),
    "show_default": True,
}
ROOT_HELP = "Workspace directory the tools work in."


def root_option(help: str = ROOT_HELP) -> Callable[[F], F]:
    """``--root DIR``: the workspace a command works in, spelled the same way by every command."""
    return click.option("--root", "rig_root", help=help, **_ROOT)


def _root_option() -> click.Option:
    return click.Option(["--root", "rig_root"], help=ROOT_HELP, **_ROOT)


JSON_ERRORS = "toolrig.json_errors"  # ctx.meta flag: this command speaks JSON lines, errors included


def report_error(message: str, kind: str = "config") -> None:
    """One error for a person (stderr, prose) or, under ``--json``, one ``{"type": "error"}`` line on stdout."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(JSON_ERRORS):
        click.echo(json.dumps({"type": "error", "kind": kind, "message": message}, ensure_ascii=False))
    else:
        click.echo(f"toolrig: error: {message}", err=True)


def _fail(message: str) -> NoReturn:
    report_error(message)
    sys.exit(EXIT_USAGE)


def agent_option() -> Callable[[F], F]:
    """``--agent NAME``: act as a configured agent (its tools, settings, rules and limits)."""
    return click.option(
        "--agent", "agent", metavar="NAME", default=None, help="Act as this agent from `agents:` in config."
    )


def terminal_channel() -> ApprovalChannel | None:
    """The interactive approval prompt when a person is at the terminal (stdin is a TTY), else None."""
    if not sys.stdin.isatty():
        return None
    from toolrig.approvals.terminal import TerminalChannel

    return TerminalChannel()


def profile_option() -> Callable[[F], F]:
    """``--profile NAME``: the names and shapes of another system's tools (claude, codebuff, native, camelagi)."""
    from toolrig.profiles import NAMES

    return click.option(
        "--profile",
        "profile",
        type=click.Choice(NAMES),
        default=None,
        help="Show and call the tools under this profile's names and shapes (default: the agent's, else toolrig).",
    )


def make_rig(
    root: Path,
    *,
    agent: str | None = None,
    approval_channel: ApprovalChannel | None = None,
    profile: str | None = None,
) -> Rig:
    """The Rig a command works with; config, agent and usage mistakes exit 2 with the reason.

    ``agent`` names a profile in config's ``agents:`` or any agent type ``toolrig agents list`` shows (an
    organism.yaml listener, a Markdown definition): the same settings a spawned child of that type gets.
    """
    from toolrig.errors import ToolrigError
    from toolrig.rig import Rig
    from toolrig.workers import run_inline

    try:
        loaded = _with_agent_type(root, agent) if agent is not None else None
        rig = Rig(
            root, loaded, agent=agent, approval_channel=approval_channel, profile=profile, durable_runner=run_inline
        )
    except (ToolrigError, NotADirectoryError) as exc:
        _fail(str(exc))
    return rig


def _with_agent_type(root: Path, agent: str) -> LoadedConfig:
    from toolrig.agent.subagents.loading import load_agent_types
    from toolrig.config import load_config
    from toolrig.errors import UsageError

    loaded = load_config(root)
    if agent in loaded.config.agents:
        return loaded
    types = load_agent_types(root.resolve(), loaded, log_warnings=False)
    kind = types.get(agent)
    if kind is None:
        raise UsageError(
            f"no agent named {agent!r} is configured or defined (known: {', '.join(types.names())}); "
            "see `toolrig agents list`"
        )
    loaded.config.agents[agent] = kind.profile
    return loaded


def emit_result(result: ToolResult) -> NoReturn:
    click.echo(result.to_json(indent=2))
    if result.content:
        from toolrig.adapters.cli import content_summary

        for line in content_summary(result):
            click.echo(line, err=True)
    sys.exit(EXIT_TOOL_ERROR if result.is_error else 0)


def run_tool(tool: AnyTool, args: dict[str, Any], common: dict[str, Any]) -> None:
    rig = make_rig(common["rig_root"], approval_channel=terminal_channel())
    if tool.name not in rig.executor.registry:
        _fail(f"tool {tool.name!r} is not available here (denied by config)")
    emit_result(rig.call_sync(tool.name, args, origin="cli"))


# Botholomew's CLI names its tools GROUP VERB (seed 001: `botholomew context read notes/meeting.md --offset 10`,
# `context tree notes --max-depth 3`, `search semantic "quarterly revenue"`). The botholomew profile's faces
# answer there too (`toolrig context read ...`), called in that profile's names and shapes.
CLI_PROFILE = "botholomew"


def _profile_faces(group: str | None = None) -> list[Face]:
    from toolrig.profiles import get_profile

    faces = [f for f in get_profile(CLI_PROFILE).faces if "_" in f.name]
    return [f for f in faces if group is None or f.name.startswith(group + "_")]


def _profile_groups() -> set[str]:
    return {face.name.split("_", 1)[0] for face in _profile_faces()}


def run_face(tool: AnyTool, args: dict[str, Any], common: dict[str, Any]) -> None:
    rig = make_rig(common["rig_root"], approval_channel=terminal_channel(), profile=CLI_PROFILE)
    emit_result(rig.call_sync(tool.name, args, origin="cli"))


def _face_command(face: Face, verb: str) -> click.Command | None:
    """``toolrig context tree [PATH]``: the face's first parameter positional (optional when the face says so)."""
    from toolrig.adapters.cli import tool_command
    from toolrig.adapters.faces import FaceTool
    from toolrig.registry import Registry

    tool = Registry.default().find(face.tool)
    if tool is None:
        return None
    shown = FaceTool(face, tool)
    first = next(iter(face.schema.get("properties", {})), None)
    optional = first is not None and first not in face.schema.get("required", [])
    if optional:  # planned as required to make it positional, then let go: Botholomew's `context tree`
        schema = {**face.schema, "required": [first, *face.schema.get("required", [])]}
        shown.input_schema = lambda: json.loads(json.dumps(schema))  # type: ignore[method-assign]
    command = tool_command(shown, run_face, [_root_option()])
    command.name = verb
    for param in command.params:
        if optional and isinstance(param, click.Argument) and param.name == first:
            param.required = False
    return command


class ToolGroup(click.Group):
    """``toolrig <group>``: the tools of one group, loaded only when the group is opened."""

    def __init__(self, group: str) -> None:
        super().__init__(group, help=f"Tools of the {group} group.")
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        from toolrig.adapters.cli import tool_command
        from toolrig.registry import Registry

        for item in Registry.default().list(self.name):
            self.add_command(tool_command(item, run_tool, [_root_option()]))
        group = self.name or ""
        for face in _profile_faces(group):
            verb = face.name[len(group) + 1 :]
            if verb not in self.commands and (command := _face_command(face, verb)) is not None:
                self.add_command(command, verb)
        self._loaded = True

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._load()
        return super().get_command(ctx, cmd_name)


class InputError(click.ClickException):
    """An argument's value that cannot be used (a bad schedule, a time in the past): exit 2, as usage errors do."""

    exit_code = EXIT_USAGE


class _OneSpelling(click.ClickException):
    """Click's own errors said the way toolrig's are (``toolrig: error: ...``), with the same exit status.

    Click prints ``Error: ...`` for its usage errors and for ``ClickException``; toolrig's own errors read
    ``toolrig: error: ...``. One spelling lets a person (and a script grepping stderr) find every error.
    """

    def __init__(self, inner: click.ClickException, as_json: bool) -> None:
        super().__init__(inner.format_message())
        self.inner, self.as_json = inner, as_json
        self.exit_code = inner.exit_code  # type: ignore[misc]  # click declares it on the class; this one varies

    def show(self, file: IO[Any] | None = None) -> None:
        inner = self.inner
        if type(inner).show not in (click.ClickException.show, click.UsageError.show):
            inner.show(file)  # one with its own way of showing (no arguments: the help)
            return
        ctx = inner.ctx if isinstance(inner, click.UsageError) else None
        if ctx is not None:
            hint = f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.\n" if ctx.help_option_names else ""
            click.echo(f"{ctx.get_usage()}\n{hint}", err=True)
        if self.as_json:
            kind = "usage" if isinstance(inner, click.UsageError) else "error"
            click.echo(json.dumps({"type": "error", "kind": kind, "message": self.message}, ensure_ascii=False))
        else:
            click.echo(f"toolrig: error: {self.message}", err=True)


class Root(click.Group):
    """Commands defined here, then modules of ``toolrig.commands``, then tool groups."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            raise exc if isinstance(exc, _OneSpelling) else _OneSpelling(exc, as_json=False) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if isinstance(exc, _OneSpelling):
                raise
            raise _OneSpelling(exc, as_json=bool(ctx.meta.get(JSON_ERRORS))) from None

    def _load_command_modules(self) -> None:
        import importlib

        from toolrig.commands import command_names

        for name in command_names():
            if name not in self.commands:
                module = importlib.import_module(f"toolrig.commands.{name}")
                self.add_command(module.command, name.replace("_", "-"))

    def list_commands(self, ctx: click.Context) -> list[str]:
        from toolrig.tools import group_names

        self._load_command_modules()
        groups = sorted(set(group_names()) | _profile_groups())
        return [*super().list_commands(ctx), *(g for g in groups if g not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        from toolrig.commands import command_names

        if cmd_name.replace("-", "_") in command_names():
            self._load_command_modules()
            return super().get_command(ctx, cmd_name)
        from toolrig.tools import group_names

        if cmd_name in group_names() or _profile_faces(cmd_name):
            return ToolGroup(cmd_name)
        from toolrig.registry import Registry

        if any(t.group == cmd_name for t in Registry.default().list()):
            return ToolGroup(cmd_name)  # a plugin's group
        return None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from toolrig.tools import group_names

        groups = set(group_names()) | _profile_groups()
        self._load_command_modules()
        commands = sorted(self.commands.items())
        with formatter.section("Commands"):
            formatter.write_dl([(n, c.get_short_help_str(70)) for n, c in commands])
        with formatter.section("Tool groups (toolrig GROUP --help)"):
            formatter.write_dl([(g, f"Tools of the {g} group.") for g in sorted(groups)])
        formatter.write_paragraph()
        formatter.write_text("Plugin tools join their own groups; `toolrig tools list` shows every tool.")


@click.group(cls=Root, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="toolrig", prog_name="toolrig")
@click.option(
    "--strict",
    is_flag=True,
    help="Config warnings (a tool name that matches no tool...) are errors (TOOLRIG_STRICT=1).",
)
def app(strict: bool) -> None:
    """Real, safe, fast tools for LLM agents: list them, call them, serve them."""
    if strict:
        # Every Rig this process builds reads it, the MCP server's and an agent run's included.
        os.environ["TOOLRIG_STRICT"] = "1"


@app.group()
def tools() -> None:
    """Inspect the tool catalog."""


@tools.command("list")
@click.option("--group", "group", help="Only the tools of this group.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@agent_option()
@profile_option()
@root_option()
def tools_list(group: str | None, as_json: bool, agent: str | None, profile: str | None, rig_root: Path) -> None:
    """List the tools this workspace offers (to one agent, with --agent; under a profile's names, with --profile)."""
    rig = make_rig(rig_root, agent=agent, profile=profile)
    if group is not None:
        groups = sorted({t.group for t in rig.registry.list()})
        if group not in groups:
            _fail(f"no tool group named {group!r}; the groups are: {', '.join(groups)}")
    listed = rig.tools(group)
    if as_json:
        from toolrig.adapters.plain import json_tools

        click.echo(json.dumps(json_tools(listed), indent=2))
        return
    from toolrig.adapters.plain import summary

    # An MCP tool is listed as server/tool, the name config, audit and approvals use (models send server__tool).
    width = max((len(t.display_name or t.name) for t in listed), default=4)
    room = max(30, 110 - width - 20)
    for item in listed:
        flags = "".join(f for f, on in (("R", item.read_only), ("T", item.terminal)) if on)
        shown = item.display_name or item.name
        click.echo(f"{shown:<{width}}  {item.group:<12} {flags:<2}  {summary(item.description, room)}")


@tools.command("schema")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(["anthropic", "openai", "json"]), default="json", show_default=True)
@profile_option()
@root_option()
def tools_schema(name: str, fmt: str, profile: str | None, rig_root: Path) -> None:
    """Print one tool's schema as a provider receives it (under a profile's names, with --profile)."""
    rig = make_rig(rig_root, profile=profile)
    if rig.profile.is_identity:
        item = rig.registry.find(name)
    else:
        item = next((t for t in rig.tools() if t.name == name), None)
    if item is None:
        where = f" in the {rig.profile.name} profile" if not rig.profile.is_identity else ""
        _fail(f"no tool named {name!r}{where} (see `toolrig tools list`)")
    if fmt == "anthropic":
        from toolrig.adapters.anthropic import tool_param

        schema = tool_param(item)
    elif fmt == "openai":
        from toolrig.adapters.openai import function_tool

        schema = function_tool(item)
    else:
        from toolrig.adapters.plain import json_tool

        schema = json_tool(item)
    click.echo(json.dumps(schema, indent=2))


@tools.command("docs")
@click.argument("out", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--check", "check", type=click.Path(dir_okay=False, path_type=Path), help="Fail if FILE differs.")
def tools_docs(out: Path | None, check: Path | None) -> None:
    """Print the tool catalog as Markdown, every profile's names included (docs/tools.md is this output).

    With OUT, write it there instead; with --check FILE, fail (exit 1) when FILE differs from it.
    """
    from toolrig.adapters.markdown import catalog
    from toolrig.registry import Registry

    text = catalog(Registry.default(entry_points=False))
    if out is not None:
        from toolrig.sandbox.atomic import atomic_write_text

        atomic_write_text(out, text)
        click.echo(f"wrote {out}")
        return
    if check is None:
        click.echo(text, nl=False)
        return
    current = check.read_text(encoding="utf-8") if check.exists() else ""
    if current != text:
        click.echo(f"{check} is out of date: run `toolrig tools docs {check}`", err=True)
        sys.exit(EXIT_TOOL_ERROR)
    click.echo(f"{check} is up to date")


@app.command("call")
@click.argument("name")
@click.option("--json", "json_args", default="{}", metavar="JSON", help="The arguments, as one JSON object.")
@agent_option()
@profile_option()
@root_option()
def call(name: str, json_args: str, agent: str | None, profile: str | None, rig_root: Path) -> None:
    """Call a tool by name with JSON arguments; print the result as JSON.

    Policy, rate limits, approvals, hooks and the audit log apply as for an agent. When a call needs
    approval and stdin is a terminal, you are asked; otherwise `approvals.fallback` answers.
    """
    try:
        args = json.loads(json_args)
    except json.JSONDecodeError as exc:
        _fail(f"--json is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
    if not isinstance(args, dict):
        _fail('--json must be a JSON object, like \'{"expression": "1 + 1"}\'')
    rig = make_rig(rig_root, agent=agent, approval_channel=terminal_channel(), profile=profile)
    face = rig.profile.face(name)
    # Tools an agent may not use still get a `denied` result and audit row.
    if name not in rig.executor.registry and (face is None or face.tool not in rig.executor.registry):
        _fail(f"no tool named {name!r} here (see `toolrig tools list`)")
    emit_result(rig.call_sync(name, args, origin="cli"))


@app.command("trust")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."))
@click.option("--remove", is_flag=True, help="Stop trusting the directory.")
@click.option("--list", "show", is_flag=True, help="List trusted directories.")
def trust(directory: Path, remove: bool, show: bool) -> None:
    """Trust a workspace's own config (.toolrig/config.yaml) to widen access and start processes."""
    from toolrig.config import set_trust, trusted_directories

    if show:
        for path in trusted_directories():
            click.echo(str(path))
        return
    set_trust(directory, trusted=not remove)
    verb = "no longer trusted" if remove else "trusted"
    click.echo(f"{directory.resolve()} is {verb}.")


def main() -> None:
    import logging

    # Library warnings (an ignored setting in an untrusted workspace, a broken plugin) reach the terminal once.
    logging.basicConfig(format="toolrig: %(levelname)s: %(message)s", level=logging.WARNING)
    logging.addLevelName(logging.WARNING, "warning")
    logging.addLevelName(logging.ERROR, "error")
    app(prog_name="toolrig")
