"""``toolrig audit``: read the audit log, one row per tool call, allowed or not."""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import click

from toolrig.cli import root_option

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """``15m``, ``2h``, ``7d`` ago, or a date/time (``2026-05-01``, ``2026-05-01T12:00``, local unless zoned)."""
    now = time.time() if now is None else now
    match = _DURATION.match(text)
    if match:
        return now - float(match.group(1)) * _UNITS[match.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is neither a duration (30s, 15m, 2h, 7d, 1w) nor a date/time (2026-05-01T12:00)"
        ) from None


def _short(value: object, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = "".join(c if c.isprintable() else " " for c in text)
    return text if len(text) <= width else text[: width - 1] + "…"


@click.command()
@click.option("--since", help="Only calls since a duration ago (30s, 15m, 2h, 7d) or a date/time (2026-05-01T12:00).")
@click.option("--tool", help="Only calls of tools matching this glob.")
@click.option("--agent", help="Only calls made by this agent.")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True, help="The newest N rows.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON array.")
@root_option()
def command(since: str | None, tool: str | None, agent: str | None, limit: int, as_json: bool, rig_root: Path) -> None:
    """Show the audit log: every tool call, who made it, what decided it and how it ended."""
    from toolrig.policy.audit import FILE_NAME, AuditLog
    from toolrig.sandbox.paths import STATE_DIR_NAME

    start = parse_since(since) if since else None
    state_dir = rig_root / STATE_DIR_NAME
    rows = []
    if (state_dir / FILE_NAME).exists():
        log = AuditLog(state_dir)
        try:
            rows = log.query(since=start, tool=tool, agent=agent, limit=limit)
        finally:
            log.close()
    if as_json:
        click.echo(json.dumps([row.to_json() for row in rows], indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo("no calls recorded" + (" that match" if since or tool or agent else ""), err=True)
        return
    header = ("time", "agent", "tool", "decision", "rule", "approval", "result", "ms", "arguments")
    table = [
        (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.ts)),
            row.agent or "-",
            f"{row.tool} (as {row.called_as})" if row.called_as else row.tool,
            row.decision,
            _short(row.rule or "-", 28),
            row.approval or "-",
            (row.error_type or "error") if row.is_error else "ok",
            f"{row.duration_ms:.1f}",
            _short(row.args, 60),
        )
        for row in rows
    ]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header) - 1)]
    for line in [header, *table]:
        cells = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True)]
        click.echo("  ".join([*cells, line[-1]]).rstrip())
    sys.stdout.flush()
