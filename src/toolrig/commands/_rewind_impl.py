"""The body of ``toolrig rewind`` / ``toolrig sessions rewind``: a session's file changes turned back."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from toolrig.cli import EXIT_USAGE
from toolrig.errors import ErrorType, ToolError

EXIT_REFUSED = 1  # refused (files changed since, a run going): the rewind was understood, and not done
_USAGE = (ErrorType.NOT_FOUND, ErrorType.INVALID_INPUT)  # no such session or turn: asked wrongly


def rewind_session(
    root: Path, session_id: str, to: str | None, *, list_only: bool, dry_run: bool, force: bool, as_json: bool
) -> None:
    from toolrig.rig import Rig
    from toolrig.stores.checkpoints import Checkpoints, rewind, turns

    with Rig(root) as rig:  # the workspace as config shapes it: its deny and read-only globs hold for a rewind
        workspace = rig.workspace
    if list_only:
        rows = turns(Checkpoints(workspace), session_id)
        if as_json:
            click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
            return
        if not rows:
            click.echo(f"Session {session_id} has no file changes to rewind.")
        for row in rows:
            shown = ", ".join(workspace.display(Path(p)) for p in row["files"]) or "-"
            click.echo(f"turn {row['turn']}: files {shown}")
            if row["commands_changed"]:
                click.echo(f"  changed by commands (not restorable): {', '.join(row['commands_changed'])}")
        return
    turn = 0 if to == "start" else (int(to) if to is not None else None)
    try:
        done = rewind(workspace, session_id, turn, force=force, dry_run=dry_run)
    except ToolError as exc:
        if as_json:
            click.echo(json.dumps({"type": "error", "kind": exc.error_type.value, "message": exc.message}))
        else:
            click.echo(f"toolrig: {exc.message}", err=True)
            if exc.error_type is ErrorType.NOT_FOUND:
                click.echo(f"See its turns with: toolrig rewind {session_id} --list", err=True)
        sys.exit(EXIT_USAGE if exc.error_type in _USAGE else EXIT_REFUSED)
    if as_json:
        click.echo(json.dumps({**done.to_dict(), "dry_run": dry_run}, indent=2, ensure_ascii=False))
        return
    verb = "Would rewind" if dry_run else "Rewound"
    click.echo(f"{verb} session {session_id} to before turn {done.turn}.")
    for label, paths in (("restored", done.restored), ("removed", done.removed), ("already so", done.unchanged)):
        if paths:
            click.echo(f"  {label}: {', '.join(paths)}")
    if done.conflicts:
        click.echo(f"  overwritten (forced): {', '.join(c.path for c in done.conflicts)}")
    if done.by_commands or not done.commands_complete:
        more = "" if done.commands_complete else " (the look was bounded: there may be more)"
        click.echo(f"  not restorable, changed by commands{more}: {', '.join(done.by_commands) or '-'}")
