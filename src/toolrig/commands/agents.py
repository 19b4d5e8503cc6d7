"""``toolrig agents list|show``: the agent types a run may spawn here, and where each was defined."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolrig.cli import ToolGroup, root_option

if TYPE_CHECKING:
    from toolrig.agent.subagents.types import AgentTypes

command = ToolGroup("agents")
command.help = (
    "Agent types (config `agents:`, organism.yaml listeners, .toolrig/agents, .agents/agents, .claude/agents, "
    "~/.toolrig/agents): "
    "list and show them; the delegation tools are here too."
)

_root = root_option()


def _types(rig_root: Path) -> AgentTypes:
    from toolrig.agent.subagents.loading import load_agent_types
    from toolrig.cli import make_rig
    from toolrig.errors import ConfigError

    rig = make_rig(rig_root)
    try:
        return load_agent_types(rig.workspace.root, rig.loaded, log_warnings=False)
    except ConfigError as exc:  # a malformed organism.yaml: the file and key, like any config error
        click.echo(f"toolrig: error: {exc}", err=True)
        raise SystemExit(2) from None
    finally:
        rig.close()


@command.command("list")
@_root
@click.option("--json", "as_json", is_flag=True, help="One JSON object per agent type.")
def list_agents(rig_root: Path, as_json: bool) -> None:
    """The agent types, first definition winning: config, organism.yaml and project (trusted only), user, built-in."""
    found = _types(rig_root)
    for kind in found.types.values():
        if as_json:
            item = {"name": kind.name, "description": kind.description, "source": kind.source}
            click.echo(json.dumps({**item, "location": kind.location}, ensure_ascii=False))
        else:
            click.echo(f"{kind.name:24} {kind.source:8} {_one_line(kind.description, 70)}  ({kind.location})")
    for warning in found.warnings:
        click.echo(f"toolrig: warning: {warning}", err=True)


def _one_line(text: str, width: int) -> str:
    """A description on one line of at most ``width``, cut between words and marked as cut (``…``)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    if len(flat) <= width:
        return flat
    cut = flat[: width - 1]
    if flat[width - 1] != " " and " " in cut:  # mid-word: drop the partial word
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(".:;,( ") + "…"


@command.command("show")
@click.argument("name")
@_root
@click.option("--json", "as_json", is_flag=True, help="The type's settings as JSON.")
def show(name: str, rig_root: Path, as_json: bool) -> None:
    """One agent type: where it came from, its settings and its system prompt."""
    found = _types(rig_root)
    kind = found.get(name)
    if kind is None:
        click.echo(f"toolrig: error: no agent type {name!r} (known: {', '.join(found.names())})", err=True)
        raise SystemExit(1)
    settings = kind.profile.model_dump(mode="json", exclude_defaults=True)
    prompt = settings.pop("system_prompt", None)
    if as_json:
        data = {"name": kind.name, "source": kind.source, "location": kind.location, **settings}
        click.echo(json.dumps({**data, "system_prompt": prompt}, ensure_ascii=False, indent=2))
        return
    click.echo(f"{kind.name} ({kind.source}: {kind.location})")
    for key, value in settings.items():
        click.echo(f"  {key}: {json.dumps(value, ensure_ascii=False)}")
    if prompt:
        click.echo("")
        click.echo(prompt)
