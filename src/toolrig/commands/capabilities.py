"""``toolrig capabilities [--refresh]``: what an agent may do here, and what the policy says of it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolrig.cli import ToolGroup, _root_option

if TYPE_CHECKING:
    from toolrig.rig import Rig

command = ToolGroup("capabilities")
command.help = "Show the capabilities summary (.toolrig/capabilities.md); --refresh rebuilds it from the policy."
command.invoke_without_command = True
command.no_args_is_help = False  # set from invoke_without_command at construction: the summary is the default


command.params += [
    click.Option(["--refresh"], is_flag=True, help="Rebuild it from the tools and policy in force first."),
    click.Option(["--agent", "agent"], metavar="NAME", default=None, help="For this agent or agent type."),
    _root_option(),
]


@click.pass_context
def show(ctx: click.Context, refresh: bool, agent: str | None, rig_root: Path) -> None:
    if ctx.invoked_subcommand is not None:
        return
    import anyio

    from toolrig.catalog import capabilities
    from toolrig.cli import make_rig

    rig = make_rig(rig_root, agent=agent)
    try:
        text = anyio.run(_refresh, rig) if refresh else capabilities.current(rig, agent)
    finally:
        rig.close()
    click.echo(text.rstrip())


command.callback = show


async def _refresh(rig: Rig) -> str:
    """Refresh through the rig's catalog, with the configured model phrasing the themes when there is one."""
    from toolrig.catalog.binding import RigCatalog
    from toolrig.errors import ToolError

    catalog = rig.executor.catalog
    if not isinstance(catalog, RigCatalog):
        raise click.UsageError("this rig has no tool catalog bound")
    provider = None
    if rig.config.llm.model:
        from toolrig.agent.capabilities import run_catalog
        from toolrig.agent.errors import RunError
        from toolrig.agent.providers import make_provider, settings_from

        try:
            provider = make_provider(settings_from(rig.config.llm))
        except RunError as exc:
            click.echo(f"toolrig: warning: grouping by tool group: {exc.message}", err=True)
        else:
            catalog = run_catalog(rig, provider)
    async with rig:
        try:
            text, _ = await catalog.refresh_capabilities(rig.agent)
        except ToolError as exc:  # a committed link where the file goes: refused, said plainly
            raise click.ClickException(f"{exc.message} {exc.next_action_hint or ''}".strip()) from None
        finally:
            if provider is not None:
                await provider.aclose()
    return text
