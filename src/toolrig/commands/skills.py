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
    from toolrig.catalog.binding import skills_of
    from toolrig.cli import make_rig

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


@command.command("install")
@click.argument("names", nargs=-1)
@click.option("--all", "install_all", is_flag=True, help="Install every skill toolrig ships.")
@click.option("--project", is_flag=True, help="Into this workspace's .toolrig/skills (default: ~/.toolrig/skills).")
@click.option("--force", is_flag=True, help="Replace a skill of the same name that is already installed.")
@_root
def install(names: tuple[str, ...], install_all: bool, project: bool, force: bool, rig_root: Path) -> None:
    """Install skills toolrig ships (mintlify, doc-reader, doc-author); without NAMES, list them."""
    from toolrig.sandbox.paths import STATE_DIR_NAME, toolrig_home
    from toolrig.skills.bundled import SHIPPED, install_skill

    if not names and not install_all:
        for name, description in SHIPPED.items():
            click.echo(f"{name:16} {description[:90]}")
        return
    unknown = [n for n in names if n not in SHIPPED]
    if unknown:
        click.echo(
            f"toolrig: error: toolrig ships no skill {', '.join(map(repr, unknown))} (it ships: {', '.join(SHIPPED)})",
            err=True,
        )
        raise SystemExit(2)
    target = (rig_root / STATE_DIR_NAME if project else toolrig_home()) / "skills"
    for name in SHIPPED if install_all else dict.fromkeys(names):
        try:
            where = install_skill(name, target, force=force)
        except FileExistsError as exc:
            click.echo(f"toolrig: error: {exc}; --force replaces it", err=True)
            raise SystemExit(1) from None
        click.echo(f"installed {name} -> {where}")
