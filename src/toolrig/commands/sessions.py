"""``toolrig sessions list|show|rewind``: the workspace's recorded agent sessions."""

from __future__ import annotations

from pathlib import Path

import click

from toolrig.cli import root_option
from toolrig.commands.rewind import rewind_options, run

_ROOT = root_option()


@click.group("sessions")
def command() -> None:
    """Agent sessions recorded in this workspace (.toolrig/sessions.db)."""


@command.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@_ROOT
def list_sessions(as_json: bool, limit: int, rig_root: Path) -> None:
    """The most recent sessions, newest first."""
    from toolrig.commands._sessions_impl import list_sessions as run

    run(rig_root, as_json=as_json, limit=limit)


@command.command("show")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@_ROOT
def show_session(session_id: str, as_json: bool, rig_root: Path) -> None:
    """One session's messages, tool calls and spend."""
    from toolrig.commands._sessions_impl import show_session as run

    run(rig_root, session_id, as_json=as_json)


@command.command("rewind")
@rewind_options
def rewind_session(**options: object) -> None:
    """Turn back what the file tools changed in a session, to before a turn (same as `toolrig rewind`)."""
    run(**options)  # type: ignore[arg-type]
