"""``toolrig chat``: a terminal chat with the agent (streaming text, tool lines, approvals, Ctrl-C)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from toolrig.commands._agent_common import agent_options


@click.command("chat")
@agent_options
def command(rig_root: Path, **options: Any) -> None:
    """Talk to the agent in this workspace. Ctrl-C cancels the turn; /exit (or Ctrl-D) quits."""
    from toolrig.commands._chat_impl import chat

    chat(rig_root, **options)
