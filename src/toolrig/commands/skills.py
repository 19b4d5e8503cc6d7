"""``toolrig skills``: the Agent Skills this workspace offers (list, show, check), beside the skill tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolrig.cli import ToolGroup, root_option

if TYPE_CHECKING:
    from toolrig.skills.discovery import SkillSet

command = ToolGroup("skills")
command.help = "Agent Skills: list, show and check the skills found here; the skill tools are here too."

_root = root_option()


def _found(rig_root: Path) -> SkillSet:
    from toolrig.cli import make_rig
    from toolrig.skills.binding import skills_of

    rig = make_rig(rig_root)
    try:
        return skills_of(rig)
    finally:
        rig.close()


@command.command("list")
@_root
@click.option("--json", "as_json", is_flag=True, help="One JSON object per skill.")
def list_skills(rig_root: Path, as_json: bool) -> None:
    """The skills found, first of a name winning: project folders (trusted workspaces), then the user's."""
    found = _found(rig_root)
    for skill in found.skills.values():
        if as_json:
            item = {"name": skill.name, "description": skill.description, "scope": skill.scope}
            click.echo(json.dumps({**item, "location": str(skill.location)}, ensure_ascii=False))
        else:
            click.echo(f"{skill.name:24} {skill.scope:8} {skill.description[:80]}")
    for warning in found.warnings:
        click.echo(f"toolrig: warning: {warning}", err=True)
    if not found.skills and not as_json:
        click.echo("no skills found (searched: " + ", ".join(str(r.path) for r in found.roots) + ")", err=True)


@command.command("show")
@click.argument("name")
@_root
def show(name: str, rig_root: Path) -> None:
    """Print a skill: where it is, its front matter fields and its instructions."""
    found = _found(rig_root)
    skill = found.get(name)
    if skill is None:
        click.echo(f"toolrig: error: no skill named {name!r} (known: {', '.join(found.names()) or 'none'})", err=True)
        raise SystemExit(1)
    click.echo(
        f"name: {skill.name}\nlocation: {skill.location}\nscope: {skill.scope}\ndescription: {skill.description}"
    )
    for label, value in (("license", skill.license), ("compatibility", skill.compatibility)):
        if value:
            click.echo(f"{label}: {value}")
    if skill.allowed_tools:
        click.echo("allowed-tools: " + " ".join(skill.allowed_tools))
    click.echo("")
    click.echo(skill.body.rstrip())


@command.command("check")
@_root
def check(rig_root: Path) -> None:
    """Validate every skill found against the Agent Skills specification; exit 1 if anything is wrong."""
    found = _found(rig_root)
    for skill in found.skills.values():
        click.echo(f"ok      {skill.name} ({skill.location})" if not skill.warnings else f"warning {skill.name}")
    for warning in found.warnings:
        click.echo(f"  {warning}")
    raise SystemExit(1 if found.warnings else 0)
