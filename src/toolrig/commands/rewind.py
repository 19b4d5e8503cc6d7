"""``toolrig rewind SESSION [--to TURN]``: put the files an agent session changed back as they were."""

from __future__ import annotations

from pathlib import Path

import click

from toolrig.cli import root_option


def rewind_options(function: click.decorators.FC) -> click.decorators.FC:
    """The options ``toolrig rewind`` and ``toolrig sessions rewind`` share."""
    for option in reversed(
        [
            click.argument("session_id"),
            click.option(
                "--to",
                "to",
                metavar="TURN",
                default=None,
                help="Rewind to before this turn (start: all of it); default: the last turn that changed files.",
            ),
            click.option("--list", "list_only", is_flag=True, help="List the session's turns that changed files."),
            click.option("--dry-run", is_flag=True, help="Say what would be restored, change nothing."),
            click.option("--force", is_flag=True, help="Put back files changed since (overwrites those edits)."),
            click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
            root_option(),
        ]
    ):
        function = option(function)
    return function


def run(
    session_id: str, to: str | None, list_only: bool, dry_run: bool, force: bool, as_json: bool, rig_root: Path
) -> None:
    from toolrig.commands._rewind_impl import rewind_session

    if to is not None and to != "start" and not (to.isascii() and to.isdigit() and len(to) <= 9):
        raise click.BadParameter("a turn number, or 'start'", param_hint="--to")  # not '²', not 10**30
    rewind_session(rig_root, session_id, to, list_only=list_only, dry_run=dry_run, force=force, as_json=as_json)


@click.command("rewind")
@rewind_options
def command(**options: object) -> None:
    """Turn back what the file tools changed in a session, to before a turn (all or nothing).

    Covers write_file, edit, apply_patch and the other file tools, subagents' included; refuses, naming
    them, when files changed since outside the agent. Changes made by commands are listed, not restored.
    """
    run(**options)  # type: ignore[arg-type]
