"""Shared by ``toolrig cron``, ``tasks`` and ``worker``: open the workspace's durable access, print rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolrig.cli import InputError, root_option

if TYPE_CHECKING:
    from toolrig.durable.access import DurableAccess

ROOT = root_option()
JSON = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


def open_access(root: Path) -> DurableAccess:
    from toolrig.config import load_config
    from toolrig.durable.access import DurableAccess
    from toolrig.sandbox.paths import Workspace
    from toolrig.workers import run_inline

    workspace = Workspace(root)
    return DurableAccess(workspace.root, load_config(root).config, workspace.state_dir, runner=run_inline)


@contextmanager
def errors(*, checks_input: bool = False) -> Iterator[None]:
    """A DurableError or a store's ToolError becomes a message on stderr, never a traceback.

    Exit status 1; 2 under ``checks_input`` when the command's own arguments are invalid (a schedule, a time),
    as for a usage error. A task that already ended is a state, not a bad argument: 1.

    A store refuses on purpose, for example a state file that a repository committed as a symlink.
    """
    from toolrig.durable.api import DurableError
    from toolrig.errors import ToolError

    try:
        yield
    except DurableError as exc:
        message = exc.message + (f" {exc.hint}" if exc.hint else "")
        if checks_input and exc.kind == "invalid":
            raise InputError(message) from None
        raise click.ClickException(message) from None
    except ToolError as exc:
        hint = exc.next_action_hint
        raise click.ClickException(exc.message + (f" {hint}" if hint else "")) from None


def emit(rows: list[dict[str, Any]] | dict[str, Any], as_json: bool, columns: tuple[str, ...] = ()) -> None:
    if as_json or not isinstance(rows, list):
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
        return
    if not rows:
        click.echo("nothing to show", err=True)
        return
    table = [tuple(_cell(row.get(c)) for c in columns) for row in rows]
    widths = [max(len(r[i]) for r in [columns, *table]) for i in range(len(columns))]
    for line in [columns, *table]:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


def _cell(value: Any) -> str:
    text = "-" if value is None else str(value)
    text = "".join(c if c.isprintable() else " " for c in text)
    return text if len(text) <= 48 else text[:47] + "…"
