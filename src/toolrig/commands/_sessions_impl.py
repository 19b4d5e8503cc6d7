"""The bodies of ``toolrig sessions``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from toolrig.agent.messages import TextBlock, ThinkingBlock, ToolCallBlock, ToolResultBlock
from toolrig.agent.session import DB_NAME, SessionInfo, SessionStore
from toolrig.commands._agent_common import fail
from toolrig.sandbox.paths import STATE_DIR_NAME


def _store(root: Path) -> SessionStore | None:
    state = root.resolve() / STATE_DIR_NAME
    return SessionStore.for_state_dir(state) if (state / DB_NAME).exists() else None


def _info_json(info: SessionInfo) -> dict[str, object]:
    return {
        "id": info.id,
        "title": info.title,
        "model": info.model,
        "provider": info.provider,
        "status": info.status,
        "created": info.created,
        "updated": info.updated,
        "turns": info.turns,
        "usage": info.usage.to_json(),
    }


def list_sessions(root: Path, *, as_json: bool, limit: int) -> None:
    store = _store(root)
    infos = store.recent(limit) if store else []
    if as_json:
        click.echo(json.dumps([_info_json(i) for i in infos], indent=2))
        return
    if not infos:
        click.echo("No sessions yet: `toolrig run` and `toolrig chat` record them here.")
        return
    for info in infos:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
        title = info.title.replace("\n", " ")
        title = title if len(title) <= 50 else title[:49] + "…"
        spend = f"{info.turns:>3} turns  ${info.usage.cost_usd:.4f}"
        click.echo(f"{info.id}  {when}  {info.model:<22} {spend}  {info.status:<11} {title}")


def show_session(root: Path, session_id: str, *, as_json: bool) -> None:
    store = _store(root)
    info = store.info(session_id) if store else None
    if store is None or info is None:
        fail(f"no session {session_id!r} here (see `toolrig sessions list`)")
    from toolrig.agent.errors import RunError

    try:
        messages = store.messages(session_id)
    except RunError as exc:
        fail(exc.message)
    if as_json:
        data = _info_json(info)
        data["messages"] = [m.to_json() for m in messages]
        data["tool_calls"] = [
            {"call_id": c.call_id, "turn": c.turn, "name": c.name, "args": c.args, "is_error": c.is_error,
             "preview": c.preview, "duration_ms": c.duration_ms}
            for c in store.tool_calls(session_id)
        ]  # fmt: skip
        data["turns_detail"] = store.turns(session_id)
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    u = info.usage
    click.echo(f"session {info.id}  {info.model} ({info.provider})  {info.status}")
    click.echo(f"{info.turns} turns, {u.input:,} in / {u.output:,} out / {u.cache_read:,} cached, ${u.cost_usd:.4f}\n")
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock) and block.text:
                click.echo(f"{message.role}: {block.text}")
            elif isinstance(block, ThinkingBlock) and block.text:
                click.echo(click.style(f"(thinking) {block.text}", dim=True))
            elif isinstance(block, ToolCallBlock):
                click.echo(f"  → {block.name} {block.arguments}")
            elif isinstance(block, ToolResultBlock):
                preview = block.content if len(block.content) <= 150 else block.content[:149] + "…"
                click.echo(f"  {'✗' if block.is_error else '✓'} {preview}")
