"""Which session and turn a run's file changes belong to, for checkpoints (``toolrig.stores.checkpoints``).

A root run's changes belong to its own session, at the turn whose tool calls made them; a subagent's belong
to its root's session at the root's current turn, labelled with the subagent's agent id, so that rewinding the
session a person sees turns back what the agents under it did as well.
"""

from __future__ import annotations

from typing import Any

from toolrig.stores.checkpoints import Mark


def mark_of(run: Any) -> Mark | None:
    """The mark for ``run``'s calls now (``run`` is the loop's ``_Run``); None before it has a session."""
    root = run
    if run.lineage is not None:
        root = run.lineage.parent.root.run
    progress = getattr(root, "progress", None)
    if not root.session_id or progress is None:
        return None
    return Mark(root.session_id, max(progress.session_turn - 1, 0), run.agent_id)
