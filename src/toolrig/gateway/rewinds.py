"""Rewinding a session's file changes from the gateway: the same checkpoints ``toolrig rewind`` turns back.

Why its own module: a rewind changes the workspace on a person's word, so it is checked as the session reads
are (another user's session is as unknown as a made-up id), refused with the names of the files a person edited
(unless forced), and audited with who asked, the session, the turn and the files. Everything here runs in a
worker thread: reading the log and putting files back are file I/O.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolrig.errors import ErrorType, ToolError
from toolrig.gateway import reads
from toolrig.gateway.owners import Viewer

if TYPE_CHECKING:
    from toolrig.rig import Rig
    from toolrig.stores.checkpoints import RewindPlan

log = logging.getLogger("toolrig.gateway")

RULE = "gateway.rewind"


class RewindRefused(Exception):
    """A rewind that did not happen: its status, a reason, and the plan when there is one (the files named)."""

    def __init__(self, status: int, message: str, plan: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.plan = plan


def list_turns(rig: Rig, session_id: str, viewer: Viewer) -> list[dict[str, Any]]:
    """The session's turns that changed files, each with its files as the workspace shows them."""
    from toolrig.stores.checkpoints import Checkpoints, turns

    reads.require(rig, session_id, viewer)
    workspace = rig.workspace
    return [
        {**row, "files": [workspace.display(Path(p)) for p in row["files"]]}
        for row in turns(Checkpoints(workspace), session_id)
    ]


def rewind(rig: Rig, session_id: str, turn: int, viewer: Viewer, *, dry_run: bool, force: bool) -> dict[str, Any]:
    """Plan the rewind (a dry run stops there), else put the files back all or nothing, and audit it."""
    from toolrig.stores.checkpoints.lease import rewind_lease

    reads.require(rig, session_id, viewer)
    if dry_run:
        return _planned(rig, session_id, turn, viewer, dry_run=True, force=force)
    try:  # the lease: refused while a run of the session goes in any process; two rewinds wait for each other
        with rewind_lease(rig.workspace.state_dir, session_id):
            return _planned(rig, session_id, turn, viewer, dry_run=False, force=force)
    except ToolError as exc:
        raise _refused(exc) from None


def _planned(rig: Rig, session_id: str, turn: int, viewer: Viewer, *, dry_run: bool, force: bool) -> dict[str, Any]:
    from toolrig.stores.checkpoints import Checkpoints
    from toolrig.stores.checkpoints import rewind as plan_rewind
    from toolrig.stores.checkpoints.rewind import apply

    try:
        plan = plan_rewind(rig.workspace, session_id, turn, force=force, dry_run=True)
    except ToolError as exc:
        raise _refused(exc) from None
    shown = _shown(plan, dry_run=dry_run, done=False)
    if dry_run:
        return shown
    if plan.lost or (plan.conflicts and not plan.forced):
        _audit(rig, plan, viewer, allowed=False)
        raise RewindRefused(409, plan.refusal(), {**shown, "error": plan.refusal()})
    try:
        apply(Checkpoints(rig.workspace), plan)
    except ToolError as exc:
        raise _refused(exc) from None
    _audit(rig, plan, viewer, allowed=True)
    return _shown(plan, dry_run=False, done=True)


def _shown(plan: RewindPlan, *, dry_run: bool, done: bool) -> dict[str, Any]:
    refused = bool(plan.lost or (plan.conflicts and not plan.forced))
    return {**plan.to_dict(), "dry_run": dry_run, "forced": plan.forced, "done": done, "would_refuse": refused}


def _refused(exc: ToolError) -> RewindRefused:
    status = {ErrorType.NOT_FOUND: 404, ErrorType.INVALID_INPUT: 422}.get(exc.error_type, 409)
    return RewindRefused(status, exc.message)


def _audit(rig: Rig, plan: RewindPlan, viewer: Viewer, *, allowed: bool) -> None:
    """One row: who, the session, the turn, the files (put back, removed, or the ones that refused it)."""
    audit = rig.governance.audit
    if audit is None:
        return
    who = viewer.user or "the operator"
    files = [*plan.restored, *plan.removed] if allowed else [c.path for c in [*plan.conflicts, *plan.lost]]
    args = {
        "user": viewer.user,
        "turn": plan.turn,
        "force": plan.forced,
        "restored": plan.restored,
        "removed": plan.removed,
        "conflicts": [c.path for c in plan.conflicts],
        "not_kept": [c.path for c in plan.lost],
    }
    verb = "rewound" if allowed else "refused: files changed since"
    try:
        audit.record_action(
            tool="rewind",
            session=plan.session_id,
            origin="web",
            rule=RULE,
            approval=f"{verb} (to before turn {plan.turn}, by {who})",
            args=args,
            subjects=files,
            allowed=allowed,
        )
    except Exception:  # the files are back (or untouched); a full disk does not turn that into an error
        log.exception("gateway: could not audit the rewind of session %s", plan.session_id)
